"""A task's rows and their life: read (verified) a piece at a time, `process_docs`'d and cut to `--limit` as they are
read (`read_docs`), counted, let go of, and held again for the span of a block (`rows`): a run holds the documents it
uses, not its split. A task's documents are read only while its rows are held: nothing reads the whole split again
behind its caller's back.

Documents are read without their image columns; each request's images are `ImageRef`s whose `load` copies one image's
bytes out of its Parquet row group when the batch that holds it runs.

Rows a task leaves out of its build under its metadata: a task whose `process_docs` keeps some of its config's rows by
a metadata setting (MMNeedle's `subset: paper`: the first 1,000 or 100 of each polarity, the paper's evaluated subset)
names, as `metadata.all_rows`, the metadata that keeps every row (`{subset: full}`). As it reads the rows, the harness
runs `process_docs` under it as well: a build that holds more (a `--full` build) is said in one line before the run
(`left_out_line`), recorded in the results (`datasets[task].rows_left_out`) and shown by `harness report`. `all_rows`
only describes the task: it is left out of the task's identity, so journals written before it was declared still
resume.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from harness.config.task_config import TaskConfig
from harness.config.yaml_loader import FunctionRef
from harness.errors import UserError
from harness.inputs.data import LoadedDataset, load_task_dataset
from harness.inputs.parquet_split import SOURCE_ROW, ImageColumn, SharedImageColumn
from harness.running.task.hook import TaskHook, TaskHookError
from harness.running.task.process_docs import RowDecoder, processed, row_decoder, takes_table

ALL_ROWS = "all_rows"  # the metadata key naming the metadata under which the task scores every row


@dataclass(frozen=True)
class RowsLeftOut:
    """A task that scores `scored` of the `held` rows it would score under its `all_rows` metadata."""

    scored: int
    held: int
    all_with: str  # the flag that scores them all: `--metadata '{"subset": "full"}'`

    def record(self) -> dict[str, Any]:
        return {"scored": self.scored, "held": self.held, "all_with": self.all_with}


@dataclass(frozen=True)
class Counted:
    """What a reading of all of a task's rows learned: how many `process_docs` keeps (lm-eval's `original`), and how
    many it keeps under the task's `all_rows` metadata (None: it declares none, or the run asks for them all)."""

    kept: int
    held: int | None

    def left_out(self, metadata: Mapping[str, object]) -> RowsLeftOut | None:
        """What the task leaves out of its build's rows; None when it keeps all it could."""
        wanted = metadata.get(ALL_ROWS)
        if self.held is None or self.held <= self.kept or not isinstance(wanted, Mapping):
            return None
        return RowsLeftOut(self.kept, self.held, f"--metadata '{json.dumps(dict(wanted))}'")


def all_rows_metadata(process_docs: TaskHook | None, metadata: Mapping[str, object]) -> dict[str, object] | None:
    """The metadata under which `process_docs` keeps every row it could (`metadata.all_rows` over `metadata`); None
    where the task declares none, or the run's metadata is that already (`--metadata '{"subset": "full"}'`)."""
    wanted = metadata.get(ALL_ROWS)
    if process_docs is None or not isinstance(wanted, Mapping):
        return None
    every = {**metadata, **wanted}
    return None if every == dict(metadata) else every


def limited(limit: float | None, rows: int | None) -> int | None:
    """How many documents `--limit` keeps of `rows` (a count, or a fraction of them); None: all, or not known yet."""
    if limit is None:
        return None
    if 0 < limit < 1:
        return None if rows is None else int(math.ceil(rows * limit))
    return int(limit)


