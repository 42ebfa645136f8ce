"""The lm-eval and lmms-eval flags their users type every day (`harness --help`'s "lm-eval's flags"), declared once
(`harness.run.declared_options`): each does here what it does there, or, where it cannot mean anything here, is accepted
and said so in one line (never a usage error on a command line copied from lm-eval). What each does: its help, and
the table of docs/lm-eval.md.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from builders.core.contract import option, positive_int, switch
from harness.errors import UserError
from harness.models.registry import backend_spec
from harness.models.shared.scheduling.auto_batch import DEFAULT_START
from harness.run.declared_options import DeclaredOptions, arguments_option

SEED_NAMES = ("random_seed", "numpy_seed", "torch_seed", "fewshot_seed")
# lm-eval flags with nothing to do here: what the harness does instead, said in one line when one is given
NOTHING_TO_DO = {
    "cache_requests": "requests are built from the verified build as the run goes, so there is no request cache; "
    "the models' answers are cached (the response cache: --cache_dir, --no_cache)",
    "check_integrity": "every run checks its data itself: each file against its build manifest's sha256 and each "
    "image against its own before it is scored (docs/integrity.md); there is no task test suite to run",
    "fewshot_as_multiturn": "the tasks here are zero-shot, as their papers ran them: there are no few-shot examples to "
    "send as turns",
    "confirm_run_unsafe_code": "no task here runs code a model wrote (lm-eval asks it of its code-execution tasks), "
    "so there is nothing to confirm",
}
MAX_SEED = 2**32 - 1  # NumPy's seeds are 0 .. 2**32 - 1; every seed here is held to the same range
LM_EVAL = "lm-eval's flags"  # their group in `harness --help`
VERBOSITIES = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
Seeds = tuple[int, int | None, int | None, int | None]  # lm-eval's four: random, numpy, torch, fewshot


def read_seeds(value: object) -> Seeds:
    """`--seed 0` or lm-eval's `--seed 0,1234,1234,1234` (a seed may be `None`; a keyword: an int or a list): the
    first is the one every draw here uses, an omitted one is the first."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        value = ",".join(str(v) for v in value)
    parts = [p.strip() for p in str(value).split(",")]
    if not 1 <= len(parts) <= 4:
        raise UserError(
            f"--seed: expected one seed or lm-eval's four (random,numpy,torch,fewshot), got {_shown(value)}"
        )
    seeds: list[int | None] = []
    for part in parts:
        # ASCII digits only (`isdigit()` takes "²", which int() refuses), few enough to convert, in NumPy's range.
        seed = int(part) if re.fullmatch(r"[0-9]{1,10}", part) else None
        if part != "None" and (seed is None or seed > MAX_SEED):
            raise UserError(f"--seed: each seed must be an integer from 0 to {MAX_SEED} (or None), got {_shown(part)}")
        seeds.append(seed)
    first = seeds[0]
    if first is None:
        raise UserError("--seed: the first seed (sampling and the random baseline) cannot be None")
    seeds += [first] * (4 - len(seeds))
    return (first, seeds[1], seeds[2], seeds[3])


def gen_kwargs_keys() -> frozenset[str]:
    """The keys `--gen_kwargs` takes: the generation settings', and transformers' `max_new_tokens` and `num_beams`
    (1 only: no run makes a beam search)."""
    from harness.api import GenerationSettings

    return frozenset({*GenerationSettings.__dataclass_fields__, "max_new_tokens", "num_beams"})


def gen_kwargs_flag(flag: str, value: str) -> str | None:
    """`--gen_kwargs num_beams=4` for `--num_beams 4`: a decoding setting typed as a flag, as transformers' `generate`
    spells it (lm-eval takes it in --gen_kwargs), named as the key it is; None for any other flag."""
    key = flag.removeprefix("--")
    return f"--gen_kwargs {key}={value or 'VALUE'}" if key in gen_kwargs_keys() else None


def _shown(text: object) -> str:
    """A value quoted in a message, cut to 40 characters."""
    text = str(text)
    return repr(text) if len(text) <= 40 else f"{text[:30]!r}... ({len(text):,} characters)"


def _by_index(flag: str, value: str) -> str | None:
    return (
        f"{flag}: documents chosen by index are not supported here; --limit N evaluates the first N documents "
        "of each task (and the journal keeps every answer: a later, larger run asks only for the new ones)"
    )


