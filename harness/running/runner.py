"""The evaluation loop: screen requests, generate batch by batch, score and journal each sample.

Before any generation every request is checked against the model: more images than the model
takes, or more tokens (the row's text + vision tokens, plus `max_gen_toks`) than its context,
is recorded per sample as `too_many_images` / `over_length` — never truncated or dropped silently,
unless the task declares its paper's truncation rule (`truncation:`, `harness.inputs.truncation`): then the
request is cut as that rule says and its record states what was dropped.
Pending requests run longest first (as lm-eval's Collator does, so an out-of-memory shows at once), or, for a
model whose `request_order` is "cache" (vLLM's default), the longest first, then those sharing a prompt prefix
together, each group short to long (`harness.models.shared.scheduling.prefix_order`), across tasks when they run together;
results are aggregated in document order whatever the order of generation. A backend that schedules its own
batches (`ModelFacts.generates_across_tasks`: vLLM) gets every task's pending requests as one sequence, once every
task is screened (`Runner.run_together`); each answer still goes to its own task's journal as its chunk returns.

With `--shard i/n` a task runs only its documents with `doc_id % n == i` (`harness.running.sharding`); the
journal header records the shard and how many documents the whole task has, which `harness merge`
checks. A `BackendFatalError` stops the run after saving what the failing batch finished.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.api import INVALID_INPUT, SCORED, STATUSES, BackendFatalError, GenerationSettings, Model, Request, Response
from harness.errors import UserError
from harness.inputs.integrity import release_mapped_pages
from harness.models.facts.reasoning import AnswerTags, ReasoningTags
from harness.models.facts.reasoning import describe as describe_tags
from harness.models.shared.generation import safe_generate
from harness.models.shared.scheduling.prefix_order import PromptKey, cache_order, prompt_key, task_order
from harness.redact import redact_mapping
from harness.running.budget import Budget
from harness.running.cache import input_sha256
from harness.running.journal.journal_file import SampleRecord, journal_name
from harness.running.journal.sample_log import sample_line, sample_log_name, with_prompt, write_sample_log
from harness.running.journal.sample_store import SampleStore
from harness.running.progress import OverallProgress
from harness.running.progress import bar as progress_bar
from harness.running.request_building import ChainedRequests, LazyRequests, OrderedRequests, RequestBuilder
from harness.running.sample_records import RecordBuilder, refresh_cluster_keys, scored_rows, screen, sum_usage
from harness.running.sharding import Shard, shard_sizes
from harness.running.task.aggregation import Aggregated
from harness.running.task.judge import Judges
from harness.running.task.judging import judge_task
from harness.running.task.requests import RowProblem
from harness.running.task.task import Task, TaskResult


@dataclass
class RunOptions:
    data_dir: Path | str | None = None
    limit: float | None = None
    seed: int | None = 0
    gen_kwargs: dict[str, Any] = field(default_factory=dict)
    output_dir: Path | None = None  # <output_path>/<model>; None keeps everything in memory
    log_samples: bool = False
    progress: bool = True
    shard: Shard | None = None  # run only this shard's documents of every task
    # False: take every sample recorded in the journal as it is, errors included, and generate only
    # what is missing (`harness merge` re-aggregating merged shard journals).
    retry_errors: bool = True
    # The model's input policies on some tasks (`harness.inputs.input_policy`), applied to every request built.
    policies: Callable[[Request], Request] | None = None
    # The judges of tasks with a `judge:` block (`--judge_model`); None: their judge metrics stay absent.
    judge: Judges | None = None
    # False (`--predict_only`): answers are journalled unscored, and nothing is aggregated; a later run that scores
    # scores the journalled answers without generating them again.
    score: bool = True
    # Names this run's results and sample logs, as lm-eval's date_id does.
    date_id: str = field(default_factory=lambda: datetime.now().isoformat().replace(":", "-"))
    log_samples_suffix: str | None = None  # lmms-eval's --log_samples_suffix: samples_<task>_<suffix>_<date>.jsonl
    # A reasoning model's thinking, taken out of each answer before it is scored (`harness.models.facts.reasoning`).
    reasoning_tags: ReasoningTags | None = None
    answer_tags: AnswerTags | None = None  # the tags the model wraps its answer in, after its thinking
    thinking_opened: str | None = None  # the start tag of the thinking block the prompt ends in (`opens_thinking`)
    budget: Budget | None = None  # --max_cost: charged with every answer journalled and judged, stopped once reached
    bootstrap_iters: int | None = None  # the bootstrap's draws for a `!function` aggregation's errors (0: none)


@dataclass
class _Screened:
    current: dict[str, int] = field(default_factory=dict)  # sample id -> doc_id, every document of the run
    pending: list[tuple[int, int]] = field(default_factory=list)  # (prompt tokens, doc_id), in run order
    keys: dict[int, PromptKey] = field(default_factory=dict)  # doc_id -> its prompt's parts, for the cache order
    resumed: int = 0  # finished in the journal already
    changed: int = 0  # journalled for other inputs: generated again


@dataclass
class _TaskRun:
    """A task between its screen and its result: its journal is open, its pending documents known."""

    task: Task
    settings: GenerationSettings
    store: SampleStore
    screened: _Screened
    started: float


class Runner:
    def __init__(self, model: Model, options: RunOptions) -> None:
        self.model = model
        self.options = options
        self.records = RecordBuilder(
            model, options.score, options.reasoning_tags, options.answer_tags, options.thinking_opened
        )
        self.requests = RequestBuilder(model, options.policies)  # built, round-tripped and cut as the model is sent
        # The bar over every task of `run` (with several tasks) and the index of the task running now.
        self._overall: tuple[OverallProgress, int] | None = None

    def _score_unscored(self, task: Task, store: SampleStore, current: list[str]) -> str | None:
        """Answers journalled without metrics (by a `--predict_only` run, or before the task's scoring changed),
        scored now (nothing is generated again); the note of a journal whose stored replies are scored again, said
        once."""
        if not self.options.score:
            return None
        unscored = [s for s in current if store.outcomes[s].status in SCORED and store.outcomes[s].metrics is None]
        note = None
        if store.rescoring is not None:
            note = f"{len(unscored)} stored replies rescored: {store.rescoring}"
            print(
                f"harness: {store.path}: rescoring {len(unscored)} stored replies: {store.rescoring}", file=sys.stderr
            )
        store.add(
            self.records.score(task, task.doc(store.outcomes[s].doc_id), store.records[s].copy()) for s in unscored
        )
        return note

    def _screen_task(self, task: Task, store: SampleStore, settings: GenerationSettings) -> _Screened:
        """Every document of this run (its shard): resumed from the journal, recorded as failing the
        screen (written at once), or pending generation."""
        shard = self.options.shard
        out = _Screened()
        screened: list[SampleRecord] = []
        check_tokens = task.has_token_figures
        for doc_id, doc in task.iter_docs():
            if shard is not None and not shard.contains(doc_id):
                continue
            sample_id = task.sample_id(doc_id, doc)
            if sample_id in out.current:
                raise UserError(
                    f"task {task.name!r}: sample id {sample_id!r} appears twice "
                    f"(docs {out.current[sample_id]} and {doc_id})"
                )
            out.current[sample_id] = doc_id
            request = None
            if store.is_done(sample_id, final_only=self.options.retry_errors):
                recorded = store.outcomes[sample_id].input_sha256
                request = self.requests.build(task, doc_id, doc, settings) if recorded else None
                # a record whose doc_id is not this sample's row (a damaged or foreign journal line) is no answer to it
                same = store.outcomes[sample_id].doc_id == doc_id and (
                    not isinstance(request, Request) or input_sha256(request) == recorded
                )
                if same and not (
                    isinstance(request, Request) and self.records.sent_otherwise(store.records[sample_id], request)
                ):
                    out.resumed += 1
                    if store.lacks_text(sample_id):  # its stored text failed its check: rendered again from its request
                        request = request or self.requests.build(task, doc_id, doc, settings)
                        store.mend_text(sample_id, self.records.text_as_sent(request))
                    continue
                out.changed += 1  # answered for other inputs (the data, or the prompt as sent, changed): again
            request = request or self.requests.build(task, doc_id, doc, settings)
            if isinstance(request, RowProblem):
                screened.append(
                    self.records.screened_out(task, doc_id, sample_id, None, (INVALID_INPUT, request.reason), doc)
                )
                continue
            problem = screen(request, self.model, check_tokens)
            if problem:
                screened.append(self.records.screened_out(task, doc_id, sample_id, request, problem, doc))
                continue
            out.pending.append((self.model.prompt_tokens(request), doc_id))
            if self.model.facts.request_order == "cache":
                out.keys[doc_id] = prompt_key(request)
        store.add(screened)  # with any text mended above, durable before generation starts
        store.prompts.say()
        out.pending = task_order(out.pending, out.keys if self.model.facts.request_order == "cache" else None)
        if not self.model.facts.generates_across_tasks:
            out.keys.clear()  # a prompt's parts are kept only for the order across tasks (`run_together`)
        return out

    def _generate(self, runs: dict[str, _TaskRun], requests: Sequence[Request], desc: str) -> None:
        """Generate batch by batch, journalling responses as they arrive (a chunk at a time), each in its own
        task's journal (`runs` by task name: one task, or every task of the run when the model takes them together)."""
        if self.options.budget is not None and len(requests):
            self.options.budget.check()  # spent already by this command's earlier runs: nothing more is sent
        with progress_bar(len(requests), desc, "sample", self.options.progress) as bar:
            for batch in self.model.batches(requests):
                answered: set[int] = set()
                try:
                    for chunk in self.model.stream(batch):
                        self._journal(runs, [(batch[i], response) for i, response in chunk])
                        answered.update(i for i, _ in chunk)
                        bar.update(len(chunk))
                        self._advance_overall(len(chunk))
                except (BackendFatalError, UserError):
                    raise  # it concerns every request: what arrived is journalled, the rest runs on resume
                except Exception:  # a backend bug on one request must not fail its whole batch
                    rest = [batch[k] for k in range(len(batch)) if k not in answered]
                    self._journal(runs, [(request, safe_generate(self.model, [request])[0]) for request in rest])
                    bar.update(len(rest))
                    self._advance_overall(len(rest))
                release_mapped_pages()  # the batch's images were read from mapped files: hold no more than one batch's
                if self.options.budget is not None:  # checked between batches: a batch in flight is kept whole
                    self.options.budget.check()

    def _journal(self, runs: dict[str, _TaskRun], answers: list[tuple[Request, Response]]) -> None:
        by_task: dict[str, list[SampleRecord]] = {}
        for request, response in answers:
            by_task.setdefault(request.task, []).append(
                self.records.answered(runs[request.task].task, request, response)
            )
        for name, records in by_task.items():
            runs[name].store.add(records)
        if self.options.budget is not None:  # charged once journalled: an answer paid for is never lost
            for _, response in answers:
                self.options.budget.charge(response.usage)

    def _write_sample_log(
        self, task: Task, store: SampleStore, current: dict[str, int], settings: GenerationSettings
    ) -> None:
        assert self.options.output_dir is not None
        ordered = sorted((store.records[s] for s in current if s in store.records), key=lambda r: r["doc_id"])
        texts = store.prompt_texts()  # the export of the records: each prompt's text from the journal's prompt store
        lines = (
            sample_line(with_prompt(record, texts), task.doc(record["doc_id"]), settings.to_dict())
            for record in ordered
        )
        write_sample_log(
            self.options.output_dir / sample_log_name(task.name, self.options.date_id, self.options.log_samples_suffix),
            lines,
        )

    def _open_task(self, task: Task) -> _TaskRun:
        """A task's journal, opened, and its documents screened (what is resumed, failed the screen, or pending)."""
        started = time.perf_counter()
        settings = task.generation_settings(self.options.gen_kwargs, self.options.seed)
        parts: dict[str, Any] = {
            "model": redact_mapping(self.model.identity()),
            "generation": settings.to_dict(),
            "task": task.identity(),
            "scoring": task.scoring_identity(),
            "task_docs": len(task),
        }
        if self.options.shard is not None:
            parts["shard"] = str(self.options.shard)
        if self.options.reasoning_tags:  # only where set: a run without keeps the journals it had
            parts["reasoning_tags"] = describe_tags(self.options.reasoning_tags)
        if self.options.answer_tags:
            parts["answer_tags"] = list(self.options.answer_tags)
        path = self.options.output_dir / journal_name(task.name) if self.options.output_dir else None
        store = SampleStore(path, task.name, parts, task.builtin_aggregations(), task.same_data)
        try:
            screened = self._screen_task(task, store, settings)
            if self.options.budget is not None:  # what the journal holds was paid for by an earlier run
                for sample in screened.current:
                    if sample in store.outcomes:
                        self.options.budget.charge(store.outcomes[sample].usage)
            if self._overall is not None:
                overall, index = self._overall
                overall.screened(index, len(screened.pending))
            return _TaskRun(task, settings, store, screened, started)
        except BaseException:
            store.close()
            raise

    def _pending(self, run: _TaskRun) -> LazyRequests:
        return LazyRequests(self.requests, run.task, run.settings, [doc_id for _, doc_id in run.screened.pending])

    def _task_result(self, run: _TaskRun) -> TaskResult:
        """Judge, compact the journal, write the sample log and aggregate, once the task's generation is done."""
        task, store, screened = run.task, run.store, run.screened
        current = sorted((s for s in screened.current if s in store.outcomes), key=lambda s: store.outcomes[s].doc_id)
        rescored = self._score_unscored(task, store, current)
        store.add(refresh_cluster_keys(task, store.records, current))
        outcomes = [store.outcomes[s] for s in current]
        judge_counts: dict[str, int] = {}
        judge_usages: list[dict[str, int]] = []
        if task.judge is not None and self.options.judge is not None and self.options.score:
            budget = self.options.budget
            if budget is not None:
                budget.check()  # reached already (the answers, or this command's earlier runs): the judge is not asked
            outcomes, judge_counts = judge_task(
                task,
                store,
                current,
                self.options.judge.for_task(task.name),
                self.options.output_dir,
                self.options.progress,
                judge_usages,
                budget.judge_payer(task.name) if budget is not None else None,
            )
        store.compact()
        if self.options.log_samples and self.options.output_dir is not None:
            self._write_sample_log(task, store, screened.current, run.settings)
        counts = Counter(o.status for o in outcomes)
        scored = scored_rows(task, store.records, current, outcomes)
        return TaskResult(
            task=task,
            settings=run.settings,
            fingerprint=store.fingerprint,
            **vars(task.aggregate(scored, self.options.bootstrap_iters) if self.options.score else Aggregated()),
            counts={s: counts.get(s, 0) for s in STATUSES},
            n_effective=len(screened.current),
            resumed=screened.resumed,
            changed=screened.changed,
            generated=len(screened.pending),
            seconds=time.perf_counter() - run.started,
            usage=sum_usage([o.usage for o in outcomes]),
            answer_usages=[o.usage for o in outcomes if o.usage],
            task_docs=len(task),
            judge_counts=judge_counts,
            judge_usage=sum_usage(judge_usages),
            judge_usages=judge_usages,
            rescored=rescored,
            truncated=sum(1 for s in current if s in store.records and store.records[s].get("truncation")),
            past_window=sum(1 for s in current if s in store.records and store.records[s].get("past_window")),
        )

    def run_task(self, task: Task) -> TaskResult:
        run = self._open_task(task)
        try:
            self._generate({task.name: run}, self._pending(run), task.name)
            return self._task_result(run)
        finally:
            run.store.close()

    def run_together(self, tasks: Sequence[Task], overall: OverallProgress | None = None) -> list[TaskResult]:
        """Every task screened first, then all their pending requests through the model as one sequence (in task
        order, each task's long first), so an engine that schedules its own batches (vLLM) is never left with one
        task's tail; each answer still goes to its task's journal as its chunk arrives. Requests are built from
        their rows a batch at a time, as `LazyRequests` does."""
        with ExitStack() as stack:
            runs: dict[str, _TaskRun] = {}
            for index, task in enumerate(tasks):
                if overall is not None:
                    self._overall = (overall, index)
                stack.enter_context(task.rows())  # every task's rows at once: their requests run interleaved
                run = self._open_task(task)
                stack.callback(run.store.close)
                runs[task.name] = run
            requests: Sequence[Request] = ChainedRequests([self._pending(run) for run in runs.values()])
            if (
                self.model.facts.request_order == "cache" and len(runs) > 1
            ):  # a haystack shown by several tasks (lengths)
                pending = [
                    (tokens, run.screened.keys[doc_id])
                    for run in runs.values()
                    for tokens, doc_id in run.screened.pending
                ]
                requests = OrderedRequests(requests, cache_order([t for t, _ in pending], [k for _, k in pending]))
            for run in runs.values():
                run.screened.keys.clear()
            self._generate(runs, requests, f"{len(tasks)} tasks")
            return [self._task_result(run) for run in runs.values()]

    def run(self, tasks: Sequence[Task]) -> list[TaskResult]:
        # An engine sized once for the whole run (vLLM's limit_mm_per_prompt), not for its first task.
        counts = [n for n in (task.max_num_images() for task in tasks) if n is not None]
        if counts:
            self.model.prepare(max(counts))
        if len(tasks) < 2:
            return [self._run_task_rows(task) for task in tasks]
        shard = self.options.shard  # the documents of each task this run evaluates: its shard's
        documents = [len(task) if shard is None else shard_sizes(len(task), shard.count)[shard.index] for task in tasks]
        overall = OverallProgress(documents, self.options.progress)
        try:
            if self.model.facts.generates_across_tasks and len({task.name for task in tasks}) == len(tasks):
                return self.run_together(tasks, overall)
            results = []
            for index, task in enumerate(tasks):
                self._overall = (overall, index)
                results.append(self._run_task_rows(task))
            return results
        finally:
            self._overall = None
            overall.close()

    def _advance_overall(self, samples: int) -> None:
        if self._overall is not None:
            self._overall[0].update(samples)

    def _run_task_rows(self, task: Task) -> TaskResult:
        with task.rows():  # one task's rows in memory at a time (`Task.unload`)
            return self.run_task(task)
