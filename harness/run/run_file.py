"""`harness --config FILE`: a run's flags in a YAML file, as lm-eval's `run --config` and lmms-eval's `--config` take
theirs (lm-eval's docs/config_files.md: "All configuration keys correspond directly to CLI arguments", and "CLI
arguments override config file values").

Each key is a flag of the run without its dashes (`model_args`, `log_samples`), and its value is read by that flag's
own declaration (`harness.run.declared_options`), as `simple_evaluate` reads the flag's keyword: `tasks` a list of names
or their comma-separated text, `model_args` and `gen_kwargs` a mapping or their `k=v` text, a switch `true` or
`false`, `null` as if the key were absent. A flag given on the command line replaces the file's value whole. Paths
are read from the current folder, as the same flags on the command line (and lm-eval's and lmms-eval's files) are.
A file may hold a list of runs, lmms-eval's batch file (its `configs/example_batch.yaml`): each is run in turn, as
lmms-eval runs them, with the command line's flags over each, every entry checked before the first starts. lmms-eval's `env:` section (its example files
have one) sets environment variables for the run before anything reads them, each value with `${VAR}` and
`${VAR:-default}` taken from the environment as lmms-eval takes them (`run_environment`); a line on stderr names the
variables set, never their values. A mistake is one line naming the file, the key's line and the key (exit 2). The results record the file (`config.run_file`: its path and its contents, every secret
redacted); the secrets it holds are registered as it is read, so no message shows one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from builders.core.contract import default_of, flag_of
from harness.errors import TaskConfigError, UserError, suggest
from harness.run.declared_options import DeclaredOptions, declared

if TYPE_CHECKING:
    from harness.outputs.results.results_file import RunFileRecord

SCALARS = (str, int, float)  # a value the command line gives as text (bool is an int: kept for switches)


@dataclass(frozen=True)
class RunFile:
    """A run file, read: the options it gives (each read by its declaration) and what the results record of it."""

    path: Path
    values: dict[str, object]  # option name -> its value, read as its keyword is
    record: RunFileRecord  # its path and its contents, every secret redacted
    environment: dict[str, str] = field(default_factory=dict)  # its `env:` section, expanded


def read_run_files(path: Path, options: type[DeclaredOptions]) -> list[RunFile]:
    """The runs the file at `path` gives: its one run, or each of its list's (lmms-eval's batch file), in order, each
    key one of `options` and its value read by that option's declaration; a mistake is a one-line `UserError` naming
    the file (and the key's line, or the run's place in the list)."""
    from harness.config.yaml_loader import read_yaml

    try:
        data = read_yaml(path, "a run file")
    except TaskConfigError as err:
        raise UserError(str(err)) from None
    if not isinstance(data, list):
        return [_read_run(path, data, options, "")]
    if not data:
        raise UserError(f"{path}: an empty list: expected the runs' flags (- tasks: ..., model: ...)")
    return [_read_run(path, run, options, f" (run {i} of {len(data)})") for i, run in enumerate(data, 1)]


def read_run_file(path: Path, options: type[DeclaredOptions]) -> RunFile:
    """The one run the file at `path` gives (a list of several is refused in one line: `read_run_files` reads it)."""
    runs = read_run_files(path, options)
    if len(runs) > 1:
        raise UserError(f"{path}: a list of {len(runs)} runs, where one run is read here")
    return runs[0]


def _read_run(path: Path, data: object, options: type[DeclaredOptions], which: str) -> RunFile:
    from harness.config.yaml_loader import YamlDict
    from harness.redact import collect_secrets, command_line_secrets, register

    if not isinstance(data, YamlDict) or not data:
        got = "nothing" if data is None or data == {} else _kind(data)
        raise UserError(f"{path}{which}: expected a mapping of the run's flags (tasks: ..., model: ...), got {got}")
    # Before any value is read: no message about one shows a key the file holds.
    register(collect_secrets(data, {}) + command_line_secrets(str(v) for v in data.values() if isinstance(v, str)))
    known = {item.name: item for item in declared(options)}
    values: dict[str, object] = {}
    environment = run_environment(data["env"], data.where("env")) if "env" in data else {}
    for key, value in data.items():
        if key == "env":
            continue
        if key not in known:
            raise UserError(f"{data.where(key)}: {suggest(str(key), known, 'key')} (see harness --help)")
        if value is not None:
            values[key] = _value(options, known[key], value, data.where(key))
    record: RunFileRecord = {"path": str(path.resolve()), "contents": _recorded(data, known)}
    return RunFile(path, values, record, environment)


# `${VAR}` and `${VAR:-default}` in an `env:` value: the variable's value, else (with `:-`, where it is unset or empty)
# the default, else nothing, as lmms-eval's config files expand them (its v0.7 notes, "Env expansion")
REFERENCE = re.compile(r"\$\{([A-Za-z_]\w*)(?::-([^}]*))?\}")


def run_environment(section: object, where: str) -> dict[str, str]:
    """lmms-eval's `env:` section as the variables it sets, each value expanded; one line for what is not one."""
    if not isinstance(section, Mapping):
        raise UserError(
            f"{where}: env: expected a mapping of environment variables (NAME: value), got {_kind(section)}"
        )
    expanded: dict[str, str] = {}
    for name, value in section.items():
        if not (isinstance(name, str) and re.fullmatch(r"[A-Za-z_]\w*", name)):
            raise UserError(f"{where}: env: {str(name)[:60]!r} is not an environment variable's name")
        if not isinstance(value, SCALARS) or isinstance(value, bool):
            raise UserError(f"{where}: env: {name}: expected text or a number, got {_kind(value)}")
        expanded[name] = REFERENCE.sub(lambda m: os.environ.get(m[1]) or m[2] or "", str(value))
    return expanded