def _named_template(flag: str, value: bool | str) -> str | None:
    if isinstance(value, str):
        return (
            f"{flag} {value}: every backend renders the model's own chat "
            "template; a named template is not supported (give the flag without a name)"
        )
    return None


def _few_shots(flag: str, value: int) -> str | None:
    if value != 0:
        return (
            f"{flag} {value}: the tasks here are zero-shot, as their papers evaluate them (a benchmark's "
            f"in-context examples are part of its prompts); only {flag} 0 is accepted"
        )
    return None


def _suffix(flag: str, value: str) -> str | None:
    if not value.replace("-", "").replace("_", "").isalnum():
        return f"{flag} {value!r}: letters, digits, - and _ only (it is part of a file name)"
    return None


@dataclass(frozen=True, kw_only=True)
class LmEvalOptions(DeclaredOptions):
    """lm-eval's flags, in `harness --help`'s order (`harness.run.arguments.EvaluationOptions` adds the others)."""

    max_batch_size: int = option(
        DEFAULT_START,
        f"where --batch_size auto starts its search (default {DEFAULT_START})",
        group=LM_EVAL,
        parse=positive_int,
        accepts="int | None",
    )
    predict_only: bool = switch(
        "generate and journal the answers without "
        "scoring them (implies --log_samples; needs --output_path); the results say so, and a later run "
        "without the flag scores the journalled answers without generating again",
        group=LM_EVAL,
    )
    apply_chat_template: bool | str = option(
        False,
        "accepted for lm-eval's command lines: every backend always renders the model's own chat "
        "template (a template name other than the model's is refused)",
        group=LM_EVAL,
        bare=True,
        metavar="TEMPLATE",
        check=_named_template,
    )
    system_instruction: str | None = option(
        None,
        "text for a system turn before every prompt (before a task's own "
        "system prompt); recorded in the results and part of the response cache's key",
        group=LM_EVAL,
    )
    write_out: bool = switch(
        "print the first rendered prompts of each task (<image> marks each image) before generating",
        group=LM_EVAL,
        short="-w",
    )
    verbosity: str | None = option(
        None,
        "log level of the libraries (transformers, datasets, vllm, httpx); the harness's own "
        "`harness:` lines are always printed",
        group=LM_EVAL,
        short="-v",
        parse=str.upper,
        choices=VERBOSITIES,
    )
    hf_hub_log_args: dict[str, str] = arguments_option(
        "lm-eval's k=v list to upload the results to a Hub "
        "dataset repo: hub_results_org=ORG,results_repo_name=NAME (default mmlongeval-results),"
        "push_results_to_hub=True,push_samples_to_hub=True,public_repo=False (token: $HF_TOKEN)",
        "--hf_hub_log_args",
        group=LM_EVAL,
    )
    device: str | None = option(
        None,
        "hf: the device to load the model on (cuda:0, cpu; as --model_args device=...); "
        "vllm, openai and the baselines place themselves",
        group=LM_EVAL,
    )
    log_samples_suffix: str | None = option(
        None,
        "lmms-eval's: name the sample logs samples_<task>_<SUFFIX>_<date>.jsonl",
        group=LM_EVAL,
        metavar="SUFFIX",
        check=_suffix,
    )
    num_fewshot: int | None = option(
        None,
        "accepted as 0 only: every task here is "
        "zero-shot as its paper evaluates it (a benchmark's in-context exemplars are part of its prompts)",
        group=LM_EVAL,
        metavar="N",
        parse=int,
        check=_few_shots,
    )
    trust_remote_code: bool = switch(
        "trust_remote_code=true for the checkpoint of the hf and vllm backends", group=LM_EVAL
    )
    use_cache: str | None = option(
        None,
        "lm-eval's response cache: the SQLite file PATH where it names one (x.db), else PATH/cache.sqlite3 (as "
        "--cache_dir PATH)",
        group=LM_EVAL,
        metavar="PATH",
        parse=str,
        accepts="str | os.PathLike[str] | None",
    )
    bootstrap_iters: int | None = option(
        None,
        "draws of the bootstrap that gives a task's own (!function) aggregation its standard errors (default 1000; "
        "0: none); means and ratios of sums have exact ones",
        group=LM_EVAL,
        metavar="N",
        parse=int,
        check=lambda flag, value: f"{flag} must be 0 or more, got {value}" if value < 0 else None,
    )
    wandb_args: dict[str, Any] = arguments_option(
        "log the results to Weights & Biases as "
        "lm-eval does (wandb.init arguments: project=...,name=...,mode=offline); needs the wandb extra",
        "--wandb_args",
        typed=True,
        group=LM_EVAL,
        metavar="K=V,...",
    )
    wandb_config_args: dict[str, Any] = arguments_option(
        "extra values for the W&B run's config, as lm-eval's",
        "--wandb_config_args",
        typed=True,
        group=LM_EVAL,
        metavar="K=V,...",
    )
    show_config: bool = switch("print each task's config after the results table, as lm-eval does", group=LM_EVAL)
    cache_requests: str | None = option(
        None,
        "accepted for lm-eval's command lines: " + NOTHING_TO_DO["cache_requests"],
        group=LM_EVAL,
        choices=("true", "refresh", "delete"),
    )
    check_integrity: bool = switch("accepted: " + NOTHING_TO_DO["check_integrity"], group=LM_EVAL)
    fewshot_as_multiturn: bool = switch("accepted: " + NOTHING_TO_DO["fewshot_as_multiturn"], group=LM_EVAL)
    confirm_run_unsafe_code: bool = switch("accepted: " + NOTHING_TO_DO["confirm_run_unsafe_code"], group=LM_EVAL)
    samples: str | None = option(
        None,
        "lm-eval's documents chosen by index: refused (--limit N evaluates the first N of each task)",
        group=LM_EVAL,
        metavar="JSON",
        check=_by_index,
    )


