"""One `!function` hook of a task, bound: called as the function it names, it says in one line which task, which hook
and which row went wrong when the function raises or returns what its key does not take (`TaskHookError`), where
the exception used to end the run in a traceback.

    hook = TaskHook("doc_to_text", "toy_colors", ref)    # ref: the YAML's `doc_to_text: !function utils.prompt`
    hook(doc)   # TaskHookError: tasks/toy/_toy.yaml:4: task 'toy_colors': doc_to_text (!function utils.prompt)
                #   raised ZeroDivisionError on row 'colors-3': division by zero

A hook that raises `ValueError`, `KeyError` or `OSError` refuses one row, the way the benchmarks' hooks say a row
is malformed (`row_level`): where the caller records a row it cannot use (`invalid_input`: building a request, the
truncation rule, the text round trip) or a sample it cannot score (`error`: `process_results`), it still does so,
with the hook's own words (`reason`). Anything else a hook raises, or a value of the wrong type, is the task's own
fault: one line, exit 2, the samples finished so far journalled. A bound hook pickles as the `!function` it names
(a Ray replica loads the function from the same file, `harness.models.backends.replicas.wire`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from harness.config.yaml_loader import FunctionRef
from harness.errors import UserError, first_line

ROW_LEVEL = (ValueError, KeyError, OSError)  # a hook's way of refusing one row (the benchmarks' hooks use them)


class TaskHookError(UserError):
    """A task hook that raised (`cause`) or returned the wrong type (`cause` None): the message names the task, the
    hook and the row."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause

    @property
    def row_level(self) -> bool:
        """Whether the hook refused one row (`ROW_LEVEL`), which its caller may record and go on."""
        return isinstance(self.cause, ROW_LEVEL)

    @property
    def reason(self) -> str:
        """The hook's own words (as a row's record says them), else the whole line."""
        if isinstance(self.cause, KeyError):
            return f"KeyError: {self.cause}"
        return str(self.cause) if self.cause is not None else str(self)


@dataclass(frozen=True)
class Returns:
    """What a hook of one key must return: in words, and the test."""

    what: str
    test: Callable[[object], bool]


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fit_context(value: object) -> bool:
    if not isinstance(value, dict):
        return False
    length = value.get("length")
    return (
        isinstance(value.get("context"), str)
        and isinstance(length, int)
        and not isinstance(length, bool)
        and length > 0
    )


# What each key's hook returns (the caller checks the contents further: `messages_from_chat`, each image, ...).
RETURNS: dict[str, Returns] = {
    "doc_to_text": Returns("a string", lambda v: isinstance(v, str)),
    "doc_to_target": Returns(
        "a string, a number or a list", lambda v: v is None or isinstance(v, str | list | tuple) or _number(v)
    ),
    "doc_to_visual": Returns("a list of images", lambda v: v is None or isinstance(v, list | tuple)),
    "doc_to_messages": Returns("a list of chat turns", lambda v: isinstance(v, list | tuple)),
    "random_answer": Returns("a string", lambda v: isinstance(v, str)),
    "process_results": Returns("an object of metric values", lambda v: isinstance(v, dict)),
    "text_round_trip": Returns("a string", lambda v: isinstance(v, str)),
    "fit_context": Returns("an object with `context` (a string) and `length` (a positive integer)", _fit_context),
    "prompts": Returns("an object of judge prompts", lambda v: isinstance(v, dict)),
    "score": Returns("an object of metric values", lambda v: isinstance(v, dict)),
}


class TaskHook:
    """The function a task's YAML key names (`ref`), called through `__call__` (see the module's docstring)."""

    def __init__(self, key: str, task: str, ref: FunctionRef) -> None:
        self.key = key
        self.task = task
        self.ref = ref
        self._func: Callable[..., object] | None = ref.resolve()  # resolved now: a missing function stops the run early

    @property
    def __wrapped__(self) -> Callable[..., object]:  # `inspect.signature` reads the function's own parameters
        if self._func is None:
            self._func = self.ref.resolve()
        return self._func

    def __getstate__(self) -> dict[str, object]:
        return {"key": self.key, "task": self.task, "ref": self.ref, "_func": None}

    def __call__(self, *args: object, **kwargs: object) -> Any:  # what the hook returns, as its callers take it
        try:
            value = self.__wrapped__(*args, **kwargs)
        except UserError:
            raise
        except Exception as err:  # the task's code: whatever it raises is said in one line, never a traceback
            name = type(err).__name__
            raise TaskHookError(self._line(args, f"raised {name}", first_line(err)), err) from None
        expected = RETURNS.get(self.key)
        if expected is not None and not expected.test(value):
            raise self.wrong(args, f"returned {_kind(value)}, where {self.key} returns {expected.what}")
        return value

    def wrong(self, args: tuple[object, ...], what: str) -> TaskHookError:
        """The error of a hook whose value (or a part of it the caller checked) is not what its key takes."""
        return TaskHookError(self._line(args, what))

    def _line(self, args: tuple[object, ...], what: str, detail: str = "") -> str:
        where = f"{self.ref.yaml_file}:{self.ref.line}"
        said = f": {detail}" if detail else ""
        return f"{where}: task {self.task!r}: {self.key} ({self.ref}) {what} on {row_of(args)}{said}"[:2000]


def row_of(args: tuple[object, ...]) -> str:
    """The row a hook was called on, as its first argument names it (its `id`), for messages."""
    doc = args[0] if args else None
    if isinstance(doc, Mapping):
        row = doc.get("id")
        return f"row {row!r}"[:200] if isinstance(row, str | int) else "a row without an `id`"
    if isinstance(doc, str):
        return "a judge's reply"
    return "the task's documents"


def _kind(value: object) -> str:
    if value is None:
        return "None"
    return f"a value of type {type(value).__name__}"


@lru_cache(maxsize=256)
def _takes_metadata(func: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return "metadata" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def call_hook(func: Callable[..., Any], *args: Any, metadata: Mapping[str, object]) -> Any:
    """Call a task hook, passing the task's metadata when the hook accepts a `metadata` argument."""
    return func(*args, metadata=metadata) if _takes_metadata(func) else func(*args)