def read_docs(
    hook: TaskHook | None,
    data: LoadedDataset,
    metadata: Mapping[str, object],
    limit: float | None,
    known: Counted | None,
) -> tuple[pa.Table, Counted]:
    """The documents of `data`'s split: the rows `process_docs` (`hook`) keeps, the first `limit` of them (`--limit`),
    and their count (`known`: counted by an earlier reading of the same files, so that this one reads only as far as
    the documents it keeps).

    A hook of the pyarrow Table contract (`takes_table`) is given the rows a piece at a time as they are read (it keeps
    or drops each row by what it holds: a task's filter), and only the documents it keeps, up to the limit, are held;
    a hook of lm-eval's contract is given the whole split as one Dataset."""
    every = all_rows_metadata(hook, metadata)
    if hook is not None and not takes_table(inspect.unwrap(hook)):
        rows = pa.concat_tables(data.batches())
        docs = processed(hook, rows, metadata, data.fingerprint)
        held = known.held if known else processed(hook, rows, every, data.fingerprint).num_rows if every else None
        return docs.slice(0, limited(limit, docs.num_rows)), Counted(docs.num_rows, held)
    assert data.split is not None
    wanted = limited(limit, known.kept if known else data.split.num_rows if hook is None else None)
    pieces: list[pa.Table] = []
    have = kept = held = 0
    for rows in data.batches():
        piece = rows if hook is None else processed(hook, rows, metadata, data.fingerprint)
        if not pieces or wanted is None or have < wanted:
            pieces.append(piece if wanted is None else piece.slice(0, wanted - have))
            have += pieces[-1].num_rows
        kept += piece.num_rows
        if every is not None and known is None:
            held += processed(hook, rows, every, data.fingerprint).num_rows  # type: ignore[arg-type]
        elif wanted is not None and have >= wanted and (known is not None or hook is None):
            break  # the rows after these are neither documents nor counted
    counted = known or Counted(kept if hook is not None else data.split.num_rows, held if every is not None else None)
    try:
        docs = pa.concat_tables(pieces)
    except pa.ArrowInvalid:
        assert hook is not None  # the split's own pieces share their columns
        raise hook.wrong((data,), "returned other columns for a later piece of the split than for its first") from None
    return docs.slice(0, limited(limit, counted.kept)), counted


def left_out_line(tasks: Sequence[tuple[str, RowsLeftOut]]) -> list[str]:
    """One line per way of scoring all rows: the tasks that leave rows out and what they score."""
    lines = []
    for all_with in dict.fromkeys(left.all_with for _, left in tasks):
        named = [(name, left) for name, left in tasks if left.all_with == all_with]
        shown = ", ".join(f"{name} {left.scored:,} of {left.held:,}" for name, left in named[:3])
        more = f" and {len(named) - 3} more tasks" if len(named) > 3 else ""
        subject = "a task scores" if len(named) == 1 else f"{len(named)} tasks score"
        lines.append(
            f"harness: {subject} fewer rows than the build holds for them, as their metadata picks ({shown}{more}); "
            f"{all_with} scores all of them"
        )
    return lines


