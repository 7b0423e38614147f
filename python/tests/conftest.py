"""Shared set-up of the gridjit Python tests.

The package under test is whatever `import gridjit` finds: an installed package, or a
`pip install --target DIR ./python` tree on PYTHONPATH. The tests never import
python/src directly (it has no library), except with GRIDJIT_LIBRARY set.

Every C function the bindings declare is wrapped here with a call counter, so that
test_zz_bindings.py can check at the end of a full run that each one was exercised.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]  # python/tests -> repository root
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import gridjit  # noqa: E402
from gridjit import _capi  # noqa: E402

#: C function name -> number of calls in this session.
CALLS: Counter = Counter()


class _Counted:
    """A ctypes function with a call counter; everything else is delegated."""

    def __init__(self, name, fn):
        self._name, self._fn = name, fn

    def __call__(self, *args):
        # At interpreter exit the module's globals may already be gone (a __del__ that
        # runs late): count only while the counter is there.
        if CALLS is not None:
            CALLS[self._name] += 1
        return self._fn(*args)

    def __getattr__(self, attr):
        return getattr(self._fn, attr)


for _name in _capi.BOUND_FUNCTIONS:
    setattr(_capi.lib, _name, _Counted(_name, getattr(_capi.lib, _name)))


def nvrtc_available() -> bool:
    try:
        gridjit.Context().nvrtc_version()
        return True
    except gridjit.NoNvrtcError:
        return False


needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC (libnvrtc) is not available here")


def c_compiler():
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def installed_header() -> Path:
    """The configured gridjit.h: bundled in the package, or beside GRIDJIT_LIBRARY's build."""
    bundled = Path(gridjit.__file__).resolve().parent / "include" / "gridjit.h"
    if bundled.is_file():
        return bundled
    return Path(gridjit.library_path).resolve().parent / "include" / "gridjit.h"


def installed_tool():
    """The gridjit command-line tool beside this package: bundled (bin/gridjit), or in the
    CMake build whose library GRIDJIT_LIBRARY names; None when neither is there."""
    for tool in (Path(gridjit.__file__).resolve().parent / "bin" / "gridjit",
                 Path(gridjit.library_path).resolve().parent / "gridjit"):
        if tool.is_file() and os.access(tool, os.X_OK):
            return tool
    return None


@pytest.fixture
def context(tmp_path):
    """A fresh context with its own cache directory (tmp_path/cache)."""
    ctx = gridjit.Context()
    ctx.set_cache_dir(str(tmp_path / "cache"))
    ctx.set_cache_path("")
    yield ctx
    ctx.close()


#: Why the GPU tests of gridjit.torch skip on this machine.
NO_CUDA = "no CUDA device: torch.cuda.is_available() is False (these tests run on a GPU machine)"


def torch_or_skip(needs_cuda: bool = False):
    """(gridjit.torch, torch) for a test module, else skips the whole module, visibly: with
    the ImportError's message (gridjit.torch says that torch is needed), or, with
    needs_cuda, with NO_CUDA. The skip is reported at the caller's line (the frame is hidden)."""
    __tracebackhide__ = True
    try:
        import gridjit.torch as gjt  # without torch: ImportError saying torch is needed
        import torch
    except ImportError as exc:
        pytest.skip(str(exc), allow_module_level=True)
    if needs_cuda and not torch.cuda.is_available():
        pytest.skip(NO_CUDA, allow_module_level=True)
    return gjt, torch


def eager_copy(make, model, optimizer):
    """A fresh (model, optimizer) from make() holding model's parameters and a deep copy of
    optimizer's state, for running eagerly beside a CUDA graph that trains model. A deep
    copy because Optimizer.load_state_dict keeps the very tensors it is given (Tensor.to
    without a change of device or dtype): the graph's replays would otherwise advance the
    copy's moments and step count too."""
    import copy

    eager_model, eager_optimizer = make()
    eager_model.load_state_dict(model.state_dict())
    eager_optimizer.load_state_dict(copy.deepcopy(optimizer.state_dict()))
    for mine, theirs in zip(optimizer.state.values(), eager_optimizer.state.values()):
        for a, b in zip(mine.values(), theirs.values()):
            assert a.data_ptr() != b.data_ptr(), "the eager optimizer shares state with the graph's"
    return eager_model, eager_optimizer


def run_python_args(*args: str, env_update=None, **kwargs) -> subprocess.CompletedProcess:
    """Runs `python ARGS...` in a fresh interpreter with this process's sys.path (PYTHONPATH)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.update(env_update or {})
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=300, **kwargs)


def run_python(code: str, env_update=None, **kwargs) -> subprocess.CompletedProcess:
    """Runs code in a fresh interpreter with this process's sys.path (PYTHONPATH)."""
    return run_python_args("-c", code, env_update=env_update, **kwargs)


def pytest_report_header(config):
    lines = [f"gridjit {gridjit.__version__} from {gridjit.library_path}"]
    try:
        import torch

        lines.append(f"torch {torch.__version__}, CUDA available: {torch.cuda.is_available()}")
    except ImportError:
        lines.append("torch: not installed (gridjit.torch tests skip)")
    return lines
