"""The per-task journal of finished samples: append-only JSONL, fsync'd after every batch.

The first line is a header with the run fingerprint (model identity, generation settings, task
config and version, dataset hash, and the shard of a `--shard i/n` run). A run started again with the
same arguments reads the journal, skips every finished sample and appends the rest; a journal written
by a different run is refused with the parts that differ, never mixed. A line cut short by a kill is
dropped on reopening.

Some header parts only describe the run (`INFO_PARTS`: how many documents the task has under this
`--limit`, which `harness merge` checks against): they are left out of the fingerprint, so raising
`--limit` still resumes, and the header is brought up to date when they change.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import UserError

OK = "ok"
EMPTY = "empty"  # an empty answer: scored as the official scorers do (a wrong answer), and counted
OVER_LENGTH = "over_length"
TOO_MANY_IMAGES = "too_many_images"
INVALID_INPUT = "invalid_input"
REFUSED = "refused"
ERROR = "error"
SCORED = frozenset({OK, EMPTY})
# Errors (timeouts, decode failures, OOM) are tried again when the run is resumed; all else is final.
FINAL = frozenset({OK, EMPTY, OVER_LENGTH, TOO_MANY_IMAGES, INVALID_INPUT, REFUSED})
STATUSES = (OK, EMPTY, OVER_LENGTH, TOO_MANY_IMAGES, INVALID_INPUT, REFUSED, ERROR)
# Header parts that describe a run without deciding whether its samples can be reused.
INFO_PARTS = frozenset({"task_docs"})


def identity_parts(parts: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in parts.items() if k not in INFO_PARTS}


def fingerprint(parts: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(identity_parts(parts), sort_keys=True, default=str).encode()).hexdigest()[:20]


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def journal_name(task: str) -> str:
    return "samples_" + re.sub(r"[^A-Za-z0-9_.-]+", "_", task) + ".jsonl"


@dataclass
class Outcome:
    """What the store keeps in memory per sample: enough to aggregate, not the logged text."""

    doc_id: int
    status: str
    metrics: dict[str, Any] | None
    usage: dict[str, int] | None = None


class SampleStore:
    def __init__(self, path: Path | None, task: str, parts: dict[str, Any]) -> None:
        self.path = path
        self.task = task
        self.parts = parts
        self.fingerprint = fingerprint(parts)
        self.outcomes: dict[str, Outcome] = {}
        self._file = None
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size:
            self._read_existing(path)
            self._file = path.open("a", encoding="utf-8")
        else:
            self._file = path.open("w", encoding="utf-8")
            header = {"type": "header", "task": task, "fingerprint": self.fingerprint, "parts": parts}
            self._file.write(json.dumps(header, default=str) + "\n")
            self._sync()

    def _read_existing(self, path: Path) -> None:
        raw = path.read_bytes()
        if not raw.endswith(b"\n"):
            # The process was killed mid-line: drop the partial record, keep every whole one.
            cut = raw.rfind(b"\n") + 1
            with path.open("r+b") as f:
                f.truncate(cut)
            raw = raw[:cut]
        lines = raw.decode("utf-8").splitlines()
        if not lines:
            raise UserError(f"{path}: journal has no header line; delete it to start this task again")
        header = json.loads(lines[0])
        if header.get("type") != "header":
            raise UserError(f"{path}: first line is not a journal header; delete the file to start again")
        old = header.get("parts", {})
        if header.get("fingerprint") != self.fingerprint:
            mine = identity_parts(self.parts)
            theirs = identity_parts(old)
            differ = sorted(k for k in set(theirs) | set(mine) if _canonical(theirs.get(k)) != _canonical(mine.get(k)))
            raise UserError(
                f"{path} holds samples of a different run (differs in: {', '.join(differ) or 'fingerprint'}); "
                "refusing to mix them: use another --output_path, or delete the file to start this task again"
            )
        for number, line in enumerate(lines[1:], start=2):
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise UserError(f"{path}:{number}: unreadable journal line ({err}); delete the file to start again") from None
            self.outcomes[record["sample_id"]] = Outcome(record["doc_id"], record["status"], record.get("metrics"),
                                                         record.get("usage"))
        if _canonical(old) != _canonical(self.parts):
            # Same run, updated description (e.g. --limit raised): rewrite the header, keep every record.
            header = {"type": "header", "task": self.task, "fingerprint": self.fingerprint, "parts": self.parts}
            tmp = path.with_name(path.name + ".tmp")
            with tmp.open("w", encoding="utf-8") as f:
                f.write("\n".join([json.dumps(header, default=str), *lines[1:]]) + "\n")
                f.flush()
                os.fsync(f.fileno())
            tmp.replace(path)

    def is_done(self, sample_id: str, *, final_only: bool = True) -> bool:
        """Whether a sample is finished; with `final_only=False` any recorded outcome counts, errors
        included (for re-aggregating a finished run without generating anything)."""
        outcome = self.outcomes.get(sample_id)
        return outcome is not None and (outcome.status in FINAL or not final_only)

    def add(self, records: Iterable[dict[str, Any]]) -> None:
        """Append one batch of sample records and make them durable before returning."""
        lines = []
        for record in records:
            record = {"type": "sample", "task": self.task, "fingerprint": self.fingerprint, **record}
            self.outcomes[record["sample_id"]] = Outcome(record["doc_id"], record["status"], record.get("metrics"),
                                                         record.get("usage"))
            lines.append(json.dumps(record, default=str, ensure_ascii=False) + "\n")
        if self._file is not None and lines:
            self._file.write("".join(lines))
            self._sync()

    def _sync(self) -> None:
        assert self._file is not None
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
