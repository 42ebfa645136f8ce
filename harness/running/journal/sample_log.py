"""`--log_samples`: `samples_<task>_<date>.jsonl`, each sample as lm-eval writes it, so its tools read ours.

lm-eval's fields (`lm_eval/evaluator.py` and `EvaluationTracker.save_results_samples`): `doc_id`, `doc`, `target`,
`arguments` (`{"gen_args_0": {"arg_0": prompt, "arg_1": generation settings}}`), `resps`, `filtered_resps` (the
answer scored: `resps` without its thinking where the run took a reasoning model's thinking out, as lmms-eval's
`--reasoning_tags`), `filter`, `metrics` (the names), `doc_hash`, `prompt_hash`, `target_hash`, and each metric's
value; ours beside them: `sample_id`, `status`, `error`, `image_sha256`, `token_count`, `cluster` (the row's cluster
keys, where its task declares `cluster_key:`), `sent_images`: with `arg_0`, the request as its backend sent it
(`harness.sent`: the prompt the model was given, each image with its size and processor settings), and
`prompt_cache`, `cache_read_tokens`, `cache_write_tokens`: what an API backend asked of its provider's prompt cache
and what the reply says it read and wrote. A value that is
not a number (a breakdown such as MMNeedle's per-cell pairs) is written as a JSON string, so every line has one type
per field (what `datasets.load_dataset("json", ...)` needs). Written once a task has finished, from its journal (the
export of its records: each prompt's text from the journal's prompt store, `harness.running.journal.prompt_store`); the
prompt names each image (the model's marker, or its hash) and never holds pixels. Its lines are declared once
(`SampleLogLine`): the writer builds them as declared, a reader checks them against the same declaration
(`read_sample_log`, validated by pydantic: `harness.schema`; its JSON Schema is `docs/schemas/sample_log_line.json`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NotRequired

from typing_extensions import TypedDict

from builders.core import contract
from harness import schema
from harness.api import Status
from harness.errors import UserError
from harness.file_writing import read_bytes, write_lines
from harness.models.facts.pricing import tokens_of
from harness.redact import dumps
from harness.running.journal.journal_file import SampleRecord, file_safe
from harness.running.journal.prompt_store import PromptTexts

SAMPLE_LOG_MOST = contract.GiB  # each sample's prompt in full: a 128K task's log is some hundreds of MB


class SampleLogLine(TypedDict):
    """A line of a sample log: lm-eval's fields, then ours. Each metric's value sits beside them under its own
    name, which a TypedDict cannot declare: `sample_line` adds them."""

    doc_id: int
    doc: dict[str, Any]
    target: str
    arguments: dict[str, dict[str, Any]]  # {"gen_args_0": {"arg_0": prompt, "arg_1": generation settings}}
    resps: list[list[str | None]]
    filtered_resps: list[str]
    filter: str
    metrics: list[str]  # the names
    doc_hash: str
    prompt_hash: str
    target_hash: str
    sample_id: str
    status: Status
    error: str | None
    image_sha256: list[str]
    token_count: int | None
    truncation: NotRequired[str]  # JSON text, as every value that is not a number
    text_round_trip: NotRequired[str]
    cluster: NotRequired[list[str]]  # the row's cluster keys (`cluster_key:`): rows sharing one share an item
    sent_images: NotRequired[str]  # each image as its backend sent it (`harness.sent`), as JSON text; `arg_0` the text
    # What the provider's prompt cache was asked (`harness.sent.CacheAsked`), as JSON text, and the prompt tokens the
    # reply reports read from it and written to it
    prompt_cache: NotRequired[str]
    cache_read_tokens: NotRequired[int]
    cache_write_tokens: NotRequired[int]


def hash_string(text: str) -> str:
    """lm-eval's `hash_string`."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sample_log_name(task: str, date_id: str, suffix: str | None = None) -> str:
    """`samples_<task>_<date>.jsonl`, or with lmms-eval's `--log_samples_suffix`, `samples_<task>_<suffix>_<date>`."""
    return f"samples_{file_safe(task)}_{suffix + '_' if suffix else ''}{date_id}.jsonl"


