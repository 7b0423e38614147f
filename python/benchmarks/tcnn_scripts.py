#!/usr/bin/env python3
"""tiny-cuda-nn's own PyTorch scripts, run as they are for tinycudann and with only their
import line changed for gridjit: the drop-in check of docs/benchmarks.md §11.

    python3 python/benchmarks/tcnn_scripts.py --tcnn-src ~/tiny-cuda-nn --package gridjit
    python3 python/benchmarks/tcnn_scripts.py --tcnn-src ~/tiny-cuda-nn --package tinycudann --json t.json

--tcnn-src is a tiny-cuda-nn checkout (its scripts/, samples/ and data/; commit 6ee3546 was
used). They are copied into a scratch directory; for gridjit every line `import tinycudann as
tcnn` (at any indentation) becomes `import gridjit.torch as tcnn` and nothing else changes.
Then, each in its own process, from the copy's root:

  scripts/test_torch_bindings.py        a Network, two forwards, one backward ("success!")
  scripts/test_random_input.py          10 000 random batches (0.2-1 M points) through a
                                        3 -> 8 x 128 -> 256 Network; stopped after --seconds,
                                        its steps counted by a wrapper that wraps
                                        torch.Tensor.backward (the script is not touched)
  samples/mlp_learning_an_image_pytorch.py data/images/albert.jpg data/config_hash.json STEPS
                                        a NetworkWithInputEncoding fitting the image with
                                        torch's Adam (--image-steps, default 2001)

and prints each one's exit status and the lines that tell how it went ("success!", "Step#...",
"JIT fusion ..."), and the step rate of the second. Where Python lacks `commentjson` (which
the sample imports to read its JSON), a stand-in that strips // and /* */ comments is put on
the path of that run only. Exit status: 0 when every script exited 0 (the stopped one counts
when it was stopped, not failed), 1 otherwise; 2 on a bad argument.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

IMPORT = re.compile(r"^([ \t]*)import tinycudann as tcnn[ \t]*$", re.M)

#: Runs a script as it is (runpy) and counts its backward() calls, also when stopped (SIGTERM).
COUNTER = '''import runpy, signal, sys, time, atexit, torch
calls, start = [0], [None]
_backward = torch.Tensor.backward
def backward(self, *args, **kwargs):
    if start[0] is None:
        start[0] = time.perf_counter()
    calls[0] += 1
    return _backward(self, *args, **kwargs)
torch.Tensor.backward = backward
def report():
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start[0] if start[0] else 0.0
    rate = (calls[0] - 1) / seconds if seconds > 0 else 0.0
    print(f"[tcnn_scripts] {calls[0]} backward calls in {seconds:.1f} s ({rate:.1f}/s)", flush=True)
atexit.register(report)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
'''

COMMENTJSON = '''"""Stand-in for commentjson (tcnn_scripts.py): JSON with // and /* */ comments."""
import json, re
def _strip(text):
    return re.sub(r"//[^\\n]*|/\\*.*?\\*/", "", text, flags=re.S)
def loads(text, **kwargs):
    return json.loads(_strip(text), **kwargs)
def load(f, **kwargs):
    return loads(f.read(), **kwargs)
'''

#: The lines of a script's output worth reporting.
TELLING = re.compile(r"success!|Step#|JIT fusion|\[tcnn_scripts\]|Error|error:")


def rewrite_import(text: str) -> tuple[str, int]:
    """text with each `import tinycudann as tcnn` line (any indentation) importing
    gridjit.torch as tcnn instead, and how many lines changed."""
    return IMPORT.subn(lambda m: f"{m.group(1)}import gridjit.torch as tcnn", text)


def prepare(src: Path, dest: Path, package: str) -> int:
    """Copies scripts/, samples/ and data/ of src into dest; for gridjit rewrites the imports.
    Returns the number of import lines rewritten."""
    for part in ("scripts", "samples", "data"):
        shutil.copytree(src / part, dest / part)
    changed = 0
    if package == "gridjit":
        for path in sorted(dest.glob("scripts/*.py")) + sorted(dest.glob("samples/*.py")):
            text, n = rewrite_import(path.read_text())
            if n:
                path.write_text(text)
                changed += n
    return changed


def run(cmd: list[str], cwd: Path, env: dict, seconds: float) -> dict:
    """cmd's exit status (None when stopped after `seconds`: SIGTERM, so that the counter
    reports; SIGKILL 30 s later) and its telling output lines."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=seconds)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        status = None
    lines = [line for line in out.splitlines() if TELLING.search(line)]
    return {"command": " ".join(cmd), "status": status, "lines": lines, "tail": out.splitlines()[-5:]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tcnn-src", required=True, type=Path, help="a tiny-cuda-nn checkout")
    parser.add_argument("--package", required=True, choices=("gridjit", "tinycudann"))
    parser.add_argument("--seconds", type=float, default=30.0, help="test_random_input.py's time (default 30)")
    parser.add_argument("--image-steps", type=int, default=2001, help="the sample's training steps (default 2001)")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    if not (args.tcnn_src / "scripts" / "test_torch_bindings.py").is_file():
        parser.error(f"--tcnn-src: {args.tcnn_src} has no scripts/test_torch_bindings.py (a tiny-cuda-nn checkout?)")

    with tempfile.TemporaryDirectory(prefix="tcnn_scripts_") as scratch:
        root = Path(scratch) / "tiny-cuda-nn"
        root.mkdir()
        changed = prepare(args.tcnn_src, root, args.package)
        (root / "count_backward.py").write_text(COUNTER)
        env = dict(os.environ)
        try:
            import commentjson  # noqa: F401
        except ImportError:
            shim = Path(scratch) / "shim"
            shim.mkdir()
            (shim / "commentjson.py").write_text(COMMENTJSON)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(shim)]))
        py = sys.executable
        results = {
            "package": args.package,
            "imports_rewritten": changed,
            "test_torch_bindings": run([py, "scripts/test_torch_bindings.py"], root, env, 300),
            "test_random_input": run([py, "count_backward.py", "scripts/test_random_input.py"], root, env,
                                     args.seconds),
            "mlp_learning_an_image": run([py, "samples/mlp_learning_an_image_pytorch.py", "data/images/albert.jpg",
                                          "data/config_hash.json", str(args.image_steps), "result.jpg"], root, env,
                                         600),
        }
    ok = True
    print(f"{args.package}: {changed} import lines rewritten")
    for name in ("test_torch_bindings", "test_random_input", "mlp_learning_an_image"):
        r = results[name]
        stopped_ok = name == "test_random_input" and r["status"] is None
        ok = ok and (r["status"] == 0 or stopped_ok)
        print(f"  {name}: exit {'stopped after the time given' if r['status'] is None else r['status']}")
        for line in r["lines"] or r["tail"]:
            print(f"    {line}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