class TaskRows:
    """The rows of one task (see the module's docstring)."""

    def __init__(self, config: TaskConfig, metadata: Mapping[str, object], hooks: dict[str, TaskHook]) -> None:
        self.config = config
        self.name = config.task
        self.metadata = metadata
        self.hooks = hooks
        self.data: LoadedDataset | None = None
        self.docs: pa.Table | None = None  # the rows `process_docs` kept, with their `SOURCE_ROW`, while held
        self.n_original = 0
        self.left_out: RowsLeftOut | None = None  # rows its metadata leaves out of a build that holds more
        self.image_columns: list[ImageColumn | SharedImageColumn] = []  # readers of `doc_to_visual`'s, while held
        self._hook_columns: list[ImageColumn | SharedImageColumn] | None = None
        self._doc_view: pa.Table | None = None  # what the hooks read of them
        self._decode: RowDecoder | None = None  # `row_decoder`
        self._loaded_with: tuple[Path | str | None, float | None, bool] | None = None  # `load`'s arguments
        self._docs_count = 0
        self._most_images: int | None = None
        self._counted: dict[tuple[str, float | None], Counted] = {}  # by the files' fingerprint and --limit
        self.has_token_figures = False  # the rows carry the builder's token counts: context limits can be checked

    def load(
        self, data_dir: Path | str | None = None, limit: float | None = None, trust_unverified: bool = False
    ) -> None:
        """Load the split (verified, or with `trust_unverified` data that cannot be) and read its documents: the rows
        `process_docs` keeps, the first `--limit` of them (N docs, or a fraction), as they are read (`read_docs`)."""
        self.data = load_task_dataset(self.config, data_dir, trust_unverified)
        known = self._counted.get((self.data.fingerprint, limit))  # read again: only as far as the documents go
        try:
            docs, counted = read_docs(self.hooks.get("process_docs"), self.data, self.metadata, limit, known)
        except TaskHookError as err:
            if isinstance(err.cause, ValueError | KeyError):  # e.g. a --metadata value the hook rejects
                raise UserError(f"task {self.name!r}: process_docs: {err.reason}") from None
            raise
        self._counted = {(self.data.fingerprint, limit): counted}
        self.n_original = counted.kept
        self.left_out = counted.left_out(self.metadata)
        self.docs = docs
        self._hook_columns = None
        visual = self.config.doc_to_visual
        columns = [visual] if isinstance(visual, str) else list(visual) if isinstance(visual, list) else []
        self.image_columns = [self.data.image_column(docs, c, self.name) for c in columns]
        hidden = set(columns) | set(self.data.image_columns) | {SOURCE_ROW}
        self._doc_view = docs.select([c for c in docs.column_names if c not in hidden])
        self._decode = row_decoder(self._doc_view)
        self._loaded_with = (data_dir, limit, trust_unverified)
        self._docs_count = len(docs)
        self._most_images = self._count_most_images()
        self.has_token_figures = "text_tokens" in docs.column_names and "image_tokens" in docs.column_names

    def unload(self) -> None:
        """Let go of the rows, keeping what is known of them (how many, the most images of one, the data's
        description); they are read again, verified again, when next held (`rows`). A run loads every task up front
        to check its data, then holds the rows of the task it is running only, so that its memory does not grow with
        the rows of all its tasks."""
        if self.data is not None:
            self.data = replace(self.data, split=None)
        self.docs = self._doc_view = None
        self.image_columns, self._hook_columns = [], None
        import pyarrow as pa

        pa.default_memory_pool().release_unused()  # Arrow's allocator keeps what it freed unless told

    @contextmanager
    def rows(self) -> Iterator[None]:
        """The rows for the span of the block: read again where `unload` let go of them, and let go of again after."""
        if self._doc_view is not None or self._loaded_with is None:
            yield
            return
        self.reload()
        try:
            yield
        finally:
            self.unload()

    def reload(self) -> None:
        """The rows read again (verified again) where `unload` let go of them, held until the next `unload`."""
        if self._doc_view is None and self._loaded_with is not None:
            self.load(*self._loaded_with)

    def _view(self) -> pa.Table:
        """The documents, while the rows are held; reading them otherwise is a mistake of the caller's, said."""
        if self._doc_view is None:
            how = "load() it first" if self._loaded_with is None else "read them inside `with task.rows():`"
            raise RuntimeError(f"task {self.name!r}: its rows are not held: {how}")
        return self._doc_view

    def __len__(self) -> int:
        return self._docs_count

    def doc(self, doc_id: int) -> dict[str, Any]:
        view = self._view()
        if not 0 <= doc_id < view.num_rows:
            raise IndexError(f"task {self.name!r}: no document {doc_id} of {view.num_rows}")
        row = view.slice(doc_id, 1).to_pylist()[0]
        return self._decode(row) if self._decode is not None else row

    def iter_docs(self) -> Iterator[tuple[int, dict[str, Any]]]:
        rows = (row for batch in self._view().to_batches() for row in batch.to_pylist())
        yield from enumerate(map(self._decode, rows) if self._decode is not None else rows)

    @staticmethod
    def sample_id(doc_id: int, doc: Mapping[str, object]) -> str:
        return str(doc.get("id", doc_id))

    def image_cells(self, doc_id: int) -> dict[str, Any]:
        """The document's image columns as `Image(decode=False)` gives them, for a `doc_to_visual` hook."""
        assert self.docs is not None and self.data is not None
        if self._hook_columns is None:
            self._hook_columns = [self.data.image_column(self.docs, c, self.name) for c in self.data.image_columns]
        return {column.column: column.value(doc_id) for column in self._hook_columns}

    def max_num_images(self) -> int | None:
        """The largest image count of any evaluated document, without decoding an image: the rows'
        `num_images` column, else the image columns' list lengths; None when a `doc_to_visual` hook
        decides (it would have to run for every row). Counted when the rows are loaded."""
        return self._most_images if self._loaded_with is not None else None

    def _count_most_images(self) -> int | None:
        if self.docs is None or len(self.docs) == 0:
            return 0 if self.docs is not None else None
        if "num_images" in self.docs.column_names and not isinstance(self.config.doc_to_visual, FunctionRef):
            counts = self.docs.column("num_images").to_pylist()
            return int(max((n for n in counts if n is not None), default=0))
        if "doc_to_visual" in self.hooks:
            return None
        return max(sum(column.count(doc_id) for column in self.image_columns) for doc_id in range(len(self.docs)))
