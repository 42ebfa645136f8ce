"""`python -m builders ...`: the `builders` command, for an environment whose scripts folder is not on PATH."""

import sys

from builders.cli import main

sys.exit(main())
