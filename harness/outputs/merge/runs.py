"""`harness merge OUT SHARD_DIR...`: the run-level merge. Each shard folder's results file is found and checked
(one run: the same model, data, limit, seed and settings; every shard present once), the shards' journals are
merged (`harness.outputs.merge.journals.merge_dirs`) and the merged records are aggregated into one results file, as an
unsharded run would have written it: no build is opened and no request rebuilt (issue 62: readers read records).
What only the shards' other files hold comes from them: a judged task's decisions (`judge_<task>.jsonl`), the cost
they recorded, and with `--log_samples` their sample logs.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from harness.api import SCORED, STATUSES
from harness.config.task_index import TaskIndex
from harness.errors import UserError
from harness.outputs.merge.journals import TASK_DOCS_KEY, MergeError, ShardJournal, merge_dirs
from harness.outputs.results.cost_record import CostEntry
from harness.outputs.results.results_file import (
    RESULTS_GLOB,
    ResultsFile,
    RunConfig,
    read_results_file,
    write_results,
)
from harness.outputs.results.trusted_tasks import (
    not_read_line,
    recorded_task_folders,
    trusted_task_index,
    untrusted_task_folders,
)
from harness.running.journal.journal_file import SCORING_PART, fingerprint, scoring_change
from harness.running.journal.sample_log import SampleLogLine, read_sample_log, sample_log_name, write_sample_log
from harness.running.sample_records import sum_usage
from harness.running.sharding import Shard, parse_shard
from harness.running.task.aggregation import Aggregated
from harness.running.task.judge import judge_counts
from harness.running.task.judge_log import JudgeLogLine, judge_log_name, read_judge_log, write_judge_log
from harness.running.task.task import Task, TaskResult


@dataclass
class ShardRun:
    folder: Path  # the model folder holding the shard's journals and results
    relative: Path  # that folder relative to the folder named on the command line
    results_file: Path
    results: ResultsFile
    shard: Shard  # the documents it ran


# What every shard of one run must share (their journals' headers are checked again by merge_dirs).
SHARD_RUN_KEYS = (
    "model",
    "alias",
    "model_args",
    "model_identity",
    "limit",
    "seed",
    "gen_kwargs",
    "metadata",
    "data_dir",
    "include_path",
    "system_instruction",
    "input_policies",
)
# Per-shard bookkeeping, not part of the merged run's description.
SHARD_ONLY_KEYS = ("shard", "argv", "cache", "cache_hits", "model_calls", "requests_sent", "backend_stats")


def _shard_run(folder: Path) -> ShardRun:
    if not folder.is_dir():
        raise UserError(f"{folder}: no such folder")
    files = sorted(folder.rglob(RESULTS_GLOB))
    if not files:
        raise UserError(
            f"{folder}: no results_*.json: that shard has not finished; run it again to complete it, then merge"
        )
    parents = sorted({f.parent for f in files})
    if len(parents) > 1:
        raise UserError(
            f"{folder}: results of {len(parents)} models ({', '.join(p.name for p in parents)}); "
            "name the model folder of the run to merge"
        )
    newest = max(files, key=lambda f: f.name)  # results_<ISO time>.json: the name orders them in time
    results = read_results_file(newest)
    if not (isinstance(results.get("config"), dict) and isinstance(results.get("results"), dict)):
        raise UserError(f"{newest}: not a results file (expected an object with `results` and `config`)")
    try:
        shard = parse_shard(results["config"].get("shard"))
    except ValueError as err:
        raise UserError(f"{newest}: config.shard: {err}") from None
    if shard is None:
        raise UserError(f"{newest}: not the results of a --shard run")
    return ShardRun(parents[0], parents[0].relative_to(folder), newest, results, shard)


def _check_one_run(runs: list[ShardRun]) -> None:
    """The shards' results describe one run: the same settings and tasks."""
    first = runs[0]
    config = first.results["config"]
    for run in runs[1:]:
        other = run.results["config"]
        differ = [
            k
            for k in SHARD_RUN_KEYS
            if json.dumps(other.get(k), sort_keys=True) != json.dumps(config.get(k), sort_keys=True)
        ]
        if list(run.results["results"]) != list(first.results["results"]):
            differ.append("tasks")
        if differ:
            raise UserError(
                f"{run.results_file} and {first.results_file} are not shards of one run "
                f"(they differ in: {', '.join(differ)})"
            )