def apply_compat_flags(
    args: LmEvalOptions, backend: str, model_args: dict[str, str], seeds: Seeds | None = None
) -> dict[str, str]:
    """Apply what lm-eval's flags mean to this run (its backend's arguments, `seeds`: --seed's, when given); returns
    the backend's arguments (`--use_cache` names the cache folder: `harness.run.plan`). Says in one line what a flag
    changes nothing for."""
    model_args = dict(model_args)
    for flag, instead in NOTHING_TO_DO.items():
        if getattr(args, flag):
            print(f"harness: --{flag}: {instead}", file=sys.stderr)
    spec = backend_spec(backend)  # what --device and --trust_remote_code mean to it
    if args.device:
        if spec.takes_device:
            model_args.setdefault("device", args.device)
        else:
            print(
                f"harness: --device {args.device}: the {backend} backend places itself; the flag changes nothing",
                file=sys.stderr,
            )
    if args.trust_remote_code:
        if spec.runs_remote_code:
            model_args.setdefault("trust_remote_code", "true")
        else:
            print(
                f"harness: --trust_remote_code: the {backend} backend runs no checkpoint code; the flag changes "
                "nothing",
                file=sys.stderr,
            )
    if args.wandb_args:
        from harness.outputs.results.publish import check_wandb

        check_wandb()
    if seeds is not None:
        _seed_libraries(seeds)
    return model_args


def _seed_libraries(seeds: Seeds) -> None:
    """NumPy's and torch's global seeds, as lm-eval sets them (the draws here use their own seeded generators)."""
    import random

    random.seed(seeds[0])
    if seeds[1] is not None:
        import numpy as np

        np.random.seed(seeds[1])
    if seeds[2] is not None and "torch" in sys.modules:  # a backend that uses torch has imported it
        sys.modules["torch"].manual_seed(seeds[2])


def recorded_flags(options: LmEvalOptions, seeds: Seeds) -> dict[str, Any]:
    """What the results' `config` records of these flags and the four `seeds`, under lm-eval's keys."""
    return {
        **dict(zip(SEED_NAMES, seeds, strict=True)),
        "bootstrap_iters": options.bootstrap_iters,
        "device": options.device,
        "use_cache": options.use_cache,
        "num_fewshot": options.num_fewshot or 0,
        "log_samples_suffix": options.log_samples_suffix,
    }


def show_configs(configs: Mapping[str, object]) -> str:
    """`--show_config`: each task's config as YAML, under its name (lm-eval prints them after its table). Printed as
    the results file holds it: a value of the YAML loader's own types (its mappings keep their line numbers) is
    written as the plain JSON value it is in that file, which `yaml.safe_dump` would refuse."""
    import json

    import yaml

    return "\n".join(
        f"--- {task} ---\n"
        + yaml.safe_dump(json.loads(json.dumps(config, default=str)), sort_keys=False, allow_unicode=True)
        for task, config in configs.items()
    )
