"""The per-task journal of finished samples, `journal_<task>.jsonl`: append-only JSONL, fsync'd as it grows.

The first line is a header with the run fingerprint (model identity, generation settings, task config and
version, dataset hash, and the shard of a `--shard i/n` run). A run started again with the same arguments
reads the journal, skips every finished sample and appends the rest; a journal written by a different run
is refused with the parts that differ, never mixed. Reading never ends in a traceback:
- a line cut short by a kill is dropped (a journal holding only a cut header is started afresh: nothing
  was in it);
- any other line that is not a sample record of this task (not JSON, not UTF-8, the wrong shape, a second
  header) is reported once with its `file:line` and skipped: its sample is generated again;
- a header that cannot be read in front of sample records is reported: those records are not trusted.
When a task finishes, the journal is compacted: one line per sample (its latest record), in doc order.

Some header parts only describe the run (`INFO_PARTS`: how many documents the task has under this
`--limit`, which `harness merge` checks against): they are left out of the fingerprint, so raising
`--limit` still resumes, and the header is brought up to date when they change.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from harness.api import FINAL, STATUSES
from harness.errors import TaskConfigError, UserError
from harness.file_writing import open_no_follow, open_text, read_bytes, refuse_link, reporting, write_lines
from harness.redact import dumps, scrub
from harness.running.metrics import sample_value_problem

# Header parts that describe a run without deciding whether its samples can be reused.
INFO_PARTS = frozenset({"task_docs"})


def identity_parts(parts: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in parts.items() if k not in INFO_PARTS}


def fingerprint(parts: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(identity_parts(parts), sort_keys=True, default=str).encode()).hexdigest()[:20]


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _safe(task: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", task)


def journal_name(task: str) -> str:
    return f"journal_{_safe(task)}.jsonl"


def legacy_journal_name(task: str) -> str:
    """Where journals were written before they were named apart from lm-eval's `samples_*` files."""
    return f"samples_{_safe(task)}.jsonl"


@dataclass
class Outcome:
    """What the store keeps in memory per sample: enough to aggregate, not the logged text."""

    doc_id: int
    status: str
    metrics: dict[str, Any] | None
    usage: dict[str, int] | None = None
    input_sha256: str | None = None


def parse_line(line: bytes) -> tuple[Any, str | None]:
    """(the JSON value of one journal line, None), or (None, why it cannot be read). Never raises: a line
    nested too deeply for the parser is as unreadable as one that is not JSON."""
    try:
        return json.loads(line.decode("utf-8")), None
    except UnicodeDecodeError as err:
        return None, f"not UTF-8 ({err.reason} at byte {err.start})"
    except json.JSONDecodeError as err:
        return None, f"not JSON ({err.msg} at column {err.colno})"
    except RecursionError:
        return None, "nested too deeply to read"


def _is_number(value: Any) -> bool:
    return value is None or isinstance(value, bool | int | float)


def metric_value_problem(value: Any) -> str | None:
    """Why `value` is not a metric value the aggregations read, or None: a number (or null), a list of numbers
    (a `[numerator, denominator]` pair) or a list of `[key, number]` pairs (a breakdown by cell, depth, ...)."""
    if _is_number(value):
        return None
    if isinstance(value, list):
        if all(_is_number(item) for item in value):
            return None
        if all(isinstance(item, list) and len(item) == 2 and isinstance(item[0], str | int | float)
               and not isinstance(item[0], bool) and _is_number(item[1]) for item in value):
            return None
        return "a list of other than numbers or [key, number] pairs"
    return f"a {type(value).__name__}"


# Optional fields of a sample record, by the type the harness reads them as.
_OPTIONAL_TEXT = ("response", "error", "input_sha256")


