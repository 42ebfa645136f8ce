"""`harness merge`: combine the per-sample journals of the shards of one run into the journals an
unsharded run would have written, so that aggregating their records gives the same results JSON
(`harness.outputs.merge.runs.merge_shards`, the command, checks the shards' results files, merges, then aggregates).

A shard's journal (`harness.running.journal.journal_file`: a header line with the run's `parts`, then one record per
sample, a later record of a sample replacing an earlier one) must carry its shard in
`parts["shard"]` ("i/n"). Merging checks, and refuses with a message naming the files:

* every shard 0..n-1 is present exactly once, all with the same n;
* all shards ran the same thing: their `parts` agree on everything but the shard;
* every record sits in the shard its doc_id belongs to (`harness.running.sharding`), and no (task,
  sample_id) or (task, doc_id) appears twice;
* when the parts record how many documents the unsharded task has (`parts["task_docs"]`), none is
  missing; records of documents beyond that count (left in a shard's folder by an earlier run of
  it with a larger `--limit`) are not part of this run and are left out.

The merged journal's header has the shard removed from `parts`, so it is the header of the
unsharded run; records are written in doc_id order.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from builders.core import contract
from harness.file_writing import write_lines
from harness.running.journal.journal_file import (
    SampleRecord,
    canonical,
    header_line,
    header_problem,
    make_header,
    parse_line,
    record_line,
    record_problem,
    stamped,
)
from harness.running.journal.prompt_store import merge_stores, prompts_name
from harness.running.sharding import Shard, parse_shard, shard_sizes

SHARD_KEY = "shard"
# The longest journal line read: a record holds an answer (at most 64 characters per `max_gen_toks`, plus 1,024) and,
# in a journal from before the prompt store, its prompt as sent (a 128K-token prompt is some 0.5-1.2 MB of JSON).
JOURNAL_LINE_MOST = 64 * contract.MiB
TASK_DOCS_KEY = "task_docs"
JOURNAL_GLOB = "journal_*.jsonl"


class MergeError(ValueError):
    """Shard outputs that cannot be merged into one run; the message says which and why."""


@dataclass
class ShardJournal:
    """One task's journal from one shard: its header parts and its final record per sample."""

    source: str  # where it came from, for messages
    task: str
    parts: dict[str, Any]
    records: list[SampleRecord]
    relpath: str = ""  # path inside the shard's output folder


@dataclass
class MergeReport:
    journals: dict[str, ShardJournal] = field(default_factory=dict)  # task -> its merged journal, as written
    shards: int = 0


def read_journal(path: Path, aggregations: Mapping[str, Mapping[str, str]] | None = None) -> ShardJournal:
    """Read a journal; a sample recorded twice keeps its last record (as a resumed run does). A record that
    cannot be used (not JSON or UTF-8, nested too deeply, of the wrong shape: `harness.running.journal.sample_store`'s checks)
    is reported with its `file:line` and left out, so the merge finds its sample missing and names the shard to
    run again; running it generates that sample anew. `aggregations` (task -> metric -> its built-in aggregation)
    also checks each metric's value has the shape its aggregation reads."""
    try:
        handle = contract.open_regular(path)  # without blocking: a FIFO planted as a journal is refused at once
    except OSError as err:
        raise MergeError(f"{path}: unreadable journal ({err.strerror or err})") from None
    with handle:
        return _read_journal(path, handle, aggregations or {})


def _read_journal(path: Path, handle: BinaryIO, aggregations: Mapping[str, Mapping[str, str]]) -> ShardJournal:
    """The journal's lines, streamed, each within `JOURNAL_LINE_MOST` (a longer one is skipped and named)."""
    first = contract.read_line(handle, JOURNAL_LINE_MOST)
    if first is None:
        raise MergeError(f"{path}:1: unreadable header (over {JOURNAL_LINE_MOST:,} bytes)")
    if not first.strip():
        raise MergeError(f"{path}: empty journal")
    header, problem = parse_line(first)
    if problem:
        raise MergeError(f"{path}:1: unreadable header ({problem})")
    problem = header_problem(header) or (None if isinstance(header.get("task"), str) else "a header without its task")
    if problem:
        raise MergeError(f"{path}:1: the journal's header is {problem}")
    latest: dict[str, SampleRecord] = {}
    number = 1
    while (line := contract.read_line(handle, JOURNAL_LINE_MOST)) != b"":
        number += 1
        if line is not None and not line.strip():
            continue
        if line is None:
            record, problem = None, f"over {JOURNAL_LINE_MOST:,} bytes"
        else:
            record, problem = parse_line(line)
            problem = problem or record_problem(record, header["task"], aggregations.get(header["task"]))
        if problem or record is None:
            print(
                f"harness: {path}:{number}: skipped an unreadable journal line ({problem}); run that shard again "
                "to generate its sample anew",
                file=sys.stderr,
            )
            continue
        latest[record["sample_id"]] = record
    return ShardJournal(str(path), header["task"], dict(header.get("parts") or {}), list(latest.values()))


