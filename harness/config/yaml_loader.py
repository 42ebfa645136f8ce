"""Task YAML parsing: `!function` hooks, `include:` merging, and errors that name the file and line.

`!function utils.fn` is kept as a `FunctionRef` until a task is actually run, so `harness ls` never
imports task code; resolving looks for `utils.py` in the folder of the YAML file that wrote the tag
(then for an importable module of that dotted name), as lm-eval's `_yaml_loader.py` does.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import yaml

from builders.core import contract
from harness.errors import TaskConfigError, first_line

if TYPE_CHECKING:
    _BaseLoader = yaml.SafeLoader
else:  # libyaml's loader where PyYAML was built with it: the same documents, parsed faster
    _BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlDict(dict):
    """A mapping that remembers the file and line of each key, for error messages."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lines: dict[str, str] = {}  # key -> "file:line" where it was written
        self.source: Path | None = None

    def where(self, key: str | None = None) -> str:
        if key is not None and key in self.lines:
            return self.lines[key]
        return f"{self.source}:1"


def copied(value: Any) -> Any:
    """A copy of parsed YAML data or of what a task's parse makes of it: its mappings, lists and unfrozen dataclasses
    new, its scalars, paths and frozen dataclasses (`FunctionRef`) shared. What `copy.deepcopy` gives for these types,
    at a fifth of the cost (the index copies a template for each includer, and a folder's parse for each index)."""
    kind = type(value)
    if kind in _SHARED:
        return value
    if kind is dict:
        return {key: copied(item) for key, item in value.items()}
    if kind is list:
        return [copied(item) for item in value]
    if kind is YamlDict:
        out = YamlDict({key: copied(item) for key, item in value.items()})
        out.lines, out.source = dict(value.lines), value.source
        return out
    if kind is tuple:
        return tuple(copied(item) for item in value)
    if kind is set:  # `!!set`: its members are hashable, so immutable
        return set(value)
    if dataclasses.is_dataclass(value) and not kind.__dataclass_params__.frozen:
        out = object.__new__(kind)
        out.__dict__.update({name: copied(item) for name, item in value.__dict__.items()})
        return out
    return value  # a scalar YAML makes (a date, bytes) or a frozen dataclass


_ABSENT = object()  # an attribute a module does not have


@dataclass(frozen=True)
class FunctionRef:
    """An unresolved `!function module.name` written at `yaml_file:line`."""

    spec: str
    yaml_file: Path = field(compare=False)
    line: int = field(compare=False)

    def __str__(self) -> str:
        return f"!function {self.spec}"

    def resolve(self) -> Callable[..., Any]:
        """The function the tag names."""
        return self._lookup(callable)  # type: ignore[return-value]  # `callable` checked it

    def resolve_attribute(self) -> object:
        """What the tag names, function or not (lm-eval's `!function` resolves any attribute: a benchmark's
        declaration is a `harness.config.benchmark.BenchmarkDeclaration`)."""
        return self._lookup(lambda found: found is not _ABSENT)

    def _lookup(self, accepted: Callable[[object], bool]) -> object:
        """What the tag names, where `accepted` takes it (a `TaskConfigError` naming the YAML line otherwise)."""
        module_name, _, func_name = self.spec.rpartition(".")
        where = f"{self.yaml_file}:{self.line}"
        if not module_name or not func_name:
            raise TaskConfigError(f"{where}: `!function {self.spec}` must be written as module.function")
        local = self.yaml_file.parent / (module_name.replace(".", "/") + ".py")
        if local.is_file():
            module = _load_module_file(local)
            origin = str(local)
        else:
            try:
                module = importlib.import_module(module_name)
            except ImportError as err:
                raise TaskConfigError(
                    f"{where}: `!function {self.spec}`: no {local.name} beside the YAML and no importable "
                    f"module {module_name!r} ({err})"
                ) from None
            origin = getattr(module, "__file__", module_name)
        found: object = getattr(module, func_name, _ABSENT)
        if not accepted(found):
            raise TaskConfigError(f"{where}: `!function {self.spec}`: {origin} has no function {func_name!r}")
        return found

    def source_hash(self) -> str:
        """sha256 of the function's source, so a changed hook changes the task's fingerprint."""
        try:
            source = inspect.getsource(self.resolve())
        except (OSError, TypeError):
            source = self.spec
        return hashlib.sha256(source.encode()).hexdigest()


