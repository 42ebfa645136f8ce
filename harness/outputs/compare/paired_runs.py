"""Two runs paired on sample ids, for `harness compare` and the viewer's two-model pages.

- Which runs (`pick_runs`): two models of one results folder, or one model of each of two folders. A model is named
  as `harness report` names it (`qwen2.5-vl`, `qwen2.5-vl (vllm)`) or by its model folder (`random`,
  `Qwen__Qwen2.5-VL-7B-Instruct`); a folder that holds one model needs no name.
- Each task's journal (`read_task_journal`): the journal beside the results file the task's newest value came from,
  opened only where it is a regular file inside the results folder, and read as the project reads journals
  (`harness.outputs.merge.journals.read_journal`: every line checked; one that is not a sample record of the task is named with
  its `file:line` and left out). A task a judge scored (`--judge_model`) has the judge's metrics of each sample read
  from `judge_<task>.jsonl` beside it (the journal keeps the model's answers; the judge's decisions are in that log),
  and the judge's identity from the results file (`TaskJournal.judge`), so two judges of the same replies compare.
- The rows paired (`pair_task`): a sample scored in both runs (status `ok` or `empty`, with metrics) is paired by its
  sample id (stable across `--limit` and `--shard`, unlike lmms-eval's `doc_id`); one scored in a single run is named,
  with what the other run has of it (`absent`, or its status: `error`, `over_length`, ...), never dropped unsaid.
- A metric's paired values (`paired_rows`): per row A's and B's values, the row's cluster keys and which way they
  differ (`PairedRow.way`: for a 0/1 metric, `a` is A right and B wrong, McNemar's b; `b` the reverse, its c).
"""

from __future__ import annotations

import math
import stat
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.api import SCORED
from harness.errors import UserError, close_names
from harness.inputs.data import FILES, VERIFIED, files_fingerprint
from harness.outputs.merge.journals import MergeError, read_journal
from harness.outputs.results.model_results import ModelResults, load_results, model_named
from harness.running.journal.journal_file import SampleRecord, journal_name
from harness.running.task.judge_log import judge_log_name, judge_metrics_of, read_judge_log

ABSENT = "absent"  # what the other run has of a row it never recorded
Way = Literal["a", "b", "tie"]


@dataclass(frozen=True)
class Run:
    """One side of a comparison: a model's newest results in a results folder (`harness report`'s reading)."""

    folder: Path
    model: str
    results: ModelResults

    def __str__(self) -> str:
        return f"{self.model} in {self.folder}"

    def judge_of(self, task: str) -> dict[str, object] | None:
        """The judge that scored `task` in the run of its newest value, as that results file records it (`config.judge`:
        the one of `judges` that names the task, else its `model`); None where no judge scored it."""
        config = self.results.sources[task].get("config") if task in self.results.sources else None
        judge = config.get("judge") if isinstance(config, dict) else None
        if not isinstance(judge, dict):
            return None
        judged = judge.get("max_reply_chars")  # the run's judged tasks
        if isinstance(judged, dict) and task not in judged:
            return None
        for entry in judge.get("judges") or []:
            if isinstance(entry, dict) and task in (entry.get("tasks") or []) and isinstance(entry.get("model"), dict):
                return dict(entry["model"])
        model = judge.get("model")
        return dict(model) if isinstance(model, dict) else None


def _run(folder: Path, models: Mapping[str, ModelResults], name: str | None) -> Run:
    """The model `name` of `folder`: as `harness report` names it, or by its model folder; None: its one model."""
    if name is None:
        if len(models) != 1:
            raise UserError(
                f"{folder} holds {len(models)} models ({', '.join(sorted(models))}): name one per folder with --models A B"
            )
        (name, data), *_ = models.items()
        return Run(folder, name, data)
    found = model_named(models, name)
    if found is not None:
        return Run(folder, found, models[found])
    close = close_names(name, models)
    hint = f"; did you mean: {', '.join(close)}?" if close else f" (it holds: {', '.join(sorted(models))})"
    raise UserError(f"{folder}: no model named {name!r}{hint}")


def pick_run(folder: Path, model: str | None) -> Run:
    """The run of `model` in `folder` (the folder's one model where `model` is None)."""
    return _run(folder, load_results(folder), model)


