"""`harness --tasks ... --model ...`: one evaluation run executed from its plan (`harness.run.plan`), as lm-eval's
`evaluator.py` sits above its models and tasks: the model (and judge) opened behind the response cache, every task
screened, generated, scored and journalled by the runner, and the results written once every task has finished.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.models.facts.reasoning import opens_thinking
from harness.run.models import departures, open_judge, open_model, run_policies
from harness.run.plan import RunPlan, plan_run

if TYPE_CHECKING:
    from harness.api import Model
    from harness.inputs.input_policy import RunPolicies
    from harness.models.facts.reasoning import AnswerTags, ReasoningTags
    from harness.outputs.results.results_file import ResultsFile, RunFileRecord
    from harness.run.arguments import EvaluationOptions
    from harness.running.sharding import Shard
    from harness.running.task.judge import Judges
    from harness.running.task.task import TaskResult


def run_with_results(
    options: EvaluationOptions, argv: Sequence[str], run_file: RunFileRecord | None = None
) -> tuple[int, ResultsFile | None]:
    """Run the evaluation `harness` was asked for (`argv`, and the `--config` file it names, `run_file`, read into
    `options`): its exit code and the results it wrote (None where it wrote none: `--screen_only`, a run that
    stopped); the Python API's entry too (`harness.run.evaluator`: `argv` the command line its keywords stand for). The
    options become the run's plan here, and only the plan goes on."""
    from harness.redact import scrubbed_output

    with scrubbed_output():
        return _execute_plan(plan_run(options, argv, run_file))


def _execute_plan(plan: RunPlan) -> tuple[int, ResultsFile | None]:
    """The run `plan` describes: its exit code and its results (None where it wrote none)."""
    from harness.running.lock import OutputLock

    for line in departures(plan):  # tasks the paper's run of the alias left out: said, then run
        print(line, file=sys.stderr)
    if plan.options.screen_only:
        return _screen_only(plan), None
    if plan.output_dir is None:
        print(
            "harness: no --output_path: results are printed only, and an interrupted run cannot resume", file=sys.stderr
        )
    try:
        if plan.output_dir is None:
            return _execute(plan)
        # Held from before the model is loaded until the results are written; released (its file removed)
        # however the run ends, a failed start included.
        with OutputLock(plan.output_dir, plan.command(), plan.secrets):
            return _execute(plan)
    except KeyboardInterrupt:  # Ctrl-C while the model loads, its replicas start, or the results are written
        print(interrupted_line(plan.output_dir), file=sys.stderr)
        return 130, None


def interrupted_line(output_dir: Path | None) -> str:
    """What Ctrl-C of a run prints, at whatever moment it comes."""
    where = f"; finished samples are saved under {output_dir}, run the same command to resume" if output_dir else ""
    return f"harness: interrupted{where}"


def _stopped_message(err: BaseException, output_dir: Path | None) -> str:
    """One line for a backend that stopped the run; a longer report (a replica's traceback) goes to a
    file in the output folder."""
    from harness.file_writing import write_text

    text = str(err).strip() or type(err).__name__
    first, _, rest = text.partition("\n")
    message = f"the model backend stopped: {first}"
    if rest.strip() and output_dir is not None:
        details = write_text(output_dir / "backend_error.log", text)
        message += f" (details in {details})"
    if output_dir is not None:
        message += f"; finished samples are saved under {output_dir}, run the same command to resume"
    return message


def _screen_only(plan: RunPlan) -> int:
    """--screen_only: the screen's decisions for every request, the model never loaded, nothing written; and what the
    run would cost."""
    from harness.run.cost import run_estimate, screened
    from harness.running.cost_estimate import cost_lines
    from harness.running.screen_only import policy_table, screen_table

    model, results = screened(plan)
    policies = _policies_written_out(plan, model)
    print(screen_table(model, results))  # scrubbed as all output is (`run`)
    thinking = thinking_line(*plan.thinking_with(model.facts.chat_template))
    if thinking:
        print(thinking)
    if policies.describe():
        print("\n" + policy_table(plan.model.alias or plan.model.name, policies.describe()))
    from harness.models.registry import backend_spec

    estimates = run_estimate(plan, model, results)
    if backend_spec(plan.model.backend).priced or any(e.priced_as for e in estimates):
        print("\n".join(cost_lines(estimates)))
    return 0


