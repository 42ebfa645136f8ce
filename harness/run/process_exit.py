"""The `harness` command's exit: everything a clean exit does for the outside world, without the interpreter's
teardown.

Once torch and transformers are imported, CPython's teardown (clearing ~3,500 modules and the objects they hold,
torch's and tokenizers' native destructors) takes 0.5-1.3 s on this machine after the run's last result is written
(`bench/RESULTS.md`, "Beside lm-eval"), a tenth of a 100-row run. None of it reaches a file: the harness closes what
it writes (results, journals, the response cache) before `main` returns. So the command runs what a normal exit
runs that others can see (the `atexit` callbacks: logging's flush, Ray's shutdown, `weakref.finalize` cleanups,
multiprocessing's joins), flushes standard output and error, and ends the process there. Where something still
runs that a normal exit would wait for (a non-daemon thread, a child process), it exits the normal way.

`main()` itself returns its code and exits nothing: the Python API and the tests call it in-process. The command's
own process also says so before `main` runs, so that a backend's imports are frozen there
(`harness.models.shared.library_gc`), never a Python caller's.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn


def waits_on_something() -> bool:
    """True where a normal exit would wait: a live non-daemon thread (CPython joins them before `atexit`), or a
    live child process started by multiprocessing."""
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return True
    multiprocessing = sys.modules.get("multiprocessing")
    return bool(multiprocessing is not None and multiprocessing.active_children())


def exit_without_teardown(code: int) -> NoReturn:
    """End the process with `code` after the `atexit` callbacks and a flush of stdout and stderr, skipping the
    interpreter's teardown; the normal `sys.exit` where `waits_on_something()`."""
    if waits_on_something():
        sys.exit(code)
    atexit._run_exitfuncs()  # what `Py_FinalizeEx` runs once threads are joined; in typeshed, stable since 3.0
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # pythonw, or a caller that set it so
            continue
        try:
            stream.flush()
        except (OSError, ValueError):  # as CPython's own exit does when it cannot flush them: status 120
            code = code or 120
    os._exit(code)


def run_as_the_command(main: Callable[[], int]) -> NoReturn:
    """`main` run as the `harness` command's own process (`harness.models.shared.library_gc.in_the_command`), then
    `exit_without_teardown` with its code."""
    from harness.models.shared.library_gc import in_the_command

    in_the_command()
    exit_without_teardown(main())