_SHARED = frozenset({str, int, float, bool, type(None), type(Path()), FunctionRef})  # immutable: `copied` shares them


_MODULES: dict[tuple[str, float], ModuleType] = {}
HOOK_MODULE_PREFIX = "harness_task_hooks_"  # the names of hook modules loaded from a task folder's files


def hook_in_file(path: str, name: str) -> Callable[..., Any]:
    """The function `name` of the hook module at `path`, loaded as `FunctionRef.resolve` loads it (a Ray replica
    calling a hook the driver loaded from a task folder: `harness.models.backends.replicas.wire`)."""
    return getattr(_load_module_file(Path(path)), name)


def _load_module_file(path: Path) -> ModuleType:
    path = path.resolve()
    key = (str(path), path.stat().st_mtime)
    if key not in _MODULES:
        # A unique, stable module name per file: two task folders may both have a `utils.py`.
        name = HOOK_MODULE_PREFIX + hashlib.sha1(str(path).encode()).hexdigest()[:12] + "_" + path.stem
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as err:
            del sys.modules[name]
            raise TaskConfigError(f"{path}: importing task hooks failed: {type(err).__name__}: {err}") from err
        _MODULES[key] = module
    return _MODULES[key]


def _make_loader(path: Path) -> type:
    class Loader(_BaseLoader):
        pass

    def construct_mapping(loader: Any, node: yaml.MappingNode) -> YamlDict:
        result = YamlDict()
        result.source = path
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if isinstance(key, list | dict | set):  # a `? [1, 2]` complex key: no task or group key is one
                raise TaskConfigError(
                    f"{path}:{key_node.start_mark.line + 1}:{key_node.start_mark.column + 1}: a key "
                    f"must be a name, not a {type(key).__name__} ({str(key)[:40]})"
                )
            result[key] = loader.construct_object(value_node, deep=True)
            result.lines[key] = f"{path}:{key_node.start_mark.line + 1}"
        return result

    def construct_int(loader: Any, node: yaml.ScalarNode) -> int:
        # An integer longer than Python converts is named here, where its line is known (not a bare ValueError).
        where = f"{path}:{node.start_mark.line + 1}:{node.start_mark.column + 1}"
        problem = contract.int_text_problem(str(node.value))
        if problem:
            raise TaskConfigError(f"{where}: {problem}")
        value: int = yaml.SafeLoader.construct_yaml_int(loader, node)
        problem = contract.int_problem(value)  # hexadecimal, octal, binary: converted, but too long to print
        if problem:
            raise TaskConfigError(f"{where}: {problem}")
        return value

    def construct_function(loader: Any, node: yaml.Node) -> FunctionRef:
        return FunctionRef(str(loader.construct_scalar(node)).strip(), path, node.start_mark.line + 1)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    Loader.add_constructor("!function", construct_function)
    Loader.add_constructor("tag:yaml.org,2002:int", construct_int)
    return Loader


YAML_MOST = 4 * contract.MiB  # a task, group or run file: a few kB; past this it is not one
# path -> sha256 of the bytes `read_yaml` parsed, while `parsed_digests` records them
_PARSED_DIGESTS: ContextVar[dict[Path, str] | None] = ContextVar("parsed_digests", default=None)


def file_digest(data: bytes) -> str:
    """The digest that keys a parse of a YAML file's bytes (`parsed_digests`)."""
    return hashlib.sha256(data).hexdigest()


@contextmanager
def parsed_digests() -> Iterator[dict[Path, str]]:
    """Within the block, each file `read_yaml` parses, by its path, with the digest of the very bytes it parsed
    (`file_digest`): a cache of the parse is keyed by what was parsed, not by what the file holds a moment later."""
    found: dict[Path, str] = {}
    token = _PARSED_DIGESTS.set(found)
    try:
        yield found
    finally:
        _PARSED_DIGESTS.reset(token)


