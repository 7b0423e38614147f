"""`python -m gridjit ARGS...` runs the gridjit command-line tool bundled in the package
(bin/gridjit; `python -m gridjit --help` lists its commands, docs/cli.md documents them)."""

import os
import sys
from pathlib import Path


def main() -> None:
    tool = Path(__file__).resolve().parent / "bin" / "gridjit"
    if not tool.is_file():
        sys.exit(f"gridjit: the command-line tool is not bundled here ({tool}); install the package with pip")
    os.execv(str(tool), [str(tool), *sys.argv[1:]])


if __name__ == "__main__":
    main()