def _policies_written_out(plan: RunPlan, model: Model) -> RunPolicies:
    """The run's input policies (`run_policies`), once `--write_out` has printed the first prompts as the run's
    backend renders them."""
    policies = run_policies(plan)
    if plan.options.write_out:
        from harness.running.request_building import write_out

        write_out(plan.tasks, plan.options.gen_kwargs, plan.options.sampling_seed, model=model, policies=policies)
    return policies


def thinking_line(tags: ReasoningTags | None, answer: AnswerTags | None, source: str) -> str:
    """What the screen says of the model's thinking: what the run takes out of each answer before scoring, and why;
    "" where it takes nothing out."""
    if not tags:
        return ""
    blocks = ", ".join(f"{start}...{end}" for start, end in tags).replace("\n", "\\n")  # a declared `thought\n`
    kept = f", then what {answer[0]}...{answer[1]} holds is scored" if answer else ""
    return (
        f"Thinking: {blocks} taken out of each answer before scoring{kept} (from {source}; the whole output is kept in "
        "the journal; --reasoning_tags none scores it whole)."
    )


def _execute(plan: RunPlan) -> tuple[int, ResultsFile | None]:
    from harness.api import BackendFatalError
    from harness.outputs.results.results import build_results, predict_only, summary_table
    from harness.run.cost import budget_for, run_costs
    from harness.run.results_config import cache_stats, run_config
    from harness.running.runner import Runner, RunOptions

    output_dir = plan.output_dir
    budget = budget_for(plan)  # before the model opens: a run over its budget sends nothing
    model = open_model(plan)
    try:
        judge = None if plan.options.predict_only else open_judge(plan)
    except BaseException:
        model.close()
        raise
    policies = _policies_written_out(plan, model)
    # the thinking taken out, decided again with the template the model renders with, where it says one
    thinking_tags, answer_tags, thinking_from = plan.thinking_with(model.facts.chat_template)
    options = RunOptions(
        data_dir=plan.options.data_dir,
        limit=plan.options.limit,
        seed=plan.options.sampling_seed,
        gen_kwargs=plan.options.gen_kwargs,
        output_dir=output_dir,
        log_samples=plan.sample_logs,
        progress=not plan.options.no_progress,
        shard=plan.options.shard,
        judge=judge,
        policies=policies if policies.by_task else None,
        score=not plan.options.predict_only,
        log_samples_suffix=plan.options.log_samples_suffix,
        reasoning_tags=thinking_tags,
        answer_tags=answer_tags,
        # the template the prompts are rendered with: where the model says none, the checkpoint's own (vLLM's)
        thinking_opened=opens_thinking(model.facts.chat_template or plan.checkpoint_template, thinking_tags),
        budget=budget,
        bootstrap_iters=plan.options.bootstrap_iters,
    )
    started = time.time()
    try:
        task_results = Runner(model, options).run(plan.tasks)
    except KeyboardInterrupt:
        print(interrupted_line(output_dir), file=sys.stderr)
        return 130, None
    except BackendFatalError as err:
        print(f"harness: error: {_stopped_message(err, output_dir)}", file=sys.stderr)
        return 1, None
    finally:
        finished = time.time()  # the evaluation's end: shutting the model (and judge) down is not evaluation
        identity, stats, backend_stats = model.identity(), cache_stats(model), model.statistics()
        extra = _model_config(model, policies, thinking_tags, thinking_from, answer_tags)
        model.close()
        judge_served = judge.served_models() if judge is not None else {}
        if judge is not None:
            extra["judge"] = _judge_config(plan, judge)
            judge.close()
    config = run_config(plan, identity, {**stats, "backend_stats": backend_stats, **extra})
    results = build_results(task_results, plan.selection.groups, plan.index.groups, config, started, finished)
    costs = run_costs(plan, task_results, identity, judge_served)
    if costs:
        results["cost"] = costs
    if plan.options.predict_only:
        predict_only(results)
    print(summary_table(results))
    _report_run(task_results, stats, plan.options.shard)
    _share(plan, results, _save_results(plan, results, options.date_id), options.date_id)
    return _exit_code(task_results, plan.options.allow_failures, output_dir), results


