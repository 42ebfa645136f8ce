"""Find task and group YAMLs: the installed `tasks` package first, then each `--include_path`.

Like lm-eval's `TaskIndex`: a file with `group:` is a group, a file with `task:` (a string) is a task,
and every other YAML is a template used through `include:`. Tags come from the tasks' `tag:` lists.
Unlike lm-eval, a malformed file is an error, not a task that silently disappears.
"""

from __future__ import annotations

import fnmatch
import hashlib
import importlib.util
import re
import sys
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builders.core import contract
from harness.config.task_config import GroupConfig, TaskConfig, parse_group, parse_task
from harness.config.yaml_loader import YAML_MOST, YamlDict, copied, file_digest, load_config, parsed_digests
from harness.errors import TaskConfigError, UserError, did_you_mean_path, suggest


def natural_key(name: str) -> list[Any]:
    """`m1_n8` before `m10_n1`: digit runs compare as numbers."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def default_tasks_dir() -> Path:
    """The `tasks/` folder of the installed distribution (works from a wheel, not only a checkout): found, not
    imported, since the harness reads the folder's YAML and imports a task's hooks only when the task asks."""
    spec = importlib.util.find_spec("tasks")
    if spec is None or spec.origin is None:
        raise RuntimeError("the `tasks` package of this distribution is not installed")
    return Path(spec.origin).resolve().parent


@dataclass
class Selection:
    """What `--tasks` expanded to: tasks to run in order, and each named group's members."""

    tasks: list[str] = field(default_factory=list)
    groups: dict[str, list[str]] = field(default_factory=dict)  # group -> direct members, in order


# A folder's parsed files, by folder, with the digest of every file the parse read (`_parsed`): one process indexes
# the same folders again for each run, report or compare it makes (a test session hundreds of times), and parsing the
# installed tasks' 908 files costs a fifth of a second. Copied in and out, so that each index gets objects of its own.
Parsed = list[tuple[Path, "TaskConfig | GroupConfig | None"]]
_PARSED: OrderedDict[Path, tuple[list[Path], list[Path], str, Parsed]] = OrderedDict()
_PARSED_FOLDERS = 16


def _combined(digests: Iterable[tuple[Path, str]]) -> str:
    """sha256 over the names and the digests of the bytes (`file_digest`) of a parse's files, in their order."""
    return hashlib.sha256("".join(f"{path}\0{digest}\0" for path, digest in digests).encode()).hexdigest()


def _digest(paths: Iterable[Path]) -> str | None:
    """`_combined` over what `paths` hold now, each read as the parse reads it (a regular file within its bound: one
    swapped for a FIFO since is no wait); None where one cannot be read (the parse then says why)."""
    try:
        return _combined((p, file_digest(contract.read_regular(p, YAML_MOST, "a task or group file"))) for p in paths)
    except OSError:
        return None


def _holds_tasks(path: Path) -> bool:
    """Whether `path` is what `--include_path` reads: a task YAML, or a folder with one in it."""
    if path.is_file():
        return path.suffix in (".yaml", ".yml")
    return path.is_dir() and any(path.rglob("*.y*ml"))