def _merged_config(runs: list[ShardRun], argv: list[str]) -> RunConfig:
    """The merged run's `config`: the shards' shared settings, their counters summed, where each came from."""
    merged: dict[str, Any] = {k: v for k, v in runs[0].results["config"].items() if k not in SHARD_ONLY_KEYS}
    merged["shard"] = None
    for key in ("cache_hits", "model_calls", "requests_sent"):
        values = [run.results["config"].get(key) for run in runs]
        merged[key] = sum(values) if all(isinstance(v, int) for v in values) else None
    merged["merged_from"] = [
        {
            "folder": str(run.folder.resolve()),
            "shard": run.results["config"]["shard"],
            "results": str(run.results_file.resolve()),
            "argv": run.results["config"].get("argv"),
        }
        for run in runs
    ]
    merged["argv"] = ["harness", "merge", *argv]
    return cast(RunConfig, merged)  # the shards' own config, its keys kept


def _original_count(run: ShardRun, task: str) -> int | None:
    """The build's sample count for `task`, as the shard's results recorded it (merge opens no build); its type was
    checked when the file was read (`read_results_file`), but a damaged file may leave it out."""
    entry = run.results.get("n-samples", {}).get(task)
    if entry is None or "original" not in entry:
        raise UserError(f"{run.results_file}: n-samples.{task}.original: expected the count of the build's samples")
    return entry["original"]


def _merged_cost(runs: list[ShardRun]) -> dict[str, dict[str, CostEntry]]:
    """The merged run's `cost`: each task's tokens and USD for the model and the judge, summed over the shards, each
    of which priced its own answers and its judge's calls (no journal holds the judge's usage, so they are not priced
    again). A shard with no price leaves the task's USD null: a sum of some shards' would understate it."""
    entries: dict[str, dict[str, list[CostEntry]]] = {}
    for run in runs:
        for task, payees in (run.results.get("cost") or {}).items():
            for who, entry in payees.items():
                entries.setdefault(task, {}).setdefault(who, []).append(entry)
    return {task: {who: _summed_cost(shards) for who, shards in payees.items()} for task, payees in entries.items()}


def _summed_cost(shards: list[CostEntry]) -> CostEntry:
    def named(values: Iterable[str | None]) -> str | None:  # one name, or each the shards gave (prices of another day)
        return ", ".join(dict.fromkeys(v for v in values if v is not None)) or None

    usds = [e.get("usd") for e in shards]
    return {
        "served": named(e.get("served") for e in shards),
        "priced_as": named(e.get("priced_as") for e in shards),
        "prices_as_of": named(e.get("prices_as_of") for e in shards),
        "input_tokens": sum(e.get("input_tokens", 0) for e in shards),
        "cached_tokens": sum(e.get("cached_tokens", 0) for e in shards),
        "cache_write_tokens": sum(e.get("cache_write_tokens", 0) for e in shards),
        "output_tokens": sum(e.get("output_tokens", 0) for e in shards),
        "usd": round(sum(u for u in usds if u is not None), 9) if None not in usds else None,
        "batch": all(e.get("batch") for e in shards),  # priced at the batch factor only where every shard was
    }


def merge_shards(out: Path, shard_dirs: list[Path], argv: list[str], include_paths: Sequence[Path] = ()) -> int:
    """Merge the journals of the shards of one run, aggregate their records as an unsharded run aggregates its own
    (nothing is generated, no build opened), and write the results file of the whole run. Tasks come from the
    installed task folders and `include_paths` (`harness merge --include_path`), never from the folders the shards'
    results record (`harness.outputs.results.trusted_tasks`)."""
    from harness.running.lock import OutputLock

    runs = [_shard_run(d) for d in shard_dirs]
    _check_one_run(runs)
    out_dir = out / runs[0].relative
    if any(out_dir.resolve() == run.folder.resolve() for run in runs):
        raise UserError(f"{out}: the merged output must not be one of the shard folders")
    with OutputLock(out_dir, ["harness", "merge", *argv]):
        return _merge_locked(runs, out_dir, argv, include_paths)


