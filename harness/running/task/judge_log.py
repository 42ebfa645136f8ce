"""`judge_<task>.jsonl`, the judge's outcome of each sample beside the journal (`harness.running.task.judge` writes
it): its name, its writing, and its reading back line by line within bounds (`JudgeLog`: `harness compare`, `harness
merge` and the viewer read it)."""

from __future__ import annotations

import itertools
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Required, TypeGuard

from typing_extensions import TypedDict

from builders.core import contract
from harness import schema
from harness.api import SCORED
from harness.file_writing import write_lines
from harness.redact import dumps
from harness.running.journal.journal_file import file_safe

JudgedValue = float | list[float]  # a judge metric's value on one row: a number, or a list of numbers


def judge_log_name(task: str) -> str:
    return f"judge_{file_safe(task)}.jsonl"


def write_judge_log(path: Path, lines: Iterable[Mapping[str, object]]) -> None:
    """`judge_<task>.jsonl`: every judged sample's outcome (`JudgedSample.to_json`), replaced as a whole each run
    (the replies are in the response cache; this file is for reading, and for `harness merge`)."""
    write_lines(path, (dumps(line, ensure_ascii=False) for line in lines))


class JudgeLogLine(TypedDict, total=False):
    """What a reader takes of a line of `judge_<task>.jsonl` (`JudgedSample.to_json` writes it): the sample, its
    outcome (`judged`, `unparsed`, `error`) and, where judged, the judge's metrics."""

    sample_id: Required[str]
    doc_id: Required[int]
    status: Required[str]
    metrics: dict[str, JudgedValue]


JUDGE_LINE_MOST = 16 * contract.MiB  # a line holds a sample's replies, each within the judge's `max_reply_chars`
JUDGE_LOG_MOST = 1 << 30  # a 128K task's log is a few MB; past 1 GiB a file is no judge log of ours
# The numbers a line's metrics hold: a task's judge declares a few metrics, a list value is a score and its flags. A
# line past it (150,000 metrics made a viewer's 2,000-row table 2.6 GB) is no line of ours.
JUDGE_NUMBERS_MOST = 64


@dataclass
class JudgeLog:
    """`judge_<task>.jsonl` read back line by line, holding none (`harness compare` pairs what two judges decided, the
    viewer joins them to a journal). The file must be a regular one of at most `JUDGE_LOG_MOST` bytes (`OSError` at
    the first line otherwise), and no more than `lines_most` lines are read where given (`cut` then says so).
    Iterating gives each line of `JudgeLogLine`'s shape; a line that is not JSON, too long or of another shape is
    passed by, and one whose metrics hold more than `JUDGE_NUMBERS_MOST` numbers is counted in `past_bound` too:
    its sample has no judge metric there."""

    path: Path
    lines_most: int | None = None
    past_bound: int = 0
    cut: bool = False

    def __iter__(self) -> Iterator[JudgeLogLine]:
        return (line for _, _, line in self.located())

    def located(self) -> Iterator[tuple[int, int, JudgeLogLine]]:
        """Each line as `__iter__` gives it, with its offset and length in the file (to read it again alone)."""
        with contract.open_regular(self.path, most=JUDGE_LOG_MOST, what="a judge log") as handle:
            for read in itertools.count(1):
                offset = handle.tell()
                line = contract.read_line(handle, JUDGE_LINE_MOST)
                if line == b"":
                    return
                if self.lines_most is not None and read > self.lines_most:
                    self.cut = True
                    return
                record = self.judge_line(line)
                if record is not None:
                    yield offset, len(line or b""), record

    def judge_line(self, line: bytes | None) -> JudgeLogLine | None:
        """One line's record (None: past its bound, not JSON, or of another shape), `past_bound` counted."""
        try:
            record = contract.loads_json(line) if line and line.strip() else None
        except (ValueError, RecursionError):  # not JSON or UTF-8, too many digits, nested too deeply
            return None
        if not _is_judge_line(record):
            return None
        if (
            sum(len(v) if isinstance(v, list) else 1 for v in (record.get("metrics") or {}).values())
            > JUDGE_NUMBERS_MOST
        ):
            self.past_bound += 1
            return None
        return record

    def notes(self) -> list[str]:
        """What `past_bound` and `cut` say, one line each."""
        return [
            *(
                [f"{self.past_bound:,} line(s) hold over {JUDGE_NUMBERS_MOST} judge metric values: left out"]
                if self.past_bound
                else []
            ),
            *([f"only its first {self.lines_most:,} lines are read"] if self.cut else []),
        ]


def read_judge_log(path: Path, wanted: Container[str] | None = None) -> dict[str, JudgeLogLine]:
    """`judge_<task>.jsonl` read back (`JudgeLog`): sample id -> its line, for the samples in `wanted` alone where
    given (another sample's line is never held)."""
    return {line["sample_id"]: line for line in JudgeLog(path) if wanted is None or line["sample_id"] in wanted}


def judge_metrics_of(line: JudgeLogLine, doc_id: object, status: object) -> dict[str, JudgedValue]:
    """The judge's metrics a log line adds to the journal's record of its sample (the record's `doc_id` and
    `status`): none where the line is of another document, or the record was not scored (the line is another run's)."""
    if line["doc_id"] != doc_id or status not in SCORED:
        return {}
    return dict(line.get("metrics") or {})


def _is_judge_line(record: object) -> TypeGuard[JudgeLogLine]:
    return isinstance(record, dict) and schema.problem(record, JudgeLogLine) is None
