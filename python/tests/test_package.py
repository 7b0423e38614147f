"""The package builds from the source tree and installs into a fresh virtual environment,
where it imports with nothing but what the wheel brings (the bundled libgridjit and the
libraries it links).

Builds with the scikit-build-core of the running environment (no build isolation, so
no network): install it with `pip install './python[test]'`. Skipped (with the reason)
without scikit-build-core, CMake >= 3.25 or the CUDA headers, or with
GRIDJIT_SKIP_BUILD_TEST=1. GRIDJIT_TEST_BUILD_DIR keeps CMake's build directory between
runs (a rebuild then takes seconds).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

PYTHON_DIR = REPO / "python"


def _skip_reason():
    if os.environ.get("GRIDJIT_SKIP_BUILD_TEST") == "1":
        return "GRIDJIT_SKIP_BUILD_TEST=1"
    try:
        import scikit_build_core  # noqa: F401
    except ImportError:
        return "scikit-build-core is not installed (pip install './python[test]')"
    cmake = shutil.which("cmake")
    if not cmake:
        return "cmake is not on PATH"
    version = re.search(r"(\d+)\.(\d+)", subprocess.run([cmake, "--version"], capture_output=True, text=True).stdout)
    if not version or (int(version[1]), int(version[2])) < (3, 25):
        return "CMake >= 3.25 is needed"
    cuda_home = os.environ.get("CUDA_PATH") or os.environ.get("CUDA_HOME") or "/usr/local/cuda"
    if not (Path(cuda_home) / "include" / "cuda.h").is_file():
        return f"the CUDA toolkit's headers are not in {cuda_home}/include (needed at build time only)"
    # The library's own build dependencies (the GPU machine, for one, has the runtime
    # libraries but not these development headers).
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    for header, package in (("cjson/cJSON.h", "libcjson-dev"), ("xxhash.h", "libxxhash-dev")):
        probe = subprocess.run([compiler, "-fsyntax-only", "-x", "c", "-"], input=f"#include <{header}>\n",
                               capture_output=True, text=True) if compiler else None
        if probe is None or probe.returncode != 0:
            return f"cannot build libgridjit here: <{header}> is not installed ({package})"
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    build_dir = os.environ.get("GRIDJIT_TEST_BUILD_DIR") or str(tmp_path_factory.mktemp("cmake-build"))
    command = [
        sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", str(out),
        "-C", f"build-dir={build_dir}", str(PYTHON_DIR),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (path,) = out.glob("gridjit-*.whl")
    return path


def test_wheel_is_pure_python_plus_the_library(wheel):
    # py3-none: no CPython extension, one wheel for every Python 3.
    assert re.fullmatch(r"gridjit-\d+\.\d+\.\d+-py3-none-linux_\w+\.whl", wheel.name), wheel.name
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "gridjit/__init__.py",
        "gridjit/_capi.py",
        "gridjit/core.py",
        "gridjit/torch.py",
        "gridjit/_torch_launch.py",
        "gridjit/lib/libgridjit.so.0",
        "gridjit/lib/libcjson.so.1",
        "gridjit/lib/libxxhash.so.0",
        "gridjit/include/gridjit.h",
        "gridjit/bin/gridjit",
    ):
        assert required in names, required
    assert not [n for n in names if n.endswith(".a") or "/cmake/" in n or "pkgconfig" in n]
    assert not [n for n in names if re.search(r"\.cpython-|\.abi3\.", n)]
    # The console script: pip puts a `gridjit` command into the environment's bin/.
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert re.search(r"^\[console_scripts\]\s*$", text, re.M), text
    assert re.search(r"^gridjit\s*=\s*gridjit\.__main__:main\s*$", text, re.M), text


def test_installs_and_runs_in_a_fresh_venv(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    # Nothing of this process's environment that could point at another gridjit.
    clean_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)],
        capture_output=True, text=True, timeout=300, env=clean_env,
    )
    assert install.returncode == 0 and "Successfully installed gridjit" in install.stdout, install.stderr
    code = (
        "import gridjit, os\n"
        "package = os.path.dirname(gridjit.__file__)\n"
        "assert gridjit.library_path == os.path.join(package, 'lib', 'libgridjit.so.0'), gridjit.library_path\n"
        "enc = gridjit.Encoding({'otype': 'HashGrid', 'n_levels': 4}, 2)\n"
        "assert enc.n_output_dims == 8 and '__global__' in enc.generate()\n"
        "maps = open('/proc/self/maps').read()\n"
        "for dep in ('libcjson.so.1', 'libxxhash.so.0'):\n"
        "    paths = {line.split()[-1] for line in maps.splitlines() if line.endswith(dep)}\n"
        "    assert paths == {os.path.join(package, 'lib', dep)}, paths  # the bundled copy\n"
        "print(gridjit.__version__)\n"
    )
    run = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=clean_env, timeout=120)
    assert run.returncode == 0, run.stderr
    import gridjit

    assert run.stdout.strip() == gridjit.version_string()
    cli = subprocess.run([str(python), "-m", "gridjit", "--version"], capture_output=True, text=True, env=clean_env)
    assert cli.returncode == 0 and cli.stdout.startswith("gridjit "), cli.stderr
    # The `gridjit` command of the environment's bin/, found on PATH as after `pip install`.
    on_path = dict(clean_env, PATH=f"{env_dir / 'bin'}{os.pathsep}{clean_env['PATH']}")
    command = subprocess.run(["gridjit", "--version"], capture_output=True, text=True, env=on_path, timeout=60)
    assert command.returncode == 0 and command.stdout == cli.stdout, command.stderr
    assert shutil.which("gridjit", path=on_path["PATH"]) == str(env_dir / "bin" / "gridjit")
    torch_probe = subprocess.run(
        [str(python), "-c", "import gridjit.torch"], capture_output=True, text=True, env=clean_env
    )
    assert torch_probe.returncode != 0 and "gridjit.torch needs PyTorch" in torch_probe.stderr
