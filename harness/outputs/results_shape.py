"""What a results file must hold for `harness report` to read it: the shape `harness.outputs.results` writes,
as a small declarative schema checked once per file when it is loaded.

A file edited by hand, cut short, written by another tool or damaged is then one line naming the file, the
field and what was expected (`harness report` stops there), never a traceback from deep inside a renderer.
Only fields the report reads are checked; anything else a file holds is left alone.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Check = Callable[[Any, str], "str | None"]  # (value, its path) -> what is wrong, or None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if type(value) is int and not _fits_a_float(value):
        return "an integer past a float's range"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _fits_a_float(value: int | float) -> bool:
    """An integer past float's range (10**400) is no score, date or duration: every renderer would overflow on it."""
    return isinstance(value, float) or abs(value) <= sys.float_info.max


@dataclass(frozen=True)
class Scalar:
    """One of some JSON scalar kinds: `number`, `integer`, `string`, `boolean`, `null`."""

    kinds: tuple[str, ...]

    def __call__(self, value: Any, path: str) -> str | None:
        ok = {
            "number": isinstance(value, int | float) and not isinstance(value, bool) and _fits_a_float(value),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "string": isinstance(value, str),
            "boolean": isinstance(value, bool),
            "null": value is None,
        }
        if any(ok[kind] for kind in self.kinds):
            return None
        return f"`{path}` must be {' or '.join(self.kinds)}, got {_kind(value)}"


@dataclass(frozen=True)
class Obj:
    """A JSON object: named `fields` (each optional) and, for every other key, `values`."""

    fields: Mapping[str, Check] = field(default_factory=dict)
    values: Check | None = None
    nullable: bool = False

    def __call__(self, value: Any, path: str) -> str | None:
        if value is None and self.nullable:
            return None
        if not isinstance(value, dict):
            return f"`{path}` must be an object{' or null' if self.nullable else ''}, got {_kind(value)}"
        for key, item in value.items():
            check = self.fields.get(key, self.values)
            problem = check(item, f"{path}.{key}") if check is not None else None
            if problem:
                return problem
        return None


@dataclass(frozen=True)
class Items:
    """A JSON list whose every item passes `item`."""

    item: Check
    nullable: bool = False

    def __call__(self, value: Any, path: str) -> str | None:
        if value is None and self.nullable:
            return None
        if not isinstance(value, list):
            return f"`{path}` must be a list{' or null' if self.nullable else ''}, got {_kind(value)}"
        for index, item in enumerate(value):
            problem = self.item(item, f"{path}[{index}]")
            if problem:
                return problem
        return None


def _any(value: Any, path: str) -> str | None:
    return None


NUMBER, INTEGER, STRING = Scalar(("number",)), Scalar(("integer",)), Scalar(("string",))
OPT_NUMBER, OPT_INTEGER, OPT_STRING = (
    Scalar(("number", "null")),
    Scalar(("integer", "null")),
    Scalar(("string", "null")),
)
SCALAR = Scalar(("number", "string", "boolean", "null"))
# A metric's value: a number, or a string lm-eval's way ("N/A", "inf").
VALUE = Scalar(("number", "string", "null"))
NAMES = Items(STRING)

TASK_ENTRY = Obj({"alias": OPT_STRING}, VALUE)
BREAKDOWN_CELL = Obj({"mean": VALUE, "n": OPT_INTEGER, "stderr": VALUE})
DATASET = Obj(
    {
        "location": OPT_STRING,
        "revision": OPT_STRING,
        "content_hash": OPT_STRING,
        "builder": OPT_STRING,
        "builder_version": SCALAR,
        "mode": OPT_STRING,
        "rows": Scalar(("string", "integer", "null")),
        "limit": OPT_INTEGER,
        "verification": OPT_STRING,
        "unverified_reason": SCALAR,
        "commit": SCALAR,
        "source": Obj({"kind": OPT_STRING, "spec": OPT_STRING, "num_images": OPT_INTEGER}, nullable=True),
        "caveats": Obj(values=SCALAR, nullable=True),
        "config": Obj({"rows": OPT_INTEGER, "content_sha256": OPT_STRING}, nullable=True),
        "rows_left_out": Obj({"scored": OPT_INTEGER, "held": OPT_INTEGER, "all_with": OPT_STRING}, nullable=True),
    },
    nullable=True,
)
RUN_CONFIG = Obj(
    {
        "model": OPT_STRING,
        "model_name": OPT_STRING,
        "alias": OPT_STRING,
        "limit": OPT_NUMBER,
        "shard": SCALAR,
        "include_path": Items(STRING, nullable=True),
        "argv": Items(STRING, nullable=True),
        "model_args": Obj(nullable=True),
        "model_identity": Obj(nullable=True),
        "alias_info": Obj(nullable=True),
        "judge": Obj(nullable=True),
        "input_policies": _any,
    }
)
RESULTS_FILE = Obj(
    {
        "results": Obj(values=TASK_ENTRY),
        "groups": Obj(values=TASK_ENTRY),
        "group_subtasks": Obj(values=NAMES),
        "sample_counts": Obj(values=Obj(values=SCALAR)),
        "group_aggregation": Obj(
            values=Obj(
                {
                    "n_scored": OPT_INTEGER,
                    "rules": Obj(values=Obj({"metric": STRING, "rule": SCALAR, "used": NAMES, "missing": NAMES})),
                }
            )
        ),
        "configs": Obj(values=Obj({"metadata": Obj(nullable=True)}, nullable=True)),
        "versions": Obj(values=SCALAR),
        "n-samples": Obj(values=Obj({"original": OPT_INTEGER, "effective": OPT_INTEGER}, nullable=True)),
        "breakdowns": Obj(values=Obj(values=Obj(values=BREAKDOWN_CELL))),
        "references": Obj(values=Obj(values=VALUE)),
        "usage": Obj(values=Obj(values=SCALAR)),
        "datasets": Obj(values=DATASET),
        "config": RUN_CONFIG,
        "package_versions": Obj(values=SCALAR, nullable=True),
        "git_hash": SCALAR,
        "date": OPT_NUMBER,
        "total_evaluation_time_seconds": SCALAR,
        "model_name": OPT_STRING,
    }
)


def results_file_problem(data: Any) -> str | None:
    """What keeps `data` (a parsed results file) from being read by `harness report`, or None."""
    if not isinstance(data, dict):
        return f"expected a JSON object, got {_kind(data)}"
    problem = RESULTS_FILE(data, "$")
    return problem.replace("`$.", "`", 1) if problem else None