def _value(options: type[DeclaredOptions], item: Field[object], value: object, where: str) -> object:
    """`value` as the option `item` reads it, or the one line naming the file, line and key."""
    problem = _shape_problem(item, value)
    if problem:
        raise UserError(f"{where}: {item.name}: {problem}")
    if not flag_of(item).switch and isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)  # `device: 0`, `limit: 2`: the text the flag is given on the command line
    try:
        return options.read(item, value)
    except UserError as err:
        reason = re.sub(rf"^(argument \S+: |(--)?{re.escape(item.name)}: )", "", str(err))
        raise UserError(f"{where}: {item.name}: {reason}") from None


def _shape_problem(item: Field[object], value: object) -> str | None:
    """What keeps a YAML value from being one the option reads, by what the option's flag takes: a switch true or
    false, a `k=v` option (a dict by default) a mapping of single values or its text, a list only where the option's
    reader takes one (task names, seeds, paths), true or false only for a flag that may be given without a value."""
    flag = flag_of(item)
    if flag.switch:
        return None  # its reader: true or false, or its one line
    if isinstance(value, Mapping):
        if not isinstance(default_of(item), dict):
            return "expected a single value, got a mapping"
        for key, inner in value.items():
            if not isinstance(inner, SCALARS):
                return f"{key}: expected text, a number or true/false, got {_kind(inner)}"
        return None
    if isinstance(value, list):
        return None if flag.parse is not None or flag.repeat or flag.many else "expected a single value, got a list"
    if isinstance(value, bool) and flag.bare is None:
        return f"expected a value, got {str(value).lower()}"
    return None if isinstance(value, SCALARS) else f"expected text or a number, got {_kind(value)}"


def _kind(value: object) -> str:
    from harness.config.yaml_loader import FunctionRef

    if isinstance(value, FunctionRef):  # as the user wrote it, not our class: a task file's tag, no run file's value
        return f"`{value}`, a task file's tag"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return "null" if value is None else f"a {type(value).__name__}"


def _recorded(data: Mapping[object, object], known: Mapping[str, Field[object]]) -> dict[str, object]:
    """The file's contents as the results record them: plain JSON values, every secret-named value (at any depth, and
    in a `k=v` text) and every URL's credentials redacted."""
    from harness.redact import redact_mapping, redact_pairs

    contents = {
        str(key): redact_pairs(value)
        if isinstance(value, str) and isinstance(default_of(known[str(key)]), dict)
        else value
        for key, value in data.items()
    }
    recorded: dict[str, object] = json.loads(json.dumps(redact_mapping(contents), default=str))
    return recorded


def apply_run_file(
    args: argparse.Namespace, options: type[DeclaredOptions], run_file: RunFile | None
) -> RunFile | None:
    """`--config FILE`'s run (`run_file`, or None without one) read into `args`: each flag the command line did not
    give takes the file's value (the command line's replaces it whole); then every option that must be given is, or
    its one line."""
    if run_file and run_file.environment:
        from harness.redact import collect_secrets, register

        register(collect_secrets({}, run_file.environment))  # a key it sets is never shown
        os.environ.update(run_file.environment)
        names = ", ".join(run_file.environment)
        print(f"harness: {run_file.path}: env sets {names} for this run (lmms-eval's env section)", file=sys.stderr)
    for name, value in (run_file.values if run_file else {}).items():
        if getattr(args, name) is None or getattr(args, name) is False:  # not given: None, or False for a switch
            setattr(args, name, value)
    missing = [
        options.flag(item.name)
        for item in declared(options)
        if item.default is MISSING and item.default_factory is MISSING and getattr(args, item.name) is None
    ]
    if missing:
        where = f" (on the command line or in {args.config})" if run_file else ""
        raise UserError(f"the following arguments are required: {', '.join(missing)}{where}")
    return run_file


def run_each(runs: list[RunFile], run: Callable[[RunFile], int], said: Callable[[UserError], int]) -> int:
    """lmms-eval's batch file: its runs one after another, each said as it starts; one that fails is said and the
    next runs, as lmms-eval goes on; the exit code is the first failure's (0 where all finished)."""
    codes = []
    for i, run_file in enumerate(runs, 1):
        print(f"harness: {run_file.path}: run {i} of {len(runs)}", file=sys.stderr, flush=True)
        try:
            codes.append(run(run_file))
        except UserError as err:
            codes.append(said(err))
    if failed := [str(i) for i, code in enumerate(codes, 1) if code]:
        print(f"harness: {runs[0].path}: run {', '.join(failed)} of {len(runs)} failed", file=sys.stderr)
    return next((code for code in codes if code), 0)
