"""Writing the run's files: whole or not at all, scrubbed of secrets, and failing with one line.

A file written as a whole (results, sample logs, the judge log, a compacted or merged journal) goes to
`<name>.tmp`, is fsync'd and renamed over its target, so a reader sees the old file or the new one, never
half of one. Every text passes `harness.redact.scrub` on its way out. When the disk refuses (read-only,
full, over `ulimit -f`), the temporary file is removed and `OutputError` names the file and the system's
reason; the CLI prints that one line and exits 1, and the same command resumes from the journals, whose
lines were fsync'd as they were written.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.errors import OutputError
from harness.redact import scrub

TMP_SUFFIX = ".tmp"


@contextmanager
def reporting(path: Path) -> Iterator[None]:
    """Turn an `OSError` met while writing `path` into an `OutputError` naming it."""
    try:
        yield
    except OSError as err:
        raise OutputError(path, err) from None


def temporary(path: Path) -> Path:
    return path.with_name(path.name + TMP_SUFFIX)


def write_lines(path: Path, lines: Iterable[str]) -> Path:
    """Write `lines` (each scrubbed, a newline added) to `path` atomically; returns `path`."""
    tmp = temporary(path)
    try:
        with reporting(tmp):
            path.parent.mkdir(parents=True, exist_ok=True)
            with tmp.open("w", encoding="utf-8") as handle:
                for line in lines:
                    handle.write(scrub(line) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            tmp.replace(path)
    except BaseException:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # nothing could be created there either
        raise
    return path


def write_text(path: Path, text: str) -> Path:
    """Write `text` (scrubbed) to `path` atomically; returns `path`."""
    return write_lines(path, [text.removesuffix("\n")])