def _task_index(runs: list[ShardRun], task_names: list[str], include_paths: Sequence[Path]) -> TaskIndex:
    """The tasks the merge may build: the installed ones and `include_paths`; a task the shards ran from a folder
    their results record, and the merge was not given, is one line naming the folder and what to give."""
    recorded = recorded_task_folders(run.results["config"] for run in runs)
    index = trusted_task_index("harness merge", include_paths, recorded, say=False)
    unknown = [n for n in task_names if n not in index.tasks]
    unknown += [g for g in runs[0].results.get("group_subtasks") or {} if g not in index.groups]
    left_out = untrusted_task_folders(include_paths, recorded)
    if unknown:
        where = (
            f"; the shards' results record the task folders {', '.join(left_out)}, which harness merge does not read "
            "(a results folder may come from elsewhere, and a task folder holds code): give `--include_path PATH` "
            "to harness merge for a folder you trust"
            if left_out
            else " (were they given with --include_path from another folder? give it to harness merge too)"
        )
        raise UserError(f"the shards ran task(s) or group(s) this checkout does not know: {', '.join(unknown)}{where}")
    if left_out:
        print(not_read_line("harness merge", left_out), file=sys.stderr)
    return index


def _check_cluster_keys(runs: list[ShardRun], tasks: list[Task]) -> None:
    """The cluster keys the shards journalled are made by the `cluster_key:` a task declares now (merge reads the keys
    and opens no row): keys made by another are one line saying how to make them anew."""
    for task in tasks:
        key = task.config.cluster_key
        now = [task.config.dataset_path, key.to_yaml() if key is not None else None]
        for run in runs:
            recorded = (run.results.get("configs") or {}).get(task.name) or {}
            made_by = [recorded.get("dataset_path"), recorded.get("cluster_key")]
            if json.dumps(made_by) != json.dumps(now):
                raise UserError(
                    f"{run.results_file}: {task.name}'s cluster keys were made by `cluster_key: "
                    f"{json.dumps(made_by[1])}` of {made_by[0]}, not the task's `cluster_key: {json.dumps(now[1])}` "
                    f"of {now[0]}; run each shard again (it makes them anew, generating nothing), then merge"
                )


def _judge_decisions(task: Task, journal: ShardJournal, runs: list[ShardRun], out_dir: Path) -> list[JudgeLogLine]:
    """The judge's decision on each scored record, in the records' order, from the shard's `judge_<task>.jsonl` that
    ran it (the journal holds the model's answers; the judge's metrics are only there, its replies in the response
    cache), written to the merged folder as the unsharded run writes it."""
    scored = [r for r in journal.records if r["status"] in SCORED]
    decisions: dict[str, JudgeLogLine] = {}
    for run in runs:
        path = run.folder / judge_log_name(task.name)
        try:
            lines = read_judge_log(path)
        except FileNotFoundError:
            lines = {}
        except OSError as err:
            raise UserError(f"{path}: unreadable judge log ({err.strerror or err})") from None
        missing = [r["doc_id"] for r in scored if run.shard.contains(r["doc_id"]) and r["sample_id"] not in lines]
        if missing:
            raise UserError(
                f"{path}: no judge decisions for {task.name} (doc {', '.join(map(str, missing[:5]))}"
                f"{', ...' if len(missing) > 5 else ''}); run that shard again (it judges from the cache, generating "
                "nothing), then merge"
            )
        decisions.update((sid, line) for sid, line in lines.items() if run.shard.contains(line["doc_id"]))
    judged = [decisions[r["sample_id"]] for r in scored]
    write_judge_log(out_dir / judge_log_name(task.name), judged)
    return judged


def _merged_task(
    task: Task, journal: ShardJournal, config: RunConfig, started: float, judged: list[JudgeLogLine] | None
) -> TaskResult:
    """A task of the merged run from its journal's records alone, as the runner aggregates a finished task: merge
    opens no build and rebuilds no request (what was sent is the records'); their metrics are the shards' scoring,
    so a task whose scoring changed since is one line saying how to rescore them. `judged`: a judged task's decisions
    (`_judge_decisions`), whose metrics join its records' as the runner joins them."""
    change = scoring_change(journal.parts.get(SCORING_PART), task.scoring_identity())
    if change:
        raise UserError(
            f"{journal.source}: {task.name}'s stored replies were scored otherwise ({change}); run each shard again "
            "(it rescores them, generating nothing), then merge"
        )
    records = journal.records  # in doc_id order, as merged
    counts = Counter(r["status"] for r in records)
    usages = [r.get("usage") for r in records]
    judge_metrics = {line["sample_id"]: line.get("metrics") or {} for line in judged or ()}
    scored = [
        task.scored_row(r["sample_id"], {**metrics, **judge_metrics.get(r["sample_id"], {})}, r.get("cluster"))
        for r in records
        if r["status"] in SCORED and (metrics := r.get("metrics")) is not None
    ]
    return TaskResult(
        task=task,
        settings=task.generation_settings(config.get("gen_kwargs") or {}, config.get("seed")),
        fingerprint=fingerprint(journal.parts),
        **vars(Aggregated() if config.get("predict_only") else task.aggregate(scored, config.get("bootstrap_iters"))),
        counts={s: counts.get(s, 0) for s in STATUSES},
        judge_counts=judge_counts([line["status"] for line in judged]) if judged is not None else {},
        n_effective=len(records),
        resumed=len(records),
        changed=0,
        generated=0,
        seconds=time.time() - started,
        usage=sum_usage(usages),
        answer_usages=[u for u in usages if u],
        task_docs=int(journal.parts.get(TASK_DOCS_KEY) or len(records)),
        truncated=sum(1 for r in records if r.get("truncation")),
        past_window=sum(1 for r in records if r.get("past_window")),
    )