def _model_config(
    model: Model,
    policies: RunPolicies,
    thinking_tags: ReasoningTags | None,
    thinking_from: str,
    answer_tags: AnswerTags | None,
) -> dict[str, object]:
    """What the results' config records of how the model counted, rendered and was read: its token rule, chat
    template (with its sha256, as lm-eval records it), input policies, and the thinking taken out of its answers."""
    import hashlib

    template = model.facts.chat_template
    extra: dict[str, object] = {
        "token_counting": model.token_rule,
        "chat_template": template,
        "chat_template_sha": hashlib.sha256(template.encode("utf-8")).hexdigest() if template else None,
        "input_policies": policies.describe(),
    }
    if thinking_tags:  # only where set (the flag, the alias's, the template's): results without stay as they were
        extra["reasoning_tags"] = [list(pair) for pair in thinking_tags]
        extra["reasoning_tags_from"] = thinking_from
    if answer_tags:
        extra["answer_tags"] = list(answer_tags)
    return extra


def _save_results(plan: RunPlan, results: ResultsFile, date_id: str) -> Path | None:
    """The results file written to the output folder (and the copy `--output_path x.json` asks for), each said;
    None without an output folder."""
    from harness.outputs.results.results_file import write_results, write_results_copy

    if plan.output_dir is None:
        return None
    results_file = write_results(results, plan.output_dir, date_id)
    print(f"harness: results written to {results_file}", file=sys.stderr)
    if plan.results_copy is not None:
        copy = write_results_copy(results, results_file, plan.results_copy, date_id)
        print(
            f"harness: --output_path {plan.results_copy}: the results also in {copy}, as lm-eval names them",
            file=sys.stderr,
        )
    return results_file


def _share(plan: RunPlan, results: ResultsFile, results_file: Path | None, date_id: str) -> None:
    """After the results are saved (printing or uploading them never costs the run its file): the configs
    `--show_config` prints, the `--predict_only` note, the Hub upload (`--hf_hub_log_args`: the results file, and with
    push_samples_to_hub the run's sample logs) and the Weights & Biases log (`--wandb_args`, wandb.init's, and
    `--wandb_config_args`, the run's config)."""
    from harness.run.lm_eval_flags import show_configs

    if plan.options.show_config:
        print(show_configs(results["configs"]))
    if results_file is not None:
        if plan.options.predict_only:
            print(f"harness: --predict_only: {results['predict_only']}", file=sys.stderr)
        if plan.hub is not None:
            from harness.outputs.results.publish import upload_results  # only where asked: it brings huggingface_hub

            assert plan.output_dir is not None  # a results file is written there
            files = [results_file]
            if plan.hub.push_samples:
                files += sorted(plan.output_dir.glob(f"samples_*_{date_id}.jsonl"))
            print(f"harness: results uploaded to {upload_results(plan.hub, plan.output_dir, files)}", file=sys.stderr)
    if plan.options.wandb_args:
        from harness.outputs.results.publish import log_results

        logged = log_results(results, plan.options.wandb_args, plan.options.wandb_config_args, results_file)
        print(f"harness: results logged to Weights & Biases: {logged}", file=sys.stderr)


def _first_error(task_results: list[TaskResult], output_dir: Path) -> str:
    """`the first (TASK, sample ID): ERROR; ` from the journals this run wrote, so the console says why at once; ""
    where no journal holds one (samples refused before generation say why by their status)."""
    from harness.running.journal.journal_file import journal_name, parse_line

    for result in task_results:
        try:
            with (output_dir / journal_name(result.task.name)).open("rb") as journal:
                for line in journal:
                    record, _ = parse_line(line)
                    error = record.get("error") if isinstance(record, dict) else None
                    if isinstance(error, str) and error:
                        shown = " ".join(error.split())
                        shown = shown if len(shown) <= 300 else f"{shown[:300]}..."
                        return f"the first ({result.task.name}, sample {record.get('sample_id')}): {shown}; "
        except OSError:
            continue
    return ""


