"""Errors the CLI turns into a one-line message: exit code 2 for user mistakes and bad input files, 1 for an
output that cannot be written or results a service would not take; and the declared options of a command, whose bad
value is such an error (`CommandOptions`)."""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from builders.core.contract import DeclaredOptions, OneLineParser, option


class UserError(Exception):
    """A mistake in arguments, task files or data that the user can fix; no traceback is shown."""


class CommandParser(OneLineParser):
    """The parser of a `harness` command: a mistake is a `UserError`, one line `harness: error: REASON` (a subcommand's
    naming its `--help`), not argparse's usage before the reason."""

    mistake = UserError


@dataclass(frozen=True, kw_only=True)
class CommandOptions(DeclaredOptions):
    """The declared options of a `harness` command (`builders.core.contract.options`): a bad value is a `UserError`,
    a flag is `--name`."""

    error: ClassVar[Callable[[str], Exception]] = UserError


# What a reader's `--include_path` help adds: the task folders a results file names are data, not code to run.
RECORDED_NOT_READ = (
    "the --include_path a results file records is never read, since a results folder may come from elsewhere"
)


def include_path_option(help: str, **kwargs: Any) -> Any:
    """`--include_path DIR` (repeatable), as every command declares it: folders (or YAML files) of tasks read after
    the installed ones (`harness.config.task_index.TaskIndex`)."""
    return option((), help, parse=Path, repeat=True, **kwargs)


class UploadError(UserError):
    """The results could not be sent to a service (the Hub, Weights & Biases); they are saved locally (exit code 1)."""

    exit_code = 1


def first_line(err: BaseException) -> str:
    """An exception's message cut to its first line (its type's name when it has none), for a one-line error."""
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


class OutputError(UserError):
    """A file the run must write cannot be written (a read-only or full disk, `ulimit -f`): one line naming the
    file and the system's reason, exit code 1 (`harness.file_writing`)."""

    exit_code = 1

    def __init__(self, path: object, err: BaseException) -> None:
        where = getattr(err, "filename", None) or path
        reason = getattr(err, "strerror", None) or str(err) or type(err).__name__
        super().__init__(f"cannot write {where}: {reason}")
        self.path = where


class TaskConfigError(UserError):
    """A task or group YAML that cannot be used; the message starts with `file:line:`."""


class DatasetMissingError(UserError):
    """A task's dataset exists in none of the places the harness looks.

    `reason` is the message without the build hint; `builder_command` (a template with
    `{dataset_name}` and `{data_dir}`), `dataset_name` and `data_dir` let the CLI name one build
    command for every missing config of a run. `held` is (the build's location, the configs its manifest
    lists), said once for all the tasks of a run that read that build.
    """

    def __init__(
        self,
        reason: str,
        hint: str = "",
        *,
        builder_command: str | None = None,
        dataset_name: str | None = None,
        data_dir: str | None = None,
        held: tuple[str, str] | None = None,
    ) -> None:
        super().__init__(reason + (f" (its build manifest lists {held[1]})" if held else "") + hint)
        self.reason = reason
        self.held = held
        self.builder_command = builder_command
        self.dataset_name = dataset_name
        self.data_dir = data_dir

    @staticmethod
    def combined(errors: list[DatasetMissingError]) -> str:
        """One message for every task whose data is missing, with one build command per builder; a Hub build
        that cannot be had is named once, however many tasks read it."""
        if len(errors) == 1:
            return str(errors[0])
        hub = [e for e in errors if isinstance(e, HubUnavailableError)]
        local = [e for e in errors if not isinstance(e, HubUnavailableError)]
        readers = Counter(e.reason for e in hub)
        lines = list(
            dict.fromkeys(
                f"cannot get {e.location} (read by {readers[e.reason]} task"
                f"{'' if readers[e.reason] == 1 else 's'}): {e.why}"
                for e in hub
            )
        )
        shared = not hub and len({e.reason for e in local}) == 1  # a --data_dir that does not exist: one line
        if shared:
            lines.append(f"{local[0].reason} (read by {len(local)} tasks)")
        elif local:
            counts = Counter(e.reason for e in local)  # in the order first met
            lines += [f"{len(local)} tasks have no data:"] + [
                f"  {reason}" + (f" ({n} tasks)" if n > 1 else "") for reason, n in counts.items()
            ]
            lines += [
                f"the build manifest of {location} lists: {configs}"
                for location, configs in dict.fromkeys(e.held for e in local if e.held)
            ]
        for group, lead, tail in (
            (local, "build them with: ", ""),
            (hub, "or build them here: ", ", and pass --data_dir {data_dir}"),
        ):
            commands: dict[tuple[str, str], list[str]] = {}
            for e in group:
                if e.builder_command and e.dataset_name:
                    names = commands.setdefault((e.builder_command, e.data_dir or "DATA_DIR"), [])
                    if e.dataset_name not in names:
                        names.append(e.dataset_name)
            for (template, data_dir), names in commands.items():
                lines.append(
                    lead
                    + template.format(dataset_name=" ".join(names), data_dir=data_dir)
                    + tail.format(data_dir=data_dir)
                )
        return "; ".join(lines) if shared else "\n".join(lines)


