"""Which files of the results folder the viewer may open, and how it opens and reads them.

A URL names a file (`inside`): a relative path that stays inside the folder once every link is followed, of a kind
the viewer shows; anything else is answered 404, never read. A file the viewer found itself (a results file, a
journal, a sample log) is opened only where it resolves inside the folder too (`contained`). Every file is opened
without blocking and read only when it is a regular file (`contract.open_regular`, the builders' and the harness's
one opener): a FIFO, a socket or a device planted under a file's name is refused at once instead of holding the
request (and the server's shutdown) forever. No file is read whole without a bound: `contract.read_regular(path,
REPORT_MOST, "a report")` (the bounds below, one per kind of file; past it `FileTooLarge`, whose message is the one
line a page says) or line by line, each line within `LINE_MOST` (`contract.read_line`: a longer one is skipped in
bounded memory). A page added to the viewer reads its files through these two.
"""

from __future__ import annotations

import stat
from pathlib import Path, PurePosixPath

from builders.core import contract

# What the report links and the viewer shows: its figures and its text.
SERVED = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".svg": "image/svg+xml",
    ".md": "text/plain; charset=utf-8",
}

# What the viewer reads of a results folder, each file within a bound (a file past it is one line on its page, never
# read): a report of every metric of many models is some hundreds of KB; a figure (PNG or SVG) some hundreds of KB to
# a few MB; a figure manifest of thousands of figures some 200 KB; a journal's or a sample log's line holds one
# sample's record (a sample log's, and a journal's from before the prompt store, its prompt: a 128K-token prompt is
# some 0.5-1.2 MB of JSON); a journal's header its run's parts (a few KB). Journals, sample logs and prompt stores are
# read line by line, never whole.
REPORT_MOST = 16 * contract.MiB
FIGURE_MOST = 64 * contract.MiB
FIGURE_MANIFEST_MOST = 16 * contract.MiB
LINE_MOST = 64 * contract.MiB
HEADER_MOST = 1 * contract.MiB
JOURNAL_LINES_MOST = 2_000_000  # a journal's lines indexed: 20 times the 100,000 samples of a large run
# The metric columns an index makes (a task reports a few metrics, its judge a few more; each column is 8 bytes a
# row): a metric past them is shown on its samples' pages alone.
METRICS_MOST = 64


def inside(root: Path, relative: str) -> Path | None:
    """The file `relative` names under `root`, or None: absolute, `..`, a NUL, a backslash, a link (anywhere on the
    way) that leads out of `root`, not a regular file, or not a kind in `SERVED`."""
    if not relative or "\x00" in relative or "\\" in relative:
        return None
    pure = PurePosixPath(relative)
    if (
        pure.is_absolute()
        or any(part in ("..", "") for part in relative.split("/"))
        or pure.suffix.lower() not in SERVED
    ):
        return None
    return contained(root, root / pure)


def contained(root: Path, path: Path) -> Path | None:
    """`path` with every link followed, when that is a regular file inside `root`; else None."""
    if "\x00" in str(path):
        return None
    try:
        base = root.resolve()
        target = path.resolve(strict=True)
        if not target.is_relative_to(base) or not stat.S_ISREG(target.stat().st_mode):
            return None
    except (OSError, RuntimeError, ValueError):  # gone, a loop of links, a name the system refuses
        return None
    return target


def refusal(err: OSError) -> str:
    """The one line an `OSError` of `contract.open_regular` or `contract.read_regular` says, without the folder's own path."""
    name = Path(err.filename).name if err.filename else "the file"
    return f"{name}: {err.strerror or err}"