def record_problem(record: Any, task: str, aggregations: Mapping[str, str] | None = None) -> str | None:
    """Why a parsed journal line is not a sample record of `task` the harness can use, or None. `aggregations`
    (metric -> the name of its built-in aggregation) also checks each metric's value has the shape its
    aggregation reads: a breakdown's pairs, a ratio's pair, a mean's number."""
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}"
    if record.get("type") == "header":
        return "a second header"
    if record.get("type") != "sample" or record.get("task") != task:
        return f"not a sample record of task {task!r}"
    doc_id = record.get("doc_id")
    if not isinstance(record.get("sample_id"), str) or not isinstance(doc_id, int) or isinstance(doc_id, bool):
        return "no string sample_id and integer doc_id"
    if record.get("status") not in STATUSES:
        return f"unknown status {record.get('status')!r}"
    for name in _OPTIONAL_TEXT:
        if record.get(name) is not None and not isinstance(record[name], str):
            return f"{name} is a {type(record[name]).__name__}, not a string"
    metrics = record.get("metrics")
    if metrics is not None:
        if not isinstance(metrics, dict):
            return f"metrics is a {type(metrics).__name__}, not an object"
        for name, value in metrics.items():
            problem = metric_value_problem(value)
            if problem:
                return f"metrics.{name} is {problem}, not a number, a list of numbers or a list of [key, number] pairs"
            problem = sample_value_problem(aggregations.get(name, ""), value) if aggregations else None
            if problem:
                return f"metrics.{name}: {problem}"
    usage = record.get("usage")
    if usage is not None and not (isinstance(usage, dict) and all(_is_number(v) for v in usage.values())):
        return "usage is not an object of token counts"
    return None


def _outcome(record: dict[str, Any]) -> Outcome:
    return Outcome(record["doc_id"], record["status"], record.get("metrics"), record.get("usage"),
                   record.get("input_sha256"))


def _warn(message: str) -> None:
    print(f"harness: {message}", file=sys.stderr)


