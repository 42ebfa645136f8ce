"""The command line of an evaluation (`harness --tasks ... --model ...`): every flag, its help and its check.

`run_parser` is what `harness` and `harness run` parse; `harness.run_plan.plan_run` turns its namespace into the
run's plan. lm-eval's everyday flags are added by `add_lm_eval_flags` and `harness.lm_eval_flags`.
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

from harness.lm_eval_flags import SeedsAction, add_compat_flags
from harness.run_plan import TOKEN_BUDGET_BATCH_SIZE


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version

    try:
        return package_version("mmlongeval")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _limit(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of documents or a fraction, got {text!r}") from None
    if value == 0:
        raise argparse.ArgumentTypeError("0 documents would evaluate nothing; give N >= 1 or a fraction in (0, 1)")
    if not math.isfinite(value) or value < 0 or (value >= 1 and value != int(value)):
        raise argparse.ArgumentTypeError(f"expected an integer >= 1 or a fraction in (0, 1), got {text!r}")
    return value


def run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Evaluate a vision-language model on tasks from tasks/ (lm-eval-style YAML).",
        epilog="Other commands: `harness ls` (tasks, groups, tags), `harness models` (backends, aliases), "
        "`harness report RESULTS_DIR` (markdown table and plots), `harness view RESULTS_DIR` (a local web page "
        "over runs, samples and their images), `harness merge OUT SHARD_DIR...` "
        "(combine --shard runs). Example: harness --tasks "
        "mmneedle_m1_n2_k1_pos --model random --data_dir data --output_path results",
    )
    parser.add_argument(
        "--tasks",
        required=True,
        help="comma-separated task, group, tag or dataset config names "
        "(<benchmark>_<config>: all its tasks), globs, or YAML paths; `list` prints them all",
    )
    parser.add_argument(
        "--model",
        help="backend (hf, vllm, openai, constant, random) or an alias (qwen2.5-vl, ...); required unless --tasks list",
    )
    parser.add_argument(
        "--model_args", default="", help='k=v,k2=v2 for the backend; quote values with commas: answer="1, 2, 3"'
    )
    parser.add_argument(
        "--data_dir",
        help="folder holding built datasets, or a pushed build on the Hub: "
        "hf://ORG/NAME@REVISION (default: $MMLONGEVAL_DATA_DIR, then ~/.cache/mmlongeval/data, then "
        "the task's metadata.hub_repo)",
    )
    parser.add_argument(
        "--trust_unverified_data",
        action="store_true",
        help="read data that cannot be verified (no "
        "build manifest, a malformed one, files it does not list) instead of refusing it; the "
        'results and the report then say "unverified"',
    )
    parser.add_argument(
        "--include_path",
        action="append",
        default=[],
        type=Path,
        help="extra folder (or YAML file) of tasks; may be repeated",
    )
    parser.add_argument(
        "--limit",
        type=_limit,
        help="first N documents (N >= 1) of each task, or a fraction in (0, 1) "
        "(testing only); --limit 0 is refused, as it would score nothing",
    )
    parser.add_argument(
        "--batch_size",
        type=_batch_size,
        help="requests per model call (default 1; with "
        f"--max_batch_tokens the most requests per batch, default {TOKEN_BUDGET_BATCH_SIZE}); `auto`: "
        "the largest that fits in device memory, from --max_batch_size down (hf; recorded in the results)",
    )
    parser.add_argument(
        "--max_batch_tokens",
        type=int,
        help="hf: batch by the rows' token counts, at most this many "
        "tokens per batch counting padding (prompt + max_gen_toks), long prompts first",
    )
    parser.add_argument(
        "--shard",
        help="run only shard I of N of every task (0-based: 0/4 .. 3/4), for batch "
        "schedulers; combine the shards' output folders with `harness merge`",
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="where the replicas of "
        "--model_args data_parallel_size=D run, as Ray actors: without ADDRESS a Ray instance started on "
        "this machine for the run (also the default with D > 1, unless $RAY_ADDRESS is set); `auto` the "
        "cluster `ray start` runs here; or a cluster's address (needs: pip install -e '.[ray]'; see "
        "docs/scaling.md)",
    )
    parser.add_argument(
        "--seed",
        action=SeedsAction,
        default=0,
        help="seed for sampling and the random baseline "
        "(default 0); lm-eval's four, random,numpy,torch,fewshot (0,1234,1234,1234), are taken too",
    )
    parser.add_argument(
        "--gen_kwargs", default="", help="override generation settings of every task: max_gen_toks=64,temperature=0"
    )
    parser.add_argument(
        "--metadata", default="", help='JSON merged into every task\'s metadata, e.g. \'{"subset": "full"}\''
    )
    parser.add_argument(
        "-o",
        "--output_path",
        type=Path,
        help="write results, the resumable sample journal and the "
        "response cache under OUTPUT_PATH/<model>/ (without it nothing is saved)",
    )
    parser.add_argument(
        "--cache_dir",
        type=Path,
        help="keep the response cache in CACHE_DIR/cache.sqlite3, shared by "
        "every output path and model (default: $MMLONGEVAL_CACHE_DIR, else OUTPUT_PATH/<model>/)",
    )
    parser.add_argument("--no_cache", action="store_true", help="do not read or write the response cache")
    parser.add_argument(
        "--log_samples",
        action="store_true",
        help="also write samples_<task>_<date>.jsonl as lm-eval "
        "does: each sample's prompt (<image> markers), answer, target, metrics and image hashes",
    )
    parser.add_argument(
        "--allow_failures",
        action="store_true",
        help="exit 0 even when some samples or judge calls "
        "failed with errors (timeouts, provider errors): they are left out of the denominators either "
        "way, and a rerun of the same command tries them again",
    )
    parser.add_argument("--no_progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--judge_model",
        help="backend or alias that judges the tasks with a `judge:` block after "
        "generation (MMLongBench summarization: the paper's GPT-4o Fluency-F1), e.g. openai; without "
        "it those tasks report only their own metrics",
    )
    parser.add_argument(
        "--judge_args",
        default="",
        help="k=v model args of the judge (e.g. model=gpt-4o-2024-11-20,"
        "base_url=...; the task names its paper's judge as the default `model`)",
    )
    parser.add_argument(
        "--screen_only",
        action="store_true",
        help="build every request and screen it as the run "
        "would (over_length, too_many_images, invalid input) under the model's limits, without "
        "loading the model; print the counts per task and write nothing",
    )
    add_lm_eval_flags(parser)
    parser.add_argument("-V", "--version", action="version", version=f"harness (mmlongeval) {version()}")
    return parser


def _batch_size(text: str) -> int | str:
    """An integer >= 1, or lm-eval's `auto` (`auto:N` too: lm-eval searches N times, this harness on every
    out-of-memory, so N changes nothing)."""
    return "auto" if text == "auto" or text.startswith("auto:") else positive_int(text, " or auto")


def add_lm_eval_flags(parser: argparse.ArgumentParser) -> None:
    """The lm-eval flags its users type every day, with what each means here."""
    from harness.models.scheduling.auto_batch import DEFAULT_START

    group = parser.add_argument_group("lm-eval's flags")
    group.add_argument(
        "--max_batch_size",
        type=positive_int,
        default=DEFAULT_START,
        help=f"where --batch_size auto starts its search (default {DEFAULT_START})",
    )
    group.add_argument(
        "--predict_only",
        action="store_true",
        help="generate and journal the answers without "
        "scoring them (implies --log_samples; needs --output_path); the results say so, and a later run "
        "without the flag scores the journalled answers without generating again",
    )
    group.add_argument(
        "--apply_chat_template",
        nargs="?",
        const=True,
        default=False,
        metavar="TEMPLATE",
        help="accepted for lm-eval's command lines: every backend always renders the model's own chat "
        "template (a template name other than the model's is refused)",
    )
    group.add_argument(
        "--system_instruction",
        help="text for a system turn before every prompt (before a task's own "
        "system prompt); recorded in the results and part of the response cache's key",
    )
    group.add_argument(
        "-w",
        "--write_out",
        action="store_true",
        help="print the first rendered prompts of each task (<image> marks each image) before generating",
    )
    group.add_argument(
        "-v",
        "--verbosity",
        type=str.upper,
        choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
        help="log level of the libraries (transformers, datasets, vllm, httpx); the harness's own "
        "`harness:` lines are always printed",
    )
    group.add_argument(
        "--hf_hub_log_args",
        default="",
        help="lm-eval's k=v list to upload the results to a Hub "
        "dataset repo: hub_results_org=ORG,results_repo_name=NAME (default mmlongeval-results),"
        "push_results_to_hub=True,push_samples_to_hub=True,public_repo=False (token: $HF_TOKEN)",
    )
    add_compat_flags(group)  # --device, --num_fewshot, --wandb_args, ... (`harness.lm_eval_flags`)


def positive_int(text: str, alternatives: str = "") -> int:
    # ASCII digits, few enough to convert (`isdigit()` takes "²", and 5,000 digits, which int() refuses)
    value = int(text) if re.fullmatch(r"\s*[0-9]{1,18}\s*", text) else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1{alternatives}, got {text!r:.40}")
    return value