class TaskIndex:
    def __init__(self, include_paths: Sequence[Path | str] = (), include_defaults: bool = True) -> None:
        self.tasks: dict[str, TaskConfig] = {}
        self.groups: dict[str, GroupConfig] = {}
        self.tags: dict[str, list[str]] = {}
        roots = ([default_tasks_dir()] if include_defaults else []) + [Path(p) for p in include_paths]
        for root in roots:
            if not root.exists():
                raise UserError(f"--include_path {root}: no such file or folder{did_you_mean_path(root, _holds_tasks)}")
            self._index_root(root)
        for config in self.tasks.values():
            for tag in config.tag:
                if tag in self.tasks or tag in self.groups:
                    raise TaskConfigError(f"{config.source}:1: tag {tag!r} is also a task or group name")
                self.tags.setdefault(tag, []).append(config.task)

    def _parsed(self, root: Path) -> Parsed:
        """Each file of `root` with the task or group it defines (None: a template), as parsed before in this process
        where no file that parse read (the folder's files and the templates they include) has changed since."""
        files = [root] if root.is_file() else sorted(root.rglob("*.yaml")) + sorted(root.rglob("*.yml"))
        key = root.resolve()
        if key in _PARSED:
            listed, read, digest, entries = _PARSED[key]
            if listed == files and _digest(read) == digest:
                _PARSED.move_to_end(key)
                return copied(entries)
        included: dict[Path, YamlDict] = {}  # templates parsed once for the folder (`load_config`)
        parsed: Parsed = []
        with parsed_digests() as digests:  # keyed by the bytes parsed: a file rewritten meanwhile is parsed again
            for path in files:
                data = load_config(path, included=included)
                if "group" in data:
                    parsed.append((path, parse_group(data)))
                elif isinstance(data.get("task"), str):
                    parsed.append((path, parse_task(data)))
                else:
                    parsed.append((path, None))  # a template, only used through `include:`
        read = sorted(digests)
        _PARSED[key] = (files, read, _combined((p, digests[p]) for p in read), copied(parsed))
        while len(_PARSED) > _PARSED_FOLDERS:
            _PARSED.popitem(last=False)
        return parsed

    def _index_root(self, root: Path) -> None:
        seen_here: dict[str, Path] = {}
        for path, config in self._parsed(root):
            if config is None:
                continue  # a template, only used through `include:`
            name = config.group if isinstance(config, GroupConfig) else config.task
            if name in seen_here:
                raise TaskConfigError(f"{path}:1: {name!r} is already defined in {seen_here[name]}")
            seen_here[name] = path
            if name in self.tasks or name in self.groups:
                previous = (self.tasks.get(name) or self.groups[name]).source
                print(f"harness: {path} overrides {name!r} from {previous}", file=sys.stderr)
                self.tasks.pop(name, None)
                self.groups.pop(name, None)
            if isinstance(config, GroupConfig):
                self.groups[name] = config
            else:
                self.tasks[name] = config

    def all_names(self) -> set[str]:
        return set(self.tasks) | set(self.groups) | set(self.tags)

    def dataset_configs(self) -> dict[str, list[str]]:
        """`<benchmark>_<config>` -> the tasks reading that config (MMNeedle's `mmneedle_m10_n4_k1`: its
        positives and negatives), for the names users type; task, group and tag names take precedence."""
        configs: dict[str, list[str]] = {}
        for name, config in self.tasks.items():
            if config.dataset_name:
                key = f"{Path(config.dataset_path).name}_{config.dataset_name}"
                if key not in self.tasks and key not in self.groups and key not in self.tags:
                    configs.setdefault(key, []).append(name)
        return configs

    def select(self, names: Iterable[str]) -> Selection:
        """Expand task, group and tag names (and shell-style globs over them) to tasks to run."""
        selection = Selection()
        dataset_configs = self.dataset_configs()

        def add_task(name: str) -> None:
            if name not in selection.tasks:
                selection.tasks.append(name)

        def expand(name: str, stack: tuple[str, ...]) -> None:
            if name in stack:
                raise TaskConfigError(f"{self.groups[name].source}:1: group cycle: {' -> '.join((*stack, name))}")
            if name in self.tasks:
                add_task(name)
            elif name in self.groups:
                members = self.groups[name].task
                selection.groups[name] = list(members)
                for member in members:
                    if member not in self.all_names():
                        raise TaskConfigError(
                            f"{self.groups[name].source}:1: group {name!r}: "
                            + suggest(member, self.all_names(), "task")
                        )
                    expand(member, (*stack, name))
            elif name in self.tags:
                for member in self.tags[name]:
                    add_task(member)
            elif name in dataset_configs:
                for member in dataset_configs[name]:
                    add_task(member)
            else:
                matches = sorted(n for n in self.all_names() if fnmatch.fnmatchcase(n, name))
                if not matches or not any(ch in name for ch in "*?["):
                    raise UserError(
                        suggest(name, self.all_names() | set(dataset_configs), "task") + " (see `harness ls`)"
                    )
                for match in matches:
                    expand(match, stack)

        for name in names:
            expand(name, ())
        return selection