def _merged_sample_logs(
    runs: list[ShardRun], journals: Mapping[str, ShardJournal], out_dir: Path, date_id: str
) -> bool:
    """`--log_samples`: each task's sample log, the shards' (each written by the run that wrote its results) in doc
    order, which is the unsharded run's log line for line. A task whose shard's log is gone, or is not of its records
    (a run since without `--log_samples`), is one line and has none; True where every task has its log."""
    suffix = runs[0].results["config"].get("log_samples_suffix")
    every = True
    for task, journal in journals.items():
        lines: list[SampleLogLine] = []
        for run in runs:
            path = run.folder / sample_log_name(task, run.results_file.stem.removeprefix("results_"), suffix)
            docs = [r["doc_id"] for r in journal.records if run.shard.contains(r["doc_id"])]
            logged = read_sample_log(path) if run.results["config"].get("log_samples") and path.is_file() else None
            if logged is None or [line["doc_id"] for line in logged] != docs:
                what = "missing" if logged is None else "not of the shard's records"
                print(
                    f"harness merge: no sample log of {task}: {path} is {what} (run that shard again with "
                    "--log_samples, then merge)",
                    file=sys.stderr,
                )
                every = False
                break
            lines += logged
        else:
            write_sample_log(
                out_dir / sample_log_name(task, date_id, suffix), sorted(lines, key=lambda line: line["doc_id"])
            )
    return every


def _merge_locked(runs: list[ShardRun], out_dir: Path, argv: list[str], include_paths: Sequence[Path]) -> int:
    from harness.outputs.results.results import build_results, predict_only, summary_table

    first = runs[0]
    config = first.results["config"]
    task_names = list(first.results["results"])
    started = time.time()
    index = _task_index(runs, task_names, include_paths)
    metadata = config.get("metadata") or {}
    tasks = [Task(index.tasks[name], metadata, config.get("system_instruction")) for name in task_names]
    _check_cluster_keys(runs, tasks)
    try:
        aggregations = {task.name: task.builtin_aggregations() for task in tasks}
        report = merge_dirs([run.folder for run in runs], out_dir, tasks=task_names, aggregations=aggregations)
    except MergeError as err:
        raise UserError(str(err)) from None
    judging = config.get("judge") and not config.get("predict_only")  # as the runner judges: a judge, and scoring
    task_results = [
        _merged_task(
            task,
            report.journals[task.name],
            config,
            started,
            _judge_decisions(task, report.journals[task.name], runs, out_dir) if judging and task.judge else None,
        )
        for task in tasks
    ]
    groups = first.results.get("group_subtasks") or {}
    results = build_results(task_results, groups, index.groups, _merged_config(runs, argv), started, time.time())
    # what the builds held, as the shards' results recorded them (merge opens no build)
    results["datasets"] = first.results.get("datasets") or {}
    for name, entry in results["n-samples"].items():
        entry["original"] = _original_count(first, name)
    costs = _merged_cost(runs)
    if costs:
        results["cost"] = costs
    if config.get("predict_only"):
        predict_only(results)
    date_id = datetime.now().isoformat().replace(":", "-")  # names the results and the sample logs, as a run's
    if config.get("log_samples"):
        results["config"]["log_samples"] = _merged_sample_logs(runs, report.journals, out_dir, date_id)
    print(summary_table(results))
    path = write_results(results, out_dir, date_id)
    print(
        f"harness: merged {report.shards} shards ({', '.join(f'{t}: {len(j.records)}' for t, j in report.journals.items())} samples); "
        f"results written to {path}",
        file=sys.stderr,
    )
    return 0