def read_yaml(path: Path, what: str = "task and group files") -> object:
    """What one YAML file holds (no includes; each mapping a `YamlDict`, None for an empty file); a file that cannot be
    read, is no regular file (a FIFO, a device), holds more than `YAML_MOST` bytes, is not UTF-8 (`what` must be saved
    as UTF-8) or is malformed raises `TaskConfigError` with file:line:col, before a byte past the bound is read."""
    try:
        raw = contract.read_regular(path, YAML_MOST, what)
        recording = _PARSED_DIGESTS.get()
        if recording is not None:
            recording[path] = file_digest(raw)
        text = raw.decode("utf-8")
    except OSError as err:
        raise TaskConfigError(f"{path}: cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        line = err.object[: err.start].count(b"\n") + 1
        raise TaskConfigError(
            f"{path}:{line}: not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset "
            f"{err.start}); {what} must be saved as UTF-8"
        ) from None
    try:
        data = yaml.load(text, Loader=_make_loader(path))  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{mark.line + 1}:{mark.column + 1}" if mark else "1"
        problem = " ".join(p for p in (err.context, err.problem) if p)
        if "tag:yaml.org,2002:merge" in problem:  # PyYAML's words name its tag, not what the user wrote
            raise TaskConfigError(
                f"{path}:{where}: YAML merge keys (`<<:`) are not supported in {what}: write the keys out"
            ) from None
        raise TaskConfigError(f"{path}:{where}: malformed YAML: {problem}") from None
    except yaml.reader.ReaderError as err:  # a control character: PyYAML's message is two lines
        line = text[: err.position].count("\n") + 1
        code = ord(err.character) if isinstance(err.character, str) else err.character
        raise TaskConfigError(
            f"{path}:{line}: malformed YAML: unacceptable character #x{code:04x} ({err.reason})"
        ) from None
    except yaml.YAMLError as err:
        raise TaskConfigError(f"{path}: malformed YAML: {first_line(err)}") from None
    except RecursionError:
        raise TaskConfigError(f"{path}: malformed YAML: nested too deeply to read") from None
    return data


def load_yaml_file(path: Path) -> YamlDict:
    """Parse one task or group YAML file (no includes): a mapping. Malformed YAML raises `TaskConfigError` with
    file:line:col."""
    data = read_yaml(path)
    if data is None:
        data = YamlDict()
        data.source = path
    if not isinstance(data, YamlDict):
        raise TaskConfigError(f"{path}:1: a task or group file must be a mapping, got {type(data).__name__}")
    return data


def load_config(path: Path, _stack: tuple[Path, ...] = (), included: dict[Path, YamlDict] | None = None) -> YamlDict:
    """Load a YAML file and merge its `include:` chain; keys of the including file win. `included`: the included
    files already loaded (merged), shared by the calls of one index so that a template many tasks include (MMLongBench's
    `_default.yaml`, 179 of them) is parsed once; each includer gets its own copy of the values."""
    path = path.resolve()
    if path in _stack:
        chain = " -> ".join(str(p) for p in (*_stack, path))
        raise TaskConfigError(f"{path}:1: include cycle: {chain}")
    data = load_yaml_file(path)
    includes = data.pop("include", None)
    if includes is None:
        return data
    include_where = data.where("include")
    if isinstance(includes, str):
        includes = [includes]
    if not (isinstance(includes, list) and all(isinstance(name, str) and name for name in includes)):
        raise TaskConfigError(
            f"{include_where}: `include` must be a file name or a list of file names, got {str(includes)[:80]}"
        )
    merged = YamlDict()
    merged.source = path
    for name in includes:
        target = Path(str(name))
        if not target.is_absolute():
            target = path.parent / target
        try:
            found = target.is_file()
        except OSError as err:  # a name the system refuses (too long), a loop of links
            raise TaskConfigError(
                f"{include_where}: included file {name[:80]!r} cannot be looked up: {err.strerror}"
            ) from None
        if not found:
            raise TaskConfigError(f"{include_where}: included file {name!r} not found (looked for {target})")
        key = target.resolve()
        if included is None or key not in included or key in _stack:
            base = load_config(target, (*_stack, path), included)
            if included is not None:
                included[key] = base
        base = copied(included[key]) if included is not None else base
        merged.update(base)
        merged.lines.update(base.lines)
    merged.update(data)
    merged.lines.update(data.lines)
    return merged
