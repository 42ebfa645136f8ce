"""Which task folders a command that reads a results folder may take code from: one rule, here, for `harness view`,
`harness report`, `harness merge` and every command to come that reads a results folder (`harness compare`: call
`trusted_task_folders` with its own `--include_path`s, or build its index with `trusted_task_index`).

A results folder may come from anyone. Its results files record the `--include_path`s of the runs that wrote them,
and a task folder holds Python: `!function` hooks run when its tasks are built or scored, report and viewer hooks
when its benchmark's sections are drawn. So such a command reads tasks from the installed task folders and the
`--include_path`s given on its own command line, and from nothing the folder names: a recorded folder that was not
given is named in one line (`harness merge: not read: the task folders the results files record (PATH); ...`) and
never indexed, so no YAML of it is read and no module of it imported.

    folders = trusted_task_folders("harness report", given=args.include_path, recorded=recorded_task_folders(models))
    index = trusted_task_index("harness merge", args.include_path, recorded)
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from harness.config.task_index import TaskIndex

WHY = (
    "a results folder may come from elsewhere, and a task folder holds code; {command} imports task code only from "
    "the installed task folders and the --include_path given on its own command line"
)


def recorded_task_folders(configs: Iterable[Mapping[str, object]]) -> list[str]:
    """The `--include_path`s the runs' `config`s record (untrusted text: only strings are kept), sorted."""
    found: set[str] = set()
    for config in configs:
        paths = config.get("include_path")
        if isinstance(paths, list):
            found.update(path for path in paths if isinstance(path, str))
    return sorted(found)


def untrusted_task_folders(given: Sequence[Path | str], recorded: Iterable[str]) -> list[str]:
    """The recorded folders that are none of those given (compared as written and resolved)."""
    given_text = {str(path) for path in given}
    given_resolved = {_resolved(path) for path in given}
    return sorted(path for path in set(recorded) if path not in given_text and _resolved(path) not in given_resolved)


def trusted_task_folders(
    command: str, given: Sequence[Path | str], recorded: Iterable[str], *, say: bool = True
) -> list[str]:
    """The task folders `command` may read besides the installed ones: exactly `given` (its `--include_path`s); the
    recorded ones left out are named in one line on stderr (unless `say` is False: the caller says it in its own
    line), with what to give to trust one."""
    left_out = untrusted_task_folders(given, recorded)
    if left_out and say:
        print(not_read_line(command, left_out), file=sys.stderr)
    return [str(path) for path in given]


def trusted_task_index(
    command: str, given: Sequence[Path | str], recorded: Iterable[str], *, say: bool = True
) -> TaskIndex:
    """The task index `command` may use: the installed task folders and `given`, never a recorded one."""
    return TaskIndex(trusted_task_folders(command, given, recorded, say=say))


def not_read_line(command: str, left_out: Sequence[str]) -> str:
    shown = ", ".join(left_out[:3]) + (f" and {len(left_out) - 3} more" if len(left_out) > 3 else "")
    return (
        f"{command}: not read: the task folders the results files record ({shown}); "
        f"{WHY.format(command=command)}: give `--include_path PATH` to {command} for a folder you trust"
    )


def _resolved(path: Path | str) -> str:
    try:
        return str(Path(path).resolve())
    except (OSError, RuntimeError, ValueError):  # a name the system refuses (a NUL), a loop of links
        return str(path)