class HubUnavailableError(DatasetMissingError):
    """A Hub build (`--data_dir hf://...`) that cannot be fetched: offline, no network, no such repo or
    revision. `reason` is the same for every task that reads it, so the run says it once; the hint builds the
    data locally instead (`data_dir` is that local folder)."""

    def __init__(
        self, location: str, why: str, *, builder_command: str | None, dataset_name: str | None, data_dir: str
    ) -> None:
        hint = ""
        if builder_command:
            command = builder_command.format(dataset_name=dataset_name or "", data_dir=data_dir)
            hint = f"; or build it here: {command}, and pass --data_dir {data_dir}"
        super().__init__(
            f"cannot get {location}: {why}",
            hint,
            builder_command=builder_command,
            dataset_name=dataset_name,
            data_dir=data_dir,
        )
        self.location = location
        self.why = why


def known_names(given: Iterable[str] | None, known: Iterable[str], flag: str, what: str) -> None:
    """Refuse in one line the first of `given` (a flag's names) that is none of `known` (what there was to pick from),
    naming the closest, or where none is close the few there are: `--metrics exact_accc: unknown metric 'exact_accc';
    did you mean: exact_acc?`."""
    known = sorted(set(known))
    for name in given or ():
        if name not in known:
            there = "" if close_names(name, known) or len(known) > 20 else f" (there are: {', '.join(known)})"
            raise UserError(f"{flag} {name}: {suggest(name, known, what)}{there}")


def close_names(name: str, known: Iterable[str]) -> list[str]:
    """difflib's closest of `known` to `name`, best first (none where none is close)."""
    return difflib.get_close_matches(name, sorted(set(known)), n=5, cutoff=0.6)


def suggest(name: str, known: Iterable[str], what: str) -> str:
    """`unknown task 'x'; did you mean: a, b?` with difflib's closest known names."""
    close = close_names(name, known)
    if close:
        return f"unknown {what} {name!r}; did you mean: {', '.join(close)}?"
    return f"unknown {what} {name!r}"


def close_path(path: Path, fits: Callable[[Path], bool]) -> Path | None:
    """The path a typo meant: of the entries beside `path` (which does not exist), the one whose name is closest to
    its name (`close_names`) among those that `fits` what was asked for (a folder of builds, of tasks, a checkpoint, a
    results folder), written as `path` was (relative where it was); None where none is close. One rule for every
    path a user types: `--data_dir dta` finds `data`, never a folder that merely exists."""
    try:
        beside = [entry.name for entry in path.parent.iterdir()] if path.parent.is_dir() else []
    except OSError:  # a parent that cannot be listed: nothing to suggest
        return None
    for name in close_names(path.name, beside):
        try:
            if fits(path.parent / name):
                return path.parent / name
        except OSError:
            continue
    return None


def did_you_mean_path(path: Path, fits: Callable[[Path], bool]) -> str:
    """`; did you mean data?` for `close_path`'s answer, or nothing."""
    close = close_path(path, fits)
    return f"; did you mean {close}?" if close is not None else ""
