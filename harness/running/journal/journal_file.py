"""The journal's format, `journal_<task>.jsonl`: a header line (`JournalHeader`), then one line per sample record
(`SampleRecord`), as JSON, declared once: every journal line is made (`header_line`, `record_line`) and checked when
read (`parse_line`, `header_problem`, `record_problem`: pydantic validates against the same declarations, `harness.schema`,
whose JSON Schemas are `docs/schemas/journal_header.json` and `docs/schemas/journal_record.json`) here: by the store that appends and resumes a run's journals (`harness.running.journal.sample_store`), by `harness merge` and
by `harness view`.

The header's `fingerprint` digests its `parts` (model identity, generation settings, the task's config less its
scoring and its version, dataset hash, and the shard of a `--shard i/n` run): what decides the replies, less the parts
that only describe the run (`INFO_PARTS`) and the task's scoring (`SCORING_PART`: its metrics and scorer, whose change
rescores the stored replies instead); every record carries the fingerprint of the run that wrote it.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Literal, Required

from pydantic import AfterValidator, WithJsonSchema
from typing_extensions import TypedDict

from builders.core import contract
from builders.core.contract import kind_of
from harness import schema
from harness.api import Status
from harness.redact import dumps
from harness.sent import CacheAsked, RoundTripRecord, SentImageRecord

# Header parts that describe a run without deciding whether its samples can be reused.
INFO_PARTS = frozenset({"task_docs"})
# The header part that decides the replies' metrics, never whether they are reused (`Task.scoring_identity`).
SCORING_PART = "scoring"
METRIC_VALUE = "a number, a list of numbers or a list of [key, number] pairs"


class JournalHeader(TypedDict, total=False):
    """A journal's first line (a key it lacks is checked where it is used)."""

    type: Required[Literal["header"]]
    task: str
    fingerprint: str
    parts: dict[str, Any]  # what the run was: model, generation, task, scoring, task_docs, shard


_FLOAT_MAX = int(sys.float_info.max)


def _is_number(value: object) -> bool:
    """A number an aggregation can read: an integer too large for a float would stop it (an `OverflowError` on
    every rerun, the line being in the journal), so it is an unreadable value, its sample run again."""
    if isinstance(value, int) and not isinstance(value, bool):
        return -_FLOAT_MAX <= value <= _FLOAT_MAX
    return value is None or isinstance(value, bool | float)


def _metric_value(value: object) -> object:
    """`value`, if a metric value the aggregations read: a number (or null), a list of numbers (a `[numerator,
    denominator]` pair) or a list of `[key, number]` pairs (a breakdown by cell, depth, ...); else a ValueError
    saying what it is, as the run's warnings say it ("is an integer too large for a float, not ...")."""
    if _is_number(value):
        return value
    if isinstance(value, list):
        if all(_is_number(item) for item in value) or all(
            isinstance(item, list)
            and len(item) == 2
            and isinstance(item[0], str | int | float)
            and not isinstance(item[0], bool)
            and _is_number(item[1])
            for item in value
        ):
            return value
        problem = "a list of other than numbers or [key, number] pairs"
    elif isinstance(value, int) and not isinstance(value, bool):
        problem = "an integer too large for a float"
    else:
        problem = f"a {type(value).__name__}"
    raise ValueError(f"is {problem}, not {METRIC_VALUE}")


_NUMBER = {"type": ["number", "boolean", "null"]}
_PAIR = {"type": "array", "prefixItems": [{"type": ["string", "number"]}, _NUMBER], "minItems": 2, "maxItems": 2}
MetricValue = Annotated[
    object,
    AfterValidator(_metric_value),
    WithJsonSchema(
        {"description": METRIC_VALUE, "anyOf": [_NUMBER, {"type": "array", "items": {"anyOf": [_NUMBER, _PAIR]}}]}
    ),
]


class LoggedFields(TypedDict, total=False):
    """What a sample was asked, in its record (`harness.running.sample_records.RecordBuilder.log_fields`)."""

    target: str
    # the prompt as its backend sent it (`harness.sent`: a chat template's text, an API's messages as JSON, ...): its
    # sha256, the text in the journal's prompt store (`harness.running.journal.prompt_store`)
    prompt_sha256: str
    prompt: str  # the text itself: a journal from before the prompt store (`--log_samples`), or a record being made
    sent_images: list[SentImageRecord]  # each image as sent: its hash, its size and the processor settings
    assistant_prefix: str
    image_sha256: list[str]
    image_sizes: list[list[int | None]]  # None: a size the row does not record
    effective_image_sizes: list[list[int] | None]  # after scaling to the model's max_pixels


