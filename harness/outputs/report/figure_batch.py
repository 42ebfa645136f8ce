"""Drawing a report's figures: once per distinct content, in parallel, and not at all when unchanged.

A report section asks for a figure with `figure(png, draw, *args, dpi=...)`: `draw(*args)` builds a matplotlib
figure, saved as `png` and as the SVG beside it (`figures.save_figure`'s settings). Inside `harness report`
(`figure_batch(...)`) the batch

- keys each figure by its content: a hash of the drawing function, its module's source, the arguments, the
  resolution and matplotlib's version. A figure whose files' names and keys match the last report's (its
  `.report_figures.json` beside the figures) and whose bytes are still those written is left as it is;
- hands every other distinct figure once to a worker process forked from the report's (matplotlib and the
  data already loaded; in a process running other threads, or without fork, they are drawn in process) as soon as
  a section asks for it, so figures are drawn while the report's text is still
  being written; two figures of the same content are drawn once and copied. A figure's PNG and SVG are drawn in one
  job, PNG first, as `save_figure` does: a constrained layout drawn for the PNG places the SVG's axes, so drawing
  the SVG alone would change its bytes. The bytes are those of drawing in process;
- says which figures could not be drawn (the report keeps its text).

Outside a batch (a test calling a section directly) the figure is drawn at once. With `--no_figures` nothing is
drawn and `figure` returns False, so the section leaves its image link out.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import inspect
import json
import multiprocessing
import os
import pickle
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from builders.core import contract
from harness.file_writing import write_bytes
from harness.outputs.report.figures import PNG_DPI, save_figure, vector_path

# What a report folder's earlier figures and their manifest may hold when read back to skip drawing again (the same
# bounds as the viewer's): a figure some hundreds of KB to a few MB, the manifest some 200 KB for thousands.
FIGURE_MOST = 64 * contract.MiB
MANIFEST_MOST = 16 * contract.MiB

MANIFEST = ".report_figures.json"
Draw = Callable[..., Any]


@dataclass(frozen=True)
class Job:
    """One figure to write: `draw(*args)` saved as `png` at `dpi` and as the SVG beside it."""

    png: Path
    draw: Draw
    args: tuple[Any, ...]
    dpi: int

    @property
    def files(self) -> tuple[Path, Path]:
        return self.png, vector_path(self.png)

    def key(self) -> str:
        """What the files' bytes depend on: the drawing code, its inputs, the resolution and matplotlib's version."""
        import matplotlib

        code = (
            self.draw.__module__,
            self.draw.__qualname__,
            _source_digest(self.draw.__module__),
            _source_digest(__name__),
            _source_digest("harness.outputs.report.figures"),
            matplotlib.__version__,
        )
        payload = pickle.dumps((code, self.dpi, self.args), protocol=5)
        return hashlib.sha256(payload).hexdigest()


@cache
def _source_digest(module: str) -> str:
    try:
        return hashlib.sha256(inspect.getsource(sys.modules[module]).encode()).hexdigest()
    except (KeyError, OSError, TypeError):
        return "unknown"  # no source to read: the arguments and matplotlib's version still key the file


def _unchanged(entry: object, key: str, path: Path) -> bool:
    """Whether the last report wrote `path` from the same content and its bytes are still those it wrote."""
    return isinstance(entry, dict) and entry.get("key") == key and entry.get("sha256") == _file_digest(path)


def _file_digest(path: Path) -> str | None:
    """The sha256 of a figure the last report wrote, or None: absent, no regular file (a FIFO planted there is
    never waited on), or past what a figure holds (`FIGURE_MOST`)."""
    try:
        return hashlib.sha256(contract.read_regular(path, FIGURE_MOST, "a figure")).hexdigest()
    except OSError:
        return None


def _write(job: Job) -> str | None:
    """Draw and save one figure (in a worker, or in process); the error as one line, or None."""
    try:
        save_figure(job.draw(*job.args), job.png, job.dpi)
        return None
    except Exception as err:  # one broken figure must not lose the others
        return f"{type(err).__name__}: {err}"


def _forking() -> bool:
    """Whether workers can be forked safely: on Linux, from a process running no other Python thread (a thread
    holding a lock at the fork, such as a server's, would leave the worker's copy of that lock held forever)."""
    return (
        sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
    )


@dataclass
class FigureBatch:
    """The figures one report asks for. Each distinct one not already on disk goes to a worker as soon as it is
    asked for (drawn while the report's text is still being written); `finish` waits for them all."""

    out_dir: Path
    draw: bool = True
    workers: int = 1
    previous: dict[str, Any] = field(default_factory=dict)  # the last report's manifest
    asked: list[tuple[Job, str]] = field(default_factory=list)  # every figure asked for, with its key
    drawing: dict[str, Job] = field(default_factory=dict)  # key -> the job that draws it
    pending: dict[str, Future[str | None]] = field(default_factory=dict)
    pool: ProcessPoolExecutor | None = None

    def __post_init__(self) -> None:
        try:
            previous = json.loads(contract.read_regular(self.out_dir / MANIFEST, MANIFEST_MOST, "a figure manifest"))
            self.previous = previous if isinstance(previous, dict) else {}
        except (OSError, ValueError, RecursionError):  # none, no regular file, not JSON, nested past the parser
            self.previous = {}

    def add(self, png: Path, draw: Draw, args: tuple[Any, ...], dpi: int) -> None:
        job = Job(png, draw, args, dpi)
        key = job.key()
        self.asked.append((job, key))
        if key in self.drawing or all(_unchanged(self.previous.get(path.name), key, path) for path in job.files):
            return
        self.drawing[key] = job
        if self.workers > 1 and _forking():
            # Forked workers start with matplotlib imported and the drawing modules loaded; the bytes are those of
            # drawing in process.
            self.pool = self.pool or ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"))
            self.pending[key] = self.pool.submit(_write, job)

    def finish(self) -> tuple[list[str], dict[str, int]]:
        """Wait for every figure (drawing here those no worker took) and record what was written -> (one line per
        figure that failed, counts: drawn, reused, copied)."""
        errors = {
            key: self.pending[key].result() if key in self.pending else _write(job) for key, job in self.drawing.items()
        }
        self.close()
        failures = [
            f"figure {self.drawing[key].png.name} could not be drawn: {error}" for key, error in errors.items() if error
        ]
        counts = {"drawn": sum(error is None for error in errors.values()), "reused": 0, "copied": 0}
        for job, key in self.asked:
            source = self.drawing.get(key)
            if source is None:
                counts["reused"] += 1
            elif source is not job and errors[key] is None and source.png != job.png:
                for original, target in zip(source.files, job.files, strict=True):
                    write_bytes(target, original.read_bytes())
                counts["copied"] += 1
        manifest = {
            path.name: {"key": key, "sha256": _file_digest(path)} for job, key in self.asked for path in job.files
        }
        manifest = {name: entry for name, entry in sorted(manifest.items()) if entry["sha256"]}
        if manifest != self.previous:
            write_bytes(self.out_dir / MANIFEST, (json.dumps(manifest, indent=1) + "\n").encode("utf-8"))
        return failures, counts

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None


_BATCH: contextvars.ContextVar[FigureBatch | None] = contextvars.ContextVar("figure_batch", default=None)


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


@contextlib.contextmanager
def figure_batch(out_dir: Path, draw: bool = True, workers: int | None = None) -> Iterator[FigureBatch]:
    """Gather the figures asked for inside this block into one batch (wait for them with `batch.finish()`)."""
    batch = FigureBatch(out_dir, draw, available_cpus() if workers is None else max(1, workers))
    token = _BATCH.set(batch)
    try:
        yield batch
    finally:
        _BATCH.reset(token)
        if sys.exc_info()[0] is not None:
            batch.close()  # the report failed: stop drawing its figures


def figure(png: Path, draw: Draw, *args: Any, dpi: int = PNG_DPI) -> bool:
    """Have `draw(*args)` saved as `png` and the SVG beside it: queued into the report's batch, or drawn now
    outside one. False when the report draws no figures (`--no_figures`): leave the image link out."""
    batch = _BATCH.get()
    if batch is None:
        save_figure(draw(*args), png, dpi)
        return True
    if not batch.draw:
        return False
    batch.add(png, draw, args, dpi)
    return True