class SampleStore:
    def __init__(self, path: Path | None, task: str, parts: dict[str, Any],
                 aggregations: Mapping[str, str] | None = None) -> None:
        self.path = path
        self.task = task
        self.aggregations = dict(aggregations or {})  # metric -> built-in aggregation (`record_problem`)
        self.parts = parts
        self.fingerprint = fingerprint(parts)
        self.outcomes: dict[str, Outcome] = {}
        self.records: dict[str, dict[str, Any]] = {}  # the latest record per sample, for compaction
        self._lines = 0  # records in the file (superseded and skipped ones too)
        self._file: TextIO | None = None
        if path is None:
            return
        with reporting(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            refuse_link(path)  # a link planted here would have its target truncated and written
            legacy = path.with_name(legacy_journal_name(task))
            if not path.exists() and path.name != legacy.name and legacy.is_file() and not legacy.is_symlink() \
                    and _is_journal(legacy):
                legacy.rename(path)
            if path.exists() and path.stat().st_size and self._read_existing(path):
                self._file = open_text(path, "a")
                return
            self._file = open_text(path, "w")
        self._append([dumps(self._header())])

    def _header(self) -> dict[str, Any]:
        return {"type": "header", "task": self.task, "fingerprint": self.fingerprint, "parts": self.parts}

    def _read_existing(self, path: Path) -> bool:
        """Load a journal; False when it holds nothing but a header cut short (start it afresh)."""
        raw = read_bytes(path)
        if not raw.endswith(b"\n"):
            # The process was killed mid-line: drop the partial record, keep every whole one.
            raw = raw[: raw.rfind(b"\n") + 1]
            fd = open_no_follow(path, os.O_WRONLY)
            try:
                os.ftruncate(fd, len(raw))
            finally:
                os.close(fd)
        lines = raw.split(b"\n")[:-1]
        if not lines:
            return False
        header = self._check_header(path, lines[0], more=len(lines) > 1)
        if header is None:
            return False
        for number, line in enumerate(lines[1:], start=2):
            self._read_record(path, number, line)
        if _canonical(header.get("parts", {})) != _canonical(self.parts):
            # Same run, updated description (e.g. --limit raised): rewrite the header, keep every record.
            write_lines(path, [dumps(self._header()), *(line.decode("utf-8", "replace") for line in lines[1:])])
        return True

    def _check_header(self, path: Path, line: bytes, more: bool) -> dict[str, Any] | None:
        """The header, or None for an unreadable header with nothing behind it (started afresh)."""
        header, unreadable = parse_line(line)
        if unreadable:
            header, problem = {}, f"unreadable ({unreadable})"
        elif not (isinstance(header, dict) and header.get("type") == "header"):
            problem = "not a journal header"
        elif not isinstance(header.get("parts") or {}, dict):
            problem = "a header whose parts are not an object"
        else:
            problem = None
        if problem and not more:
            _warn(f"{path}:1: the journal's header is {problem} and no sample follows it: starting it afresh")
            return None
        if problem:
            raise UserError(f"{path}:1: the journal's header is {problem}, so the sample records after it cannot be "
                            "trusted; delete the file to start this task again")
        if header.get("fingerprint") != self.fingerprint:
            mine, theirs = identity_parts(self.parts), identity_parts(header.get("parts") or {})
            differ = sorted(k for k in set(theirs) | set(mine) if _canonical(theirs.get(k)) != _canonical(mine.get(k)))
            raise UserError(
                f"{path} holds samples of a different run (differs in: {', '.join(differ) or 'fingerprint'}); "
                "refusing to mix them: use another --output_path, or delete the file to start this task again"
            )
        return header

    def _read_record(self, path: Path, number: int, line: bytes) -> None:
        self._lines += 1
        record, problem = parse_line(line)
        if problem is None:
            problem = record_problem(record, self.task, self.aggregations)
        if problem:
            _warn(f"{path}:{number}: skipped an unreadable journal line ({problem}); its sample runs again")
            return
        self.records[record["sample_id"]] = record
        self.outcomes[record["sample_id"]] = _outcome(record)

    def is_done(self, sample_id: str, *, final_only: bool = True) -> bool:
        """Whether a sample is finished; with `final_only=False` any recorded outcome counts, errors
        included (for re-aggregating a finished run without generating anything)."""
        outcome = self.outcomes.get(sample_id)
        return outcome is not None and (outcome.status in FINAL or not final_only)

    def add(self, records: Iterable[dict[str, Any]]) -> None:
        """Append sample records and make them durable before returning. A record that would not be read back
        (a scorer's metric of a shape no aggregation reads) stops the run, naming the task and the sample."""
        lines = []
        for record in records:
            record = {"type": "sample", "task": self.task, "fingerprint": self.fingerprint, **record}
            line = dumps(record, ensure_ascii=False)
            problem = record_problem(json.loads(line), self.task, self.aggregations)
            if problem:
                raise TaskConfigError(f"task {self.task!r}: sample {record.get('sample_id')!r} cannot be journalled: "
                                      f"{problem}")
            self.records[record["sample_id"]] = record
            self.outcomes[record["sample_id"]] = _outcome(record)
            lines.append(line)
        if self._file is not None and lines:
            self._append(lines)
            self._lines += len(lines)

    def _append(self, lines: list[str]) -> None:
        assert self._file is not None and self.path is not None
        with reporting(self.path):
            self._file.write("".join(scrub(line) + "\n" for line in lines))
            self._file.flush()
            os.fsync(self._file.fileno())

    def compact(self) -> None:
        """Rewrite the journal as one line per sample (its latest record), in doc order, when it holds
        superseded or skipped lines (errors retried, unreadable lines)."""
        if self.path is None or self._file is None or self._lines == len(self.records):
            return
        ordered = sorted(self.records.values(), key=lambda r: r["doc_id"])
        self.close()
        write_lines(self.path, [dumps(self._header()), *(dumps(r, ensure_ascii=False) for r in ordered)])
        self._lines = len(ordered)
        with reporting(self.path):
            self._file = open_text(self.path, "a")

    def close(self) -> None:
        """Close the journal. Every record was made durable by `add`; bytes a failed write left buffered belong
        to records that were never journalled (they run again), so a second failure to write them is not news."""
        if self._file is not None:
            handle, self._file = self._file, None
            try:
                handle.close()
            except OSError:
                pass


def _is_journal(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            first, problem = parse_line(f.readline())
    except OSError:
        return False
    return problem is None and isinstance(first, dict) and first.get("type") == "header"
