"""`python -m kenning`: the `kenning` command (kenning.surfaces.entry), for an interpreter whose
scripts folder is not on PATH, or to be sure which Python runs it."""

import sys

from kenning.surfaces.entry import main

if __name__ == "__main__":
    sys.exit(main())