class SampleRecord(LoggedFields, total=False):
    """One sample's line: its outcome and what it was asked (`harness.running.sample_records` builds it; a later
    record of a sample replaces an earlier one)."""

    type: Literal["sample"]
    task: str
    fingerprint: str
    doc_id: Required[int]
    sample_id: Required[str]
    # the answer (cut to 2,000 characters when it was enormous); null: none came
    response: str | None
    # the whole response where reasoning tags took its thinking out of `response` (`harness.models.facts.reasoning`)
    raw_response: str
    finish_reason: str | None
    token_count: int  # the prompt's tokens as the model counts them
    input_sha256: str | None  # of everything sent: a changed prompt or image is generated again
    # token usage, as the backend reported it
    usage: dict[str, int] | None
    # the sha256 of the prompt's token ids as the model was given them (`harness.sent.token_ids_sha256`): where the
    # backend sees them (`hf`, `vllm`), equal on two backends that tokenized the request alike
    prompt_ids_sha256: str
    prompt_cache: CacheAsked  # what the provider's prompt cache was asked for it (`api_client.prompt_cache`)
    truncation: dict[str, Any]  # what the task's truncation rule dropped
    text_round_trip: RoundTripRecord  # what the tokenizer's round trip changed
    # the checkpoint's window (max_position_embeddings) this answer's prompt and max_gen_toks ran past, on purpose
    # (`past_window=true`, `no_context_limit=true`); absent where it fits, or where the run kept rows within it
    past_window: int
    refusal: str  # a refusal scored as the empty answer (`refusals: empty`)
    status: Required[Status]
    error: str | None
    # the scorer's values (absent until scored: `--predict_only`)
    metrics: dict[str, MetricValue] | None
    # the row's cluster keys from its task's `cluster_key:` (`harness.config.cluster_key`): rows sharing a key share an
    # item; absent for a task without one (and in journals from before: filled in when the task next finishes)
    cluster: list[str]


def identity_parts(parts: Mapping[str, object]) -> dict[str, Any]:
    """The parts that decide whether a journal's replies are reused."""
    return {k: v for k, v in parts.items() if k not in INFO_PARTS and k != SCORING_PART}


def sent_parts(parts: Mapping[str, object], legacy: bool) -> dict[str, object]:
    """`identity_parts`, compared with a journal's; `legacy`: the journal is from before the scoring had a part of its
    own, its task's `config_sha256` digesting scoring and request alike, so neither digest is compared (each reply is
    still reused only for the inputs it was answered for: its `input_sha256`)."""
    kept = identity_parts(parts)
    if legacy and isinstance(kept.get("task"), dict):
        kept["task"] = {k: v for k, v in kept["task"].items() if k not in ("config_sha256", "sent_sha256")}
    return kept


def scoring_change(theirs: object, mine: object) -> str | None:
    """Why a journal's replies are scored again (its scoring part `theirs`, the task's `mine`), or None."""
    if theirs == mine:
        return None
    if not isinstance(theirs, dict) or not isinstance(mine, dict):
        return "the journal is from before its scoring was recorded apart from what was sent"
    return metrics_change(theirs.get("metrics", []), mine.get("metrics", [])) or "the task's scorer changed"


def metrics_change(theirs: Iterable[str], mine: Iterable[str]) -> str | None:
    """The metrics added and removed ("the task's metrics changed (added score_nonempty)"), or None."""
    theirs, mine = list(theirs), list(mine)
    added, removed = [m for m in mine if m not in theirs], [m for m in theirs if m not in mine]
    said = [f"{what} {', '.join(names)}" for what, names in (("added", added), ("removed", removed)) if names]
    return f"the task's metrics changed ({'; '.join(said)})" if said else None


def _is_sample_number(value: object) -> bool:
    return isinstance(value, int | float)


def _is_key(value: object) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _is_pair(value: object) -> bool:
    return isinstance(value, list | tuple) and len(value) == 2 and all(_is_sample_number(v) for v in value)


def _is_breakdown(value: object) -> bool:
    return isinstance(value, list | tuple) and all(
        isinstance(p, list | tuple) and len(p) == 2 and _is_key(p[0]) and _is_sample_number(p[1]) for p in value
    )


