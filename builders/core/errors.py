"""The one exception type for user mistakes (bad input, bad options).

The CLI turns a `BuildError` into a one-line message and exit code 2; anything else is a bug
and keeps its traceback.
"""


class BuildError(Exception):
    """Bad input or options: the message names the file, the value and what was expected."""
