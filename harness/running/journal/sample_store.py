"""The per-task journal of finished samples, `journal_<task>.jsonl`: append-only JSONL, fsync'd as it grows, its lines
in `harness.running.journal.journal_file`'s format.

The first line is a header with the run fingerprint (what decides the replies: `harness.running.journal.journal_file`). A run
started again with the same arguments reads the journal, skips every finished sample and appends the rest; a journal
written by a different run is refused with the parts that differ, never mixed. One from before issue 99, whose data
is recorded as the build manifest's content hash, is this run's where the rows it reads hash to that (`same_data`):
its header and records are then written anew under this run's fingerprint. A journal whose only difference is the task's scoring (its
metrics, scorer, aggregations: the header's `scoring` part), or one from before that part was recorded, is reused and
its replies scored again (`rescoring`: the reason; each stored reply's metrics are dropped, the run scores them and
compaction writes the new header, so a run killed before then rescores again). Reading never ends in a traceback:
- a line cut short by a kill is dropped (a journal holding only a cut header is started afresh: nothing
  was in it);
- any other line that is not a sample record of this task (not JSON, not UTF-8, the wrong shape, a second
  header) is reported once with its `file:line` and skipped: its sample is generated again;
- a header that cannot be read in front of sample records is reported: those records are not trusted.
When a task finishes, the journal is compacted: one line per sample (its latest record), in doc order.

Some header parts only describe the run (`harness.running.journal.journal_file.INFO_PARTS`: how many documents the task has
under this `--limit`, which `harness merge` checks against): they are left out of the fingerprint, so raising
`--limit` still resumes, and the header is brought up to date when they change.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from builders.core import contract
from harness.api import FINAL, SCORED
from harness.errors import TaskConfigError, UserError
from harness.file_writing import (
    close_appended,
    open_text,
    read_whole_lines,
    refuse_irregular,
    reporting,
    write_lines,
)
from harness.redact import scrub
from harness.running.journal.journal_file import (
    SCORING_PART,
    JournalHeader,
    SampleRecord,
    canonical,
    fingerprint,
    header_line,
    header_problem,
    legacy_journal_name,
    make_header,
    metrics_change,
    parse_line,
    record_line,
    record_problem,
    scoring_change,
    sent_parts,
    stamped,
)
from harness.running.journal.prompt_store import PromptStore, PromptTexts, prompts_name

HEADER_MOST = 16 * contract.MiB  # a header holds the task's settings: a few KB


@dataclass
class Outcome:
    """What the store keeps in memory per sample: enough to aggregate, not the logged text."""

    doc_id: int
    status: str
    metrics: dict[str, Any] | None
    usage: dict[str, int] | None = None
    input_sha256: str | None = None


def _outcome(record: SampleRecord) -> Outcome:
    return Outcome(
        record["doc_id"], record["status"], record.get("metrics"), record.get("usage"), record.get("input_sha256")
    )


def _warn(message: str) -> None:
    print(f"harness: {message}", file=sys.stderr)


class SampleStore:
    def __init__(
        self,
        path: Path | None,
        task: str,
        parts: dict[str, Any],
        aggregations: Mapping[str, str] | None = None,
        same_data: Callable[[object], str | None] | None = None,
    ) -> None:
        """`same_data(recorded)`: None where a journal's data fingerprint (its `task.dataset`) names this run's data,
        "" where it names other data, else why its form before issue 99 is not shown to be this run's
        (`harness.inputs.content_hash.earlier_data`)."""
        self.path = path
        self.task = task
        self.same_data = same_data
        self._upgraded = False  # the journal's data was recorded in the earlier form and shown to be this run's
        self.aggregations = dict(aggregations or {})  # metric -> built-in aggregation (`record_problem`)
        self.parts = parts
        self.fingerprint = fingerprint(parts)
        self.outcomes: dict[str, Outcome] = {}
        self.records: dict[str, SampleRecord] = {}  # the latest record per sample, for compaction
        self._lines = 0  # records in the file (superseded and skipped ones too)
        self._file: TextIO | None = None
        self.rescoring: str | None = None  # why the journal's replies are scored again (`scoring_change`), or None
        self._legacy = False  # the journal's header has no scoring part: its records' metrics say what was scored
        self._stored_metrics: set[str] = set()
        # each record's prompt text, kept once per distinct text beside the journal (`prompt_sha256` in the record)
        self.prompts = PromptStore(path.with_name(prompts_name(path.name)) if path is not None else None)
        if path is None:
            return
        with reporting(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            refuse_irregular(path)  # a link's target would be truncated and written; a FIFO would hang the run
            legacy = path.with_name(legacy_journal_name(task))
            if (
                not path.exists()
                and path.name != legacy.name
                and legacy.is_file()
                and not legacy.is_symlink()
                and _is_journal(legacy)
            ):
                legacy.rename(path)
            if path.exists() and path.stat().st_size and self._read_existing(path):
                self._file = open_text(path, "a")
                return
            self._file = open_text(path, "w")
        self._append([header_line(self._header())])

    def _header(self) -> JournalHeader:
        return make_header(self.task, self.parts)

    def _read_existing(self, path: Path) -> bool:
        """Load a journal; False when it holds nothing but a header cut short (start it afresh)."""
        raw = read_whole_lines(path)  # killed mid-line: the partial record goes, every whole one stays
        lines = raw.split(b"\n")[:-1]
        if not lines:
            return False
        header = self._check_header(path, lines[0], more=len(lines) > 1)
        if header is None:
            return False
        for number, line in enumerate(lines[1:], start=2):
            self._read_record(path, number, line)
        if self._legacy and self._stored_metrics:  # the metrics its records hold: which ones the task added or removed
            said = metrics_change(sorted(self._stored_metrics), self.parts[SCORING_PART]["metrics"])
            self.rescoring = "; ".join(filter(None, [self.rescoring, said]))
        if self._upgraded and self.rescoring is None:  # stamped as this run's, the header naming the data as now
            ordered = sorted(self.records.values(), key=lambda r: r["doc_id"])
            write_lines(path, [header_line(self._header()), *(record_line(r) for r in ordered)])
            self._lines = len(ordered)
        elif self.rescoring is None and canonical(header.get("parts", {})) != canonical(self.parts):
            # Same run, updated description (e.g. --limit raised): rewrite the header, keep every record.
            write_lines(path, [header_line(self._header()), *(line.decode("utf-8", "replace") for line in lines[1:])])
        return True

    def _check_header(self, path: Path, line: bytes, more: bool) -> dict[str, Any] | None:
        """The header, or None for an unreadable header with nothing behind it (started afresh)."""
        header, unreadable = parse_line(line)
        problem = f"unreadable ({unreadable})" if unreadable else header_problem(header)
        if problem and not more:
            _warn(f"{path}:1: the journal's header is {problem} and no sample follows it: starting it afresh")
            return None
        if problem:
            raise UserError(
                f"{path}:1: the journal's header is {problem}, so the sample records after it cannot be "
                "trusted; delete the file to start this task again"
            )
        recorded = header.get("parts") or {}
        parts, data = self._data_shown(recorded)
        upgraded = parts is not recorded and fingerprint(parts) == self.fingerprint
        legacy = SCORING_PART not in parts and SCORING_PART in self.parts
        if header.get("fingerprint") != self.fingerprint and not upgraded:
            mine, theirs = sent_parts(self.parts, legacy), sent_parts(parts, legacy)
            differ = sorted(k for k in set(theirs) | set(mine) if canonical(theirs.get(k)) != canonical(mine.get(k)))
            if legacy and not differ:
                self.rescoring = scoring_change(None, self.parts[SCORING_PART])
                self._legacy = True
                return header
            said = ", ".join(_named(k, theirs, mine) for k in differ) or "fingerprint"
            raise UserError(
                f"{path} holds samples of a different run (differs in: {said}){f'; {data}' if data else ''}; "
                "refusing to mix them: use another --output_path, or delete the file to start this task again"
            )
        self._upgraded = upgraded
        self.rescoring = scoring_change(parts.get(SCORING_PART), self.parts.get(SCORING_PART))
        return header

    def _data_shown(self, parts: Mapping[str, object]) -> tuple[Mapping[str, object], str | None]:
        """The journal's `parts`, its data named as this run names it where its earlier form is shown to be this run's
        data (`same_data`); else as they are, and why its data is not shown to be this run's (None: the same)."""
        theirs, mine = parts.get("task"), self.parts.get("task")
        if not isinstance(theirs, dict) or not isinstance(mine, dict) or theirs.get("dataset") == mine.get("dataset"):
            return parts, None
        why = self.same_data(theirs.get("dataset")) if self.same_data is not None else ""
        if why is not None:
            return parts, why or None
        return {**parts, "task": {**theirs, "dataset": mine.get("dataset")}}, None

    def _read_record(self, path: Path, number: int, line: bytes) -> None:
        self._lines += 1
        record, problem = parse_line(line)
        if problem is None:  # metrics to be scored again are not checked against the aggregations they were not for
            problem = record_problem(record, self.task, None if self.rescoring else self.aggregations)
        if problem:
            _warn(f"{path}:{number}: skipped an unreadable journal line ({problem}); its sample runs again")
            return
        if self._upgraded:  # the same run's, under the fingerprint its data now gives it
            record["fingerprint"] = self.fingerprint
        if self.rescoring and record["status"] in SCORED:
            self._stored_metrics.update(record.get("metrics") or {})
            record["metrics"] = None  # scored again by the run (`Runner._score_unscored`)
        self.records[record["sample_id"]] = record
        self.outcomes[record["sample_id"]] = _outcome(record)

    def is_done(self, sample_id: str, *, final_only: bool = True) -> bool:
        """Whether a sample is finished; with `final_only=False` any recorded outcome counts, errors
        included (for re-aggregating a finished run without generating anything)."""
        outcome = self.outcomes.get(sample_id)
        return outcome is not None and (outcome.status in FINAL or not final_only)

    def add(self, records: Iterable[SampleRecord]) -> None:
        """Append sample records and make them durable before returning. A record that would not be read back
        (a scorer's metric of a shape no aggregation reads) stops the run, naming the task and the sample."""
        lines = []
        for record in records:
            record = self._text_stored(record)
            record = stamped(self.task, self.fingerprint, record)
            line = record_line(record)
            problem = record_problem(json.loads(line), self.task, self.aggregations)
            if problem:
                raise TaskConfigError(
                    f"task {self.task!r}: sample {record.get('sample_id')!r} cannot be journalled: {problem}"
                )
            self.records[record["sample_id"]] = record
            self.outcomes[record["sample_id"]] = _outcome(record)
            lines.append(line)
        self.prompts.flush()  # a record's text is durable before the record
        if self._file is not None and lines:
            self._append(lines)
            self._lines += len(lines)

    def _text_stored(self, record: SampleRecord) -> SampleRecord:
        """`record` naming its prompt by `prompt_sha256`, the text queued in the prompt store."""
        text = record.get("prompt")
        if not isinstance(text, str):
            return record
        kept = {k: v for k, v in record.items() if k != "prompt"}
        return {**kept, "prompt_sha256": self.prompts.put(text)}  # type: ignore[typeddict-item]

    def lacks_text(self, sample_id: str) -> bool:
        """Whether a finished sample's record names a prompt text its store does not hold, checked (a chunk of it
        missing, altered or past its bound): `mend_text` writes it anew from its request."""
        digest = self.records[sample_id].get("prompt_sha256")
        return isinstance(digest, str) and self.prompts.lacks(digest)

    def mend_text(self, sample_id: str, text: str | None) -> None:
        """The text of a finished sample that its store lacks, rendered again from its request (`text`; None where
        no request could be built), stored under the name its record holds where it hashes to it (`PromptStore.mend`);
        the store says once what it mended (`PromptStore.say`)."""
        digest = self.records[sample_id].get("prompt_sha256")
        if isinstance(digest, str) and text is not None:
            self.prompts.mend(digest, text)

    def prompt_texts(self) -> PromptTexts:
        """The texts the prompt store holds (to export the records with their prompts: `--log_samples`)."""
        return PromptTexts.at(self.prompts.path) if self.prompts.path is not None else PromptTexts()

    def _append(self, lines: list[str]) -> None:
        assert self._file is not None and self.path is not None
        with reporting(self.path):
            self._file.write("".join(scrub(line) + "\n" for line in lines))
            self._file.flush()
            os.fsync(self._file.fileno())

    def compact(self) -> None:
        """Rewrite the journal as one line per sample (its latest record), in doc order, when it holds
        superseded or skipped lines (errors retried, unreadable lines)."""
        if self.path is None or self._file is None or (self._lines == len(self.records) and not self.rescoring):
            return
        ordered = sorted(self.records.values(), key=lambda r: r["doc_id"])
        self.close()
        write_lines(self.path, [header_line(self._header()), *(record_line(r) for r in ordered)])
        self._lines = len(ordered)
        self.rescoring = None  # the header says the task's scoring now, the records hold no other
        with reporting(self.path):
            self._file = open_text(self.path, "a")

    def close(self) -> None:
        """Close the journal. Every record was made durable by `add`; bytes a failed write left buffered belong
        to records that were never journalled (they run again), so a second failure to write them is not news."""
        self.prompts.close()
        if self._file is not None:
            handle, self._file = self._file, None
            close_appended(handle)


def _named(part: str, theirs: Mapping[str, object], mine: Mapping[str, object]) -> str:
    """A differing header part as a refusal names it: `data` for a task part that differs in its data alone."""
    task_a, task_b = theirs.get(part), mine.get(part)
    if part == "task" and isinstance(task_a, dict) and isinstance(task_b, dict):
        if {**task_a, "dataset": None} == {**task_b, "dataset": None}:
            return "data"
    return part


def _is_journal(path: Path) -> bool:
    """Whether `path` (an older version's journal name) starts with a journal header: read as the journal is, a
    regular file through no link, its first line within `HEADER_MOST` bytes (a FIFO or a huge line: not one)."""
    try:
        with contract.open_regular(path, follow=False) as f:
            line = f.readline(HEADER_MOST + 1)  # the rest of a longer line is never read
    except OSError:
        return False
    if len(line) > HEADER_MOST:
        return False
    first, problem = parse_line(line)
    return problem is None and isinstance(first, dict) and first.get("type") == "header"