# What one sample's value must be for each built-in aggregation: (test, the words an error says it expected).
# A journal line whose value has another shape is not used (`sample_store`): its sample runs again. Declared here,
# with the line's format, so that the journal reads no task code (`harness.running.task.metrics` aggregates them).
SAMPLE_SHAPES: dict[str, tuple[Callable[[object], bool], str]] = {
    "mean": (_is_sample_number, "a number"),
    "sum": (_is_sample_number, "a number"),
    "ratio_of_sums": (_is_pair, "a [numerator, denominator] pair of numbers"),
    "mean_by_key": (_is_breakdown, "a list of [key, number] pairs"),
}


def sample_value_problem(aggregation: str, value: object) -> str | None:
    """Why `value` cannot be one sample's value of a metric aggregated by the built-in `aggregation`, or None
    (None too for an aggregation of a task's own, whose shape only its function knows)."""
    shape = SAMPLE_SHAPES.get(aggregation)
    if shape is None or shape[0](value):
        return None
    return f"expected {shape[1]} (aggregation {aggregation}), got {kind_of(value)}"


def canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def fingerprint(parts: Mapping[str, object]) -> str:
    return hashlib.sha256(canonical(identity_parts(parts)).encode()).hexdigest()[:20]


def file_safe(task: str) -> str:
    """`task` as a file name's part (the journal's, the prompt store's, the sample log's)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", task)


def journal_name(task: str) -> str:
    return f"journal_{file_safe(task)}.jsonl"


def legacy_journal_name(task: str) -> str:
    """Where journals were written before they were named apart from lm-eval's `samples_*` files."""
    return f"samples_{file_safe(task)}.jsonl"


def make_header(task: str, parts: dict[str, Any]) -> JournalHeader:
    return {"type": "header", "task": task, "fingerprint": fingerprint(parts), "parts": parts}


def stamped(task: str, digest: str, record: Mapping[str, object]) -> SampleRecord:
    """`record` as a line of the journal of `task` whose fingerprint is `digest` (a record read back keeps its own
    marks, a record merged from shards is given the merged run's: `harness.outputs.merge.journals`)."""
    # the record's own keys, checked where it was read (`record_problem`) or made (`harness.running.sample_records`)
    return {"type": "sample", "task": task, "fingerprint": digest, **record}  # type: ignore[typeddict-item]


def header_line(header: JournalHeader) -> str:
    return dumps(header)


def record_line(record: SampleRecord) -> str:
    return dumps(record, ensure_ascii=False)


def parse_line(line: bytes) -> tuple[Any, str | None]:
    """(the JSON value of one journal line, None), or (None, why it cannot be read). Never raises: a line
    nested too deeply for the parser is as unreadable as one that is not JSON."""
    try:
        return contract.loads_json(line.decode("utf-8")), None
    except contract.TooManyDigits as err:
        return None, str(err)
    except UnicodeDecodeError as err:
        return None, f"not UTF-8 ({err.reason} at byte {err.start})"
    except json.JSONDecodeError as err:
        return None, f"not JSON ({err.msg} at column {err.colno})"
    except RecursionError:
        return None, "nested too deeply to read"


def header_problem(header: object) -> str | None:
    """Why a parsed journal line is not a `JournalHeader`, or None (a key it lacks is checked where it is used)."""
    if not isinstance(header, dict) or header.get("type") != "header":
        return "not a journal header"
    found = schema.problem(header, JournalHeader)
    return None if found is None else f"a header whose {found}"


def record_problem(record: object, task: str, aggregations: Mapping[str, str] | None = None) -> str | None:
    """Why a parsed journal line is not a `SampleRecord` of `task` the harness can use, or None. `aggregations`
    (metric -> the name of its built-in aggregation) also checks each metric's value has the shape its
    aggregation reads: a breakdown's pairs, a ratio's pair, a mean's number."""
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}"
    if record.get("type") == "header":
        return "a second header"
    if record.get("type") != "sample" or record.get("task") != task:
        return f"not a sample record of task {task!r}"
    found = schema.problem(record, SampleRecord)
    if found is not None:
        return found
    for name, value in (record.get("metrics") or {}).items():
        problem = sample_value_problem(aggregations.get(name, ""), value) if aggregations else None
        if problem:
            return f"metrics.{name}: {problem}"
    return None
