"""`python -m harness ...`: the `harness` command, for an environment whose scripts folder is not on PATH."""

from harness.run.cli import entry

entry()
