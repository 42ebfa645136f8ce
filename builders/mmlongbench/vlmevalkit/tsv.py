"""A VLMEvalKit TSV read record by record: what `pd.read_csv(path, sep='\\t')` (VLMEvalKit's `load`) reads, streamed
within bounds, every field kept as its text.

The file is `DataFrame.to_csv(sep='\\t', index=False)`'s (`build_mmlongbench_tsv.py:609`): a header line, then one
record per row, a field holding a tab, a quote or a newline (every `question`) quoted with `"` and its quotes doubled.
Python's `csv` reads that dialect as pandas does. Pandas would also type each column (a column of integers becomes
int64, an empty field NaN); nothing here depends on that: the typed gold is `extra_info`'s JSON, as VLMEvalKit's
scorer reads it (`mmlongbench.py:280-282`).
"""

from __future__ import annotations

import contextlib
import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from builders.core.errors import BuildError
from builders.core.release_bounds import bounded_lines, check_size, open_release_file
from builders.mmlongbench.bounds import TSV_FIELD, TSV_FILE, TSV_LINES, TSV_RECORDS

# `make_tsv_row` (build_mmlongbench_tsv.py:201-215) writes these; `question_type` and `tags` are not read.
REQUIRED_COLUMNS = (
    "index",
    "question_id",
    "question",
    "answer",
    "image_path",
    "mmlb_subset",
    "task",
    "source_dataset",
    "extra_info",
)


@dataclass(frozen=True)
class Record:
    """One TSV row: its 0-based place among the file's rows (VLMEvalKit's `row_id`, `mmlongbench.py:365`), the line
    it starts on, and its fields by column."""

    position: int
    line: int
    fields: dict[str, str]


@contextlib.contextmanager
def _field_limit(limit: int) -> Iterator[None]:
    # csv's field limit is the interpreter's (131,072 characters by default, far below a 128K row's text)
    previous = csv.field_size_limit(limit)
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def _text_lines(path: Path, name: str) -> Iterator[str]:
    with open_release_file(path, name) as handle:
        check_size(handle, TSV_FILE, name)
        for number, raw in bounded_lines(handle.readline, TSV_LINES, name, TSV_FILE):
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise BuildError(
                    f"{name}:{number}: not UTF-8 text ({exc.reason} at byte {exc.start} of the line)"
                ) from None


def read_records(path: Path, name: str) -> Iterator[Record]:
    """The TSV's records in file order; a file without the columns VLMEvalKit reads, a record with another number of
    fields than the header, one past the bounds, or an `index` a record before holds (VLMEvalKit keys its rows and
    predictions by it) is a `BuildError` naming `name` and the line."""
    with _field_limit(TSV_FIELD):
        reader = csv.reader(_text_lines(path, name), delimiter="\t", quotechar='"', doublequote=True, strict=True)
        try:
            header = next(reader, None)
        except csv.Error as exc:
            raise BuildError(f"{name}:1: not a TSV header ({exc})") from None
        if header is None:
            raise BuildError(f"{name}: an empty file, not a TSV of VLMEvalKit's MMLongBench sets")
        missing = [column for column in REQUIRED_COLUMNS if column not in header]
        if missing:
            raise BuildError(
                f"{name}:1: the header lacks {', '.join(missing)} (VLMEvalKit's MMLongBench TSVs have "
                f"{', '.join(REQUIRED_COLUMNS)}, ...); got {', '.join(header)[:200]}"
            )
        position = 0
        first_line: dict[str, int] = {}  # index -> the line of the record holding it
        while True:
            line = reader.line_num + 1
            try:
                values = next(reader, None)
            except csv.Error as exc:
                raise BuildError(f"{name}:{line}: not a TSV record ({exc})") from None
            if values is None:
                break
            if not values:  # a blank line
                continue
            if len(values) != len(header):
                raise BuildError(f"{name}:{line}: {len(values)} fields, the header names {len(header)}")
            if position >= TSV_RECORDS:
                raise BuildError(f"{name}: more than {TSV_RECORDS:,} rows, more than any of these TSVs holds; not read")
            fields = dict(zip(header, values, strict=True))
            index = fields["index"]
            if index in first_line:
                raise BuildError(
                    f"{name}: index {index[:40]!r} twice, the records of lines {first_line[index]} and {line}; "
                    "VLMEvalKit keys a row by its index"
                )
            first_line[index] = line
            yield Record(position, line, fields)
            position += 1
