"""Runs last (file order): every C function the bindings declare was called by the
tests of this session (conftest.py counts the calls)."""

from __future__ import annotations

import pytest

import gridjit
from conftest import CALLS, HERE

#: Test files that, together, call every bound function (on the CPU the runtime entries
#: are reached through the NULL-module tests of test_core and test_network; on a GPU
#: through real launches).
REQUIRED_FILES = {"test_core.py", "test_capi.py", "test_network.py"}


def test_every_bound_function_was_called(request):
    session = request.session
    collected = {item.path.name for item in session.items}
    if request.config.getoption("keyword") or request.config.getoption("markexpr"):
        pytest.skip("tests were selected with -k or -m: not every binding ran")
    if not REQUIRED_FILES <= collected:
        pytest.skip(f"run the whole directory ({HERE}) to check that every binding is exercised")
    if session.testsfailed:
        pytest.skip("earlier tests failed: their calls may be missing")
    missing = sorted(name for name in gridjit.BOUND_FUNCTIONS if CALLS[name] == 0)
    assert not missing, f"C functions bound but never called by the tests: {missing}"
    assert len(gridjit.BOUND_FUNCTIONS) == len(set(gridjit.BOUND_FUNCTIONS))