def _value(value: object) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return json.dumps(value, ensure_ascii=False)


def sample_line(record: SampleRecord, doc: Mapping[str, object], settings: Mapping[str, object]) -> SampleLogLine:
    """The sample log's line of a journal record (`harness.running.journal.journal_file.SampleRecord`) and its document."""
    prompt = str(record.get("prompt") or "")
    target = str(record.get("target") or "")
    response = record.get("response")
    raw = record.get("raw_response")  # the whole output, where reasoning tags took its thinking out of `response`
    metrics = record.get("metrics") or {}
    line: SampleLogLine = {  # type: ignore[typeddict-item]  # ours follow lm-eval's, each metric beside them
        "doc_id": record["doc_id"],
        "doc": dict(doc),
        "target": target,
        "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": dict(settings)}},
        "resps": [[raw if raw is not None else response]] if response is not None else [[]],
        "filtered_resps": [response if response is not None else ""],
        "filter": "none",
        "metrics": sorted(metrics),
        "doc_hash": hash_string(json.dumps(doc, indent=2, default=str, ensure_ascii=False)),
        "prompt_hash": hash_string(prompt),
        "target_hash": hash_string(target),
    }
    line.update({name: _value(value) for name, value in metrics.items()})  # type: ignore[typeddict-item]  # by metric name
    line.update(
        {
            "sample_id": record["sample_id"],
            "status": record["status"],
            "error": record.get("error"),
            "image_sha256": record.get("image_sha256") or [],
            "token_count": record.get("token_count"),
        }
    )
    if record.get("truncation"):
        line["truncation"] = _value(record["truncation"])
    if record.get("text_round_trip"):
        line["text_round_trip"] = _value(record["text_round_trip"])
    if record.get("cluster"):
        line["cluster"] = list(record["cluster"])
    if record.get("sent_images") is not None:
        line["sent_images"] = _value(record["sent_images"])
    if record.get("prompt_cache"):
        line["prompt_cache"] = _value(record["prompt_cache"])
    billed = tokens_of(record.get("usage") or {})
    if billed.cached or billed.written:
        line["cache_read_tokens"], line["cache_write_tokens"] = billed.cached, billed.written
    return line


def with_prompt(record: SampleRecord, texts: PromptTexts) -> SampleRecord:
    """`record` with its prompt's text, read from the journal's prompt store by its `prompt_sha256` (a record from
    before the store holds its own)."""
    digest = record.get("prompt_sha256")
    if "prompt" in record or not isinstance(digest, str):
        return record
    text = texts.text(digest)
    return record if text is None else {**record, "prompt": text}


def write_sample_log(path: Path, lines: Iterable[SampleLogLine]) -> Path:
    return write_lines(path, (dumps(line, ensure_ascii=False) for line in lines))


def sample_log_problem(line: object) -> str | None:
    """Why a parsed line of a sample log is not a `SampleLogLine`, or None."""
    if not isinstance(line, dict):
        return f"expected a JSON object, got {type(line).__name__}"
    found = schema.first_error(line, SampleLogLine)
    if found is None:
        return None
    got = "nothing" if found["type"] == "missing" else repr(found["input"])[:60]
    return f"{schema.where(found['loc'])}: expected {schema.expected(found)}, got {got}"


def read_sample_log(path: Path) -> list[SampleLogLine]:
    """A sample log's lines, each checked against `SampleLogLine`; a `UserError` naming the file and line."""
    lines = []
    raw = read_bytes(path, SAMPLE_LOG_MOST, "a sample log")  # as the journal is read: no link, a regular file
    for number, text in enumerate(raw.decode("utf-8", "replace").splitlines(), start=1):
        try:
            line = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as err:
            raise UserError(f"{path}:{number}: not a sample log line: not JSON ({err})") from None
        problem = sample_log_problem(line)
        if problem is not None:
            raise UserError(f"{path}:{number}: not a sample log line: {problem}")
        lines.append(line)
    return lines
