"""python/benchmarks/tcnn_scripts.py's one change to tiny-cuda-nn's scripts (the import line)
and its handling of a stopped script: no GPU, no torch, no tinycudann needed."""

from __future__ import annotations

import importlib.util
import sys

from conftest import REPO

_spec = importlib.util.spec_from_file_location("tcnn_scripts", REPO / "python" / "benchmarks" / "tcnn_scripts.py")
tcnn_scripts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tcnn_scripts)


def test_only_the_import_lines_change():
    text = (
        "import torch\n"
        "import tinycudann as tcnn\n"
        "try:\n"
        "\timport tinycudann as tcnn\n"
        "except ImportError:\n"
        "    pass\n"
        "# import tinycudann as tcnn in a comment stays\n"
        "x = 'import tinycudann as tcnn'\n"
        "import tinycudann\n"
    )
    new, n = tcnn_scripts.rewrite_import(text)
    assert n == 2
    assert new.splitlines() == [
        "import torch",
        "import gridjit.torch as tcnn",
        "try:",
        "\timport gridjit.torch as tcnn",
        "except ImportError:",
        "    pass",
        "# import tinycudann as tcnn in a comment stays",
        "x = 'import tinycudann as tcnn'",
        "import tinycudann",
    ]


def test_prepare_copies_the_tree_and_rewrites_for_gridjit_only(tmp_path):
    src = tmp_path / "tcnn"
    for part, name, text in [("scripts", "a.py", "import tinycudann as tcnn\n"), ("samples", "b.py", "x = 1\n"),
                             ("data", "c.json", "{}\n")]:
        (src / part).mkdir(parents=True)
        (src / part / name).write_text(text)
    for package, expected in (("tinycudann", 0), ("gridjit", 1)):
        dest = tmp_path / package
        dest.mkdir()
        assert tcnn_scripts.prepare(src, dest, package) == expected
        assert (dest / "data" / "c.json").read_text() == "{}\n"
        assert (dest / "samples" / "b.py").read_text() == "x = 1\n"
    assert (tmp_path / "gridjit" / "scripts" / "a.py").read_text() == "import gridjit.torch as tcnn\n"
    assert (tmp_path / "tinycudann" / "scripts" / "a.py").read_text() == "import tinycudann as tcnn\n"


def test_a_script_past_its_time_is_stopped_with_sigterm_and_reports(tmp_path):
    script = tmp_path / "slow.py"
    script.write_text(
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: (print('Step#stopped', flush=True), sys.exit(0)))\n"
        "print('Step#0', flush=True)\n"
        "time.sleep(60)\n"
    )
    r = tcnn_scripts.run([sys.executable, str(script)], tmp_path, {}, 2.0)
    assert r["status"] is None
    assert r["lines"] == ["Step#0", "Step#stopped"]
    done = tcnn_scripts.run([sys.executable, "-c", "print('success!'); raise SystemExit(3)"], tmp_path, {}, 30)
    assert done["status"] == 3 and done["lines"] == ["success!"]