def _shards_of(journals: Sequence[ShardJournal]) -> dict[int, ShardJournal]:
    """One task's journals by shard index: every shard 0..n-1 exactly once, all of the same n."""
    task = journals[0].task
    shards: dict[int, ShardJournal] = {}
    count: int | None = None
    for journal in journals:
        if journal.task != task:
            raise MergeError(f"{journal.source}: journal of task {journal.task!r}, expected {task!r}")
        spec = journal.parts.get(SHARD_KEY)
        try:
            shard = parse_shard(spec) if isinstance(spec, str) else None
        except ValueError as err:
            raise MergeError(f"{journal.source}: bad shard {spec!r} in its header ({err})") from None
        if shard is None:
            raise MergeError(
                f"{journal.source}: the header has no shard ('{SHARD_KEY}': 'i/n'); it is not a sharded run"
            )
        if count is None:
            count = shard.count
        elif shard.count != count:
            raise MergeError(f"{journal.source}: shard {shard} of {shard.count}, but other shards are of {count}")
        if shard.index in shards:
            raise MergeError(
                f"task {task!r}: shard {shard} given twice: {shards[shard.index].source} and {journal.source}"
            )
        shards[shard.index] = journal
    assert count is not None
    missing = [f"{i}/{count}" for i in range(count) if i not in shards]
    if missing:
        raise MergeError(f"task {task!r}: missing shard(s) {', '.join(missing)}; have {len(shards)} of {count}")
    return shards


def _unsharded_parts(shards: dict[int, ShardJournal]) -> dict[str, Any]:
    """The run's parts without the shard: the same for every shard, or an error naming what differs."""
    base = shards[0]
    unsharded = {k: v for k, v in base.parts.items() if k != SHARD_KEY}
    for index in range(1, len(shards)):
        other = {k: v for k, v in shards[index].parts.items() if k != SHARD_KEY}
        if canonical(other) != canonical(unsharded):
            differ = sorted(
                k for k in set(other) | set(unsharded) if canonical(other.get(k)) != canonical(unsharded.get(k))
            )
            raise MergeError(
                f"task {base.task!r}: {shards[index].source} and {base.source} are not shards of the same run "
                f"(they differ in: {', '.join(differ)})"
            )
    return unsharded


def merge_journals(journals: Sequence[ShardJournal]) -> tuple[dict[str, Any], list[SampleRecord]]:
    """Merge one task's shard journals -> (unsharded parts, records in doc_id order)."""
    if not journals:
        raise MergeError("nothing to merge")
    task = journals[0].task
    shards = _shards_of(journals)
    count = len(shards)
    unsharded = _unsharded_parts(shards)
    expected = unsharded.get(TASK_DOCS_KEY)
    by_sample: dict[str, str] = {}
    by_doc: dict[int, str] = {}
    merged: list[SampleRecord] = []
    kept: dict[int, int] = {}
    for index in range(count):
        journal = shards[index]
        shard = Shard(index, count)
        kept[index] = 0
        for record in journal.records:
            sample_id, doc_id = str(record["sample_id"]), int(record["doc_id"])
            if isinstance(expected, int) and doc_id >= expected:
                continue
            kept[index] += 1
            if not shard.contains(doc_id):
                raise MergeError(
                    f"{journal.source}: sample {sample_id} (doc_id {doc_id}) does not belong to shard {shard}"
                )
            if sample_id in by_sample:
                raise MergeError(
                    f"task {task!r}: sample {sample_id} appears in {by_sample[sample_id]} and {journal.source}"
                )
            if doc_id in by_doc:
                raise MergeError(f"task {task!r}: doc_id {doc_id} appears in {by_doc[doc_id]} and {journal.source}")
            by_sample[sample_id] = by_doc[doc_id] = journal.source
            merged.append(record)
    if isinstance(expected, int) and len(merged) != expected:
        sizes = shard_sizes(expected, count)
        short = {f"{i}/{count}": sizes[i] - kept[i] for i in range(count) if kept[i] != sizes[i]}
        raise MergeError(
            f"task {task!r}: the shards hold {len(merged)} samples, the task has {expected} "
            f"(samples missing per shard: {short}); finish those shards, then merge again"
        )
    merged.sort(key=lambda r: int(r["doc_id"]))
    return unsharded, merged