def pick_runs(folders: Sequence[Path], models: Sequence[str] | None) -> tuple[Run, Run]:
    """(A, B): with one folder, the two `models` of it; with two, the one model of each (or `models[i]` of the i-th)."""
    if len(folders) not in (1, 2):
        raise UserError(f"give one results folder and --models A B, or two results folders (got {len(folders)})")
    if models is not None and len(models) != 2:
        raise UserError(f"--models takes two names, A and B (got {len(models)})")
    found = [load_results(folder) for folder in folders]
    if len(folders) == 1:
        if models is None:
            raise UserError(
                f"{folders[0]}: name the two models to compare with --models A B "
                f"(it holds: {', '.join(sorted(found[0]))})"
            )
        a, b = (_run(folders[0], found[0], name) for name in models)
    else:
        a, b = (_run(folders[i], found[i], None if models is None else models[i]) for i in (0, 1))
    if a.model == b.model and a.folder.resolve() == b.folder.resolve():
        raise UserError(f"A and B are one run ({a}): name two models, or two results folders")
    return a, b


@dataclass(frozen=True)
class TaskJournal:
    """A task's journal as one run left it: its header's parts and each sample's latest record (with the judge's
    metrics where a judge scored it: `judge`, its identity as the results file records it)."""

    path: Path
    parts: dict[str, object]
    records: dict[str, SampleRecord]
    judge: dict[str, object] | None = None
    data: object = None  # its `task.dataset` in the form runs record it now (`recorded_data`)

    def scored(self, sample_id: str) -> bool:
        record = self.records.get(sample_id)
        return record is not None and record["status"] in SCORED and record.get("metrics") is not None

    def status(self, sample_id: str) -> str:
        record = self.records.get(sample_id)
        return ABSENT if record is None else str(record["status"])

    def task_part(self, key: str) -> object:
        """A field of the header's `task` part (`version`, `dataset`, `sent_sha256` (`config_sha256` in journals
        from before the scoring had a part of its own), `metadata`)."""
        task = self.parts.get("task")
        return task.get(key) if isinstance(task, dict) else None


def recorded_data(recorded: object, dataset: Mapping[str, object]) -> object:
    """A journal's data fingerprint (`task.dataset`) in the form runs record it now: one of the form before issue 99
    (its build manifest's content hash) as `files:` and the hash of the files its run read (`files_fingerprint`),
    where its run's results file records them for that very data (`dataset`, its `datasets[task]`: its `fingerprint`
    the journal's, verified, `verified_files` hashed from the bytes read); else as recorded."""
    files = dataset.get("verified_files")
    if (
        isinstance(recorded, str)
        and not recorded.startswith(FILES)
        and recorded == dataset.get("fingerprint")
        and dataset.get("verification") == VERIFIED
        and isinstance(files, list)
        and files
        and all(isinstance(f, dict) and isinstance(f.get("sha256"), str) for f in files)
    ):
        return files_fingerprint(f["sha256"] for f in files)
    return recorded


class JournalUnreadable(UserError):
    """A task's journal that cannot be read: the task is left out of the comparison, with this reason."""


def _inside(folder: Path, path: Path) -> Path | None:
    """`path`, links followed, where it is a regular file inside `folder`; else None."""
    try:
        target = path.resolve(strict=True)
        if target.is_relative_to(folder.resolve()) and stat.S_ISREG(target.stat().st_mode):
            return target
    except (OSError, RuntimeError, ValueError):  # gone, a loop of links, a name the system refuses
        pass
    return None


def read_task_journal(run: Run, task: str) -> TaskJournal:
    """The journal of `task` beside the results file its newest value came from (`JournalUnreadable`: none, not a
    regular file inside the results folder, or a header that cannot be read)."""
    source = run.results.source_file(task)
    if source is None:
        raise JournalUnreadable(f"{run}: no results file holds {task!r}")
    path = source.parent / journal_name(task)
    target = _inside(run.folder, path)
    if target is None:
        raise JournalUnreadable(f"{path}: no journal of {task!r} inside {run.folder} (a regular file) to pair its rows")
    try:
        journal = read_journal(target)
    except MergeError as err:
        raise JournalUnreadable(str(err)) from None
    if journal.task != task:
        raise JournalUnreadable(f"{path}:1: the journal of task {journal.task!r}, not of {task!r}")
    records = {str(r["sample_id"]): r for r in journal.records}
    judge = run.judge_of(task)
    judged = _with_judge_metrics(records, source.parent / judge_log_name(task), run.folder) if judge else None
    header = TaskJournal(path, journal.parts, {})
    datasets = run.results.sources[task].get("datasets")
    dataset = datasets.get(task) if isinstance(datasets, dict) else None
    data = recorded_data(header.task_part("dataset"), dataset if isinstance(dataset, dict) else {})
    return TaskJournal(
        path, journal.parts, records if judged is None else judged, None if judged is None else judge, data
    )


