"""Without torch, `import gridjit.torch` fails with an ImportError that says torch is
needed (checked in a fresh interpreter where `import torch` fails, so it runs whether or
not torch is installed)."""

from __future__ import annotations

from conftest import run_python


def test_without_torch_the_import_error_says_torch_is_needed():
    # A fresh interpreter in which `import torch` fails, whether or not torch is installed.
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"
        "import gridjit\n"
        "try:\n"
        "    import gridjit.torch\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
        "else:\n"
        "    raise SystemExit('gridjit.torch imported without torch')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert "gridjit.torch needs PyTorch" in result.stdout and "pip install torch" in result.stdout