def find_journals(
    shard_dir: Path, aggregations: Mapping[str, Mapping[str, str]] | None = None
) -> dict[str, tuple[Path, ShardJournal]]:
    """task -> (path, journal) for every journal under one shard's output folder."""
    found: dict[str, tuple[Path, ShardJournal]] = {}
    for path in sorted(shard_dir.rglob(JOURNAL_GLOB)):
        check_inside(path, shard_dir)
        store = path.with_name(prompts_name(path.name))
        if store.is_symlink() or store.exists():
            check_inside(store, shard_dir)
        journal = read_journal(path, aggregations)
        journal.relpath = str(path.relative_to(shard_dir))
        if journal.task in found:
            raise MergeError(
                f"{shard_dir}: two journals for task {journal.task!r}: {found[journal.task][0]} and {path}"
            )
        found[journal.task] = (path, journal)
    return found


def check_inside(path: Path, shard_dir: Path) -> None:
    """A shard's file is its own: not a link, and inside its folder (a link planted in a shard would merge a file from
    anywhere into the merged run)."""
    if path.is_symlink() or not path.resolve().is_relative_to(shard_dir.resolve()):
        raise MergeError(f"{path}: a link, or outside the shard's folder {shard_dir}; merge reads a shard's own files")


def write_journal(path: Path, task: str, parts: Mapping[str, object], records: Sequence[SampleRecord]) -> None:
    """Write a journal in `harness.running.journal.journal_file`'s format (header fingerprint recomputed)."""
    first = make_header(task, dict(parts))
    digest = first["fingerprint"]
    write_lines(
        path,
        [
            header_line(first),
            *(record_line(stamped(task, digest, {**record, "fingerprint": digest})) for record in records),
        ],
    )


def merge_dirs(
    shard_dirs: Sequence[str | Path],
    out_dir: str | Path,
    *,
    tasks: Collection[str] | None = None,
    aggregations: Mapping[str, Mapping[str, str]] | None = None,
) -> MergeReport:
    """Merge the journals of every task found in the shard folders (or only of `tasks`) into `out_dir`,
    at the same relative paths; `aggregations` as `read_journal` takes them."""
    dirs = [Path(d) for d in shard_dirs]
    if len(dirs) < 1:
        raise MergeError("give the output folders of the shards to merge")
    for d in dirs:
        if not d.is_dir():
            raise MergeError(f"{d}: no such folder")
    out = Path(out_dir)
    if any(out.resolve() == d.resolve() for d in dirs):
        raise MergeError(f"{out}: the merged output must not be one of the shard folders")
    per_dir = [find_journals(d, aggregations) for d in dirs]
    found = sorted(set().union(*[set(j) for j in per_dir]))
    if not found:
        raise MergeError(f"no per-sample journals ({JOURNAL_GLOB}) under {', '.join(map(str, dirs))}")
    names = found if tasks is None else sorted(tasks)
    report = MergeReport(shards=len(dirs))
    for task in names:
        absent = [str(d) for d, found in zip(dirs, per_dir, strict=True) if task not in found]
        if absent:
            raise MergeError(f"task {task!r}: no journal in {', '.join(absent)}")
        journals = [found[task][1] for found in per_dir]
        parts, records = merge_journals(journals)
        target = out / journals[0].relpath
        write_journal(target, task, parts, records)
        stores = [path.with_name(prompts_name(path.name)) for path, _ in (found[task] for found in per_dir)]
        merge_stores(stores, target.with_name(prompts_name(target.name)))  # the texts the records name
        report.journals[task] = ShardJournal(str(target), task, parts, records)
    return report