def _with_judge_metrics(records: dict[str, SampleRecord], log: Path, folder: Path) -> dict[str, SampleRecord] | None:
    """The records, each scored sample the judge log says the judge scored with the judge's metrics added (a log line
    of another document, or of a sample the journal did not score, is another run's: left out). None, said in one
    line, where the log cannot be read: the task is then compared as if no judge had scored it."""
    target = _inside(folder, log)
    try:
        if target is None:
            raise FileNotFoundError("no regular file of that name inside the results folder")
        judged = read_judge_log(target, records)
    except OSError as err:
        print(
            f"harness: {log}: unreadable judge log ({err.strerror or err}): its judge metrics are not compared",
            file=sys.stderr,
        )
        return None
    out = dict(records)
    for sample_id, line in judged.items():
        record = records.get(sample_id)
        metrics = judge_metrics_of(line, record["doc_id"], record["status"]) if record is not None else {}
        if record is not None and metrics and record.get("metrics") is not None:
            out[sample_id] = {**record, "metrics": {**(record.get("metrics") or {}), **metrics}}
    return out


@dataclass(frozen=True)
class PairedTask:
    """One task's rows in two runs: `paired`, the sample ids scored in both (in A's document order); `a_only` and
    `b_only`, those scored in one run alone, each with what the other run has of it (`absent`, or its status)."""

    task: str
    a: TaskJournal
    b: TaskJournal
    paired: tuple[str, ...]
    a_only: dict[str, str]
    b_only: dict[str, str]


def _doc_order(journal: TaskJournal) -> list[str]:
    return sorted(journal.records, key=lambda sample_id: (journal.records[sample_id]["doc_id"], sample_id))


def pair_task(task: str, a: TaskJournal, b: TaskJournal) -> PairedTask:
    paired = tuple(s for s in _doc_order(a) if a.scored(s) and b.scored(s))
    a_only = {s: b.status(s) for s in _doc_order(a) if a.scored(s) and not b.scored(s)}
    b_only = {s: a.status(s) for s in _doc_order(b) if b.scored(s) and not a.scored(s)}
    return PairedTask(task, a, b, paired, a_only, b_only)


def paired_task(a: Run, b: Run, task: str) -> PairedTask:
    """`task`'s rows of runs A and B, paired (`JournalUnreadable` where either journal cannot be read)."""
    return pair_task(task, read_task_journal(a, task), read_task_journal(b, task))


@dataclass(frozen=True)
class PairedRow:
    """One sample in both runs: its id and document in each, A's and B's values of one metric, its cluster keys
    (its own name, `task/sample id`, where it has none)."""

    sample_id: str
    doc_a: int
    doc_b: int
    a: float
    b: float
    keys: tuple[str, ...]

    @property
    def way(self) -> Way:
        """Which run scored higher: `a`, `b`, or `tie` (for a 0/1 metric: A right and B wrong is `a`)."""
        return "a" if self.a > self.b else "b" if self.b > self.a else "tie"


def number(value: object) -> float | None:
    """A journal's metric value as a float, where it is one number (a bool counts as 0/1); else None (an integer past
    a float's range too: no mean or difference holds it)."""
    if isinstance(value, bool | int | float) and not (isinstance(value, float) and math.isnan(value)):
        try:
            return float(value)
        except OverflowError:
            return None
    return None


def float_or_nan(value: object) -> float:
    """`number`, NaN where the value is no number (a file's "N/A")."""
    found = number(value)
    return math.nan if found is None else found


def row_keys(task: str, sample_id: str, a: SampleRecord, b: SampleRecord) -> tuple[str, ...]:
    """The row's cluster keys as both runs recorded them (the same data gives the same keys; a key either run names
    links the row), or its own name where neither names one."""
    keys = dict.fromkeys([*(a.get("cluster") or []), *(b.get("cluster") or [])])
    return tuple(keys) if keys else (f"{task}/{sample_id}",)


def paired_rows(paired: PairedTask, metric: str) -> list[PairedRow]:
    """The paired rows whose `metric` is one number in both runs, in A's document order."""
    out = []
    for sample_id in paired.paired:
        a, b = paired.a.records[sample_id], paired.b.records[sample_id]
        value_a = number((a.get("metrics") or {}).get(metric))
        value_b = number((b.get("metrics") or {}).get(metric))
        if value_a is not None and value_b is not None:
            keys = row_keys(paired.task, sample_id, a, b)
            out.append(PairedRow(sample_id, a["doc_id"], b["doc_id"], value_a, value_b, keys))
    return out


def discordant(rows: Sequence[PairedRow], way: Way) -> list[PairedRow]:
    """The rows that differ the given way (`a`: A higher, or A right and B wrong; `b`: the reverse)."""
    return [row for row in rows if row.way == way]
