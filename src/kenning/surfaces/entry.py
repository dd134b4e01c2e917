"""The `kenning` command: a warm server answers when one serves this index (kenning.surfaces.client),
otherwise the command runs here (kenning.surfaces.cli). Kept to the standard library so a
forwarded command does not pay for loading the engine."""

from __future__ import annotations

import sys


def main() -> int:
    from kenning.surfaces.client import forward

    argv = sys.argv[1:]
    code = forward(argv)
    if code is None:
        from kenning.surfaces.cli import main as run_here

        code = run_here(argv)
    return code


if __name__ == "__main__":
    sys.exit(main())