def _exit_code(task_results: list[TaskResult], allow_failures: bool, output_dir: Path | None = None) -> int:
    """1 when nothing could be scored or the judge answered nothing, or (unless allowed) when samples or judge
    calls failed with errors; else 0."""
    samples = sum(r.n_effective for r in task_results)
    if samples and not sum(r.n_scored for r in task_results):
        statuses = Counter[str]()
        for result in task_results:
            statuses.update(result.counts)  # keeps the first task's order (`sum` of Counters drops zeros and reorders)
        shown = ", ".join(f"{n} {status}" for status, n in statuses.items() if n)
        where = (
            f"{_first_error(task_results, output_dir)}every sample's is the error field of its journal in {output_dir}"
            if output_dir is not None
            else "run again with --output_path to keep each sample's error in its journal"
        )
        print(f"harness: error: no sample of this run was scored ({shown}); {where}", file=sys.stderr)
        return 1
    judge_failed = sum(r.judge_counts.get("n_judge_error", 0) for r in task_results)
    judge_answered = sum(
        r.judge_counts.get("n_judged", 0) + r.judge_counts.get("n_judge_unparsed", 0) for r in task_results
    )
    if judge_failed and not judge_answered:
        print(
            f"harness: error: every judge call of this run failed ({judge_failed} sample(s)), so no judge metric "
            "was scored; see the error fields of judge_<task>.jsonl, then run the same command again",
            file=sys.stderr,
        )
        return 1
    failed = sum(r.counts.get("error", 0) for r in task_results)
    if (failed or judge_failed) and not allow_failures:
        what = [f"{failed} sample(s) failed with errors and are left out of the scores above"] if failed else []
        if judge_failed:
            what.append(f"the judge failed on {judge_failed} sample(s), left out of the judge metrics above")
        print(
            f"harness: error: {'; '.join(what)}; run the same command again to retry them, or pass "
            "--allow_failures to accept the run as it is",
            file=sys.stderr,
        )
        return 1
    return 0


def _report_run(task_results: list[TaskResult], stats: Mapping[str, object], shard: Shard | None) -> None:
    """What the table does not say: resumed samples, refusals and failures, tokens, cache use."""
    for r in task_results:
        if r.changed:
            print(
                f"harness: {r.task.name}: {r.changed} journalled samples were answered for other inputs (their "
                "prompts or images changed since); they were generated again",
                file=sys.stderr,
            )
        refused, failed = r.counts.get("refused", 0), r.counts.get("error", 0)
        if refused or failed:
            print(
                f"harness: {r.task.name}: {refused} refused by the provider, {failed} failed (both excluded from "
                "the denominators; failed samples are tried again by a rerun)",
                file=sys.stderr,
            )
        if r.past_window:  # as the run was told to (`past_window`), each journalled so
            print(f"harness: {r.task.name}: {r.past_window} answers ran past the checkpoint's window", file=sys.stderr)
        if r.usage:
            tokens = ", ".join(f"{k} {v}" for k, v in r.usage.items() if "." not in k)
            print(f"harness: {r.task.name}: token usage: {tokens}", file=sys.stderr)
    resumed = [r for r in task_results if r.resumed]
    if resumed:  # one line for the run, however many tasks it resumed
        which = f"{resumed[0].task.name}: " if len(task_results) == 1 else ""
        tasks = f" ({len(resumed)} of {len(task_results)} tasks)" if len(task_results) > 1 else ""
        print(
            f"harness: {which}{sum(r.resumed for r in resumed)} samples resumed from the journal, "
            f"{sum(r.generated for r in task_results)} generated now{tasks}",
            file=sys.stderr,
        )
    if stats.get("cache"):
        print(
            f"harness: response cache {stats['cache']}: {stats['cache_hits']} hits, {stats['requests_sent']} "
            f"requests sent to the model",
            file=sys.stderr,
        )
    if shard is not None:
        print(
            f"harness: shard {shard}: these results cover only this shard's documents; combine every shard "
            "with `harness merge OUT SHARD_DIR...`",
            file=sys.stderr,
        )


def _judge_config(plan: RunPlan, judges: Judges) -> dict[str, object]:
    """What the results record of the run's judges: the first judged task's judge (`model` and its cache figures,
    as a run of one judge always recorded), and where the tasks asked more than one, each with its tasks."""
    from harness.redact import redact_mapping
    from harness.run.results_config import cache_stats

    models = list(judges.models.items())
    first = models[0][1]
    config: dict[str, object] = {
        "model": redact_mapping(first.identity()),
        **cache_stats(first),
        "max_reply_chars": {task.name: task.judge.max_reply_chars for task in plan.tasks if task.judge is not None},
    }
    if len(models) > 1:
        config["judges"] = [
            {"model": redact_mapping(model.identity()), "tasks": judges.tasks_of(name), **cache_stats(model)}
            for name, model in models
        ]
    return config
