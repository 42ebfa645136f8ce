"""The lm-eval and lmms-eval flags their users type every day beyond those `harness.run_arguments.add_lm_eval_flags` has
always taken: each does here what it does there, or, where it cannot mean anything here, is accepted and said so in
one line (never a usage error on a command line copied from lm-eval):

    --device cuda:0            the hf backend's `device` (vllm, openai and the baselines place themselves)
    -o DIR                     --output_path
    --log_samples_suffix S     the sample logs are named samples_<task>_<S>_<date>.jsonl (lmms-eval's suffix)
    --num_fewshot 0            every task here is zero-shot as its paper ran it: 0 is accepted, another number refused
    --trust_remote_code        trust_remote_code=true for the hf and vllm backends' checkpoint
    --use_cache DIR            the response cache in DIR (lm-eval's sqlite cache: --cache_dir here)
    --bootstrap_iters N        recorded; the standard errors here are the analytic ones (N changes nothing)
    --wandb_args k=v,...       log the results to Weights & Biases, as lm-eval's WandbLogger (`harness.outputs.wandb_log`)
    --seed a,b,c,d             lm-eval's four seeds: Python's (sampling and the random baseline), NumPy's, torch's, few-shot
    --show_config              each task's config printed after the results table (it is in the results file too)
    --cache_requests, --check_integrity, --fewshot_as_multiturn
                               accepted, with one line on what the harness does instead (`NOTHING_TO_DO`)
    --samples                  refused in one line: --limit N takes the first N documents of each task
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from typing import Any

from harness.errors import UserError
from harness.models.registry import backend_spec

SEED_NAMES = ("random_seed", "numpy_seed", "torch_seed", "fewshot_seed")
# lm-eval flags with nothing to do here: what the harness does instead, said in one line when one is given
NOTHING_TO_DO = {
    "cache_requests": "requests are built from the verified build as the run goes, so there is no request cache; "
    "the models' answers are cached (the response cache: --cache_dir, --no_cache)",
    "check_integrity": "every run checks its data itself: each file against its build manifest's sha256 and each "
    "image against its own before it is scored (docs/integrity.md); there is no task test suite to run",
    "fewshot_as_multiturn": "the tasks here are zero-shot, as their papers ran them: there are no few-shot examples to "
    "send as turns",
}
MAX_SEED = 2**32 - 1  # NumPy's seeds are 0 .. 2**32 - 1; every seed here is held to the same range


class SeedsAction(argparse.Action):
    """`--seed 0` or lm-eval's `--seed 0,1234,1234,1234` (a seed may be `None`): `seed` is the first (the one every
    draw here uses), `seeds` all four (an omitted one is the first). A malformed value is a one-line `UserError`
    (argparse lets it through to the CLI's handler)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        parts = [p.strip() for p in str(values).split(",")]
        if not 1 <= len(parts) <= 4:
            raise UserError(
                f"--seed: expected one seed or lm-eval's four (random,numpy,torch,fewshot), got {_shown(values)}"
            )
        seeds: list[int | None] = []
        for part in parts:
            # ASCII digits only (`isdigit()` takes "²", which int() refuses), few enough to convert, in NumPy's range.
            seed = int(part) if re.fullmatch(r"[0-9]{1,10}", part) else None
            if part != "None" and (seed is None or seed > MAX_SEED):
                raise UserError(
                    f"--seed: each seed must be an integer from 0 to {MAX_SEED} (or None), got {_shown(part)}"
                )
            seeds.append(seed)
        if seeds[0] is None:
            raise UserError("--seed: the first seed (sampling and the random baseline) cannot be None")
        seeds += [seeds[0]] * (4 - len(seeds))
        namespace.seed = seeds[0]
        namespace.seeds = seeds


def _shown(text: Any) -> str:
    """A value quoted in a message, cut to 40 characters."""
    text = str(text)
    return repr(text) if len(text) <= 40 else f"{text[:30]!r}... ({len(text):,} characters)"


def add_compat_flags(group: argparse._ArgumentGroup) -> None:
    """The flags of the module's docstring, in `harness --help`'s lm-eval group."""
    group.add_argument(
        "--device",
        help="hf: the device to load the model on (cuda:0, cpu; as --model_args device=...); "
        "vllm, openai and the baselines place themselves",
    )
    group.add_argument(
        "--log_samples_suffix",
        metavar="SUFFIX",
        help="lmms-eval's: name the sample logs samples_<task>_<SUFFIX>_<date>.jsonl",
    )
    group.add_argument(
        "--num_fewshot",
        type=int,
        metavar="N",
        help="accepted as 0 only: every task here is "
        "zero-shot as its paper evaluates it (MMLongBench's ICL exemplars are part of its prompts)",
    )
    group.add_argument(
        "--trust_remote_code",
        action="store_true",
        help="trust_remote_code=true for the checkpoint of the hf and vllm backends",
    )
    group.add_argument(
        "--use_cache",
        metavar="DIR",
        help="lm-eval's response cache: here the cache in DIR/cache.sqlite3 (as --cache_dir DIR)",
    )
    group.add_argument(
        "--bootstrap_iters",
        type=int,
        metavar="N",
        help="recorded in the results; the standard errors here are analytic, so N changes nothing",
    )
    group.add_argument(
        "--wandb_args",
        default="",
        metavar="K=V,...",
        help="log the results to Weights & Biases as "
        "lm-eval does (wandb.init arguments: project=...,name=...,mode=offline); needs the wandb extra",
    )
    group.add_argument(
        "--wandb_config_args", default="", metavar="K=V,...", help="extra values for the W&B run's config, as lm-eval's"
    )
    group.add_argument(
        "--show_config", action="store_true", help="print each task's config after the results table, as lm-eval does"
    )
    group.add_argument(
        "--cache_requests",
        choices=("true", "refresh", "delete"),
        help="accepted for lm-eval's command lines: " + NOTHING_TO_DO["cache_requests"],
    )
    group.add_argument("--check_integrity", action="store_true", help="accepted: " + NOTHING_TO_DO["check_integrity"])
    group.add_argument(
        "--fewshot_as_multiturn", action="store_true", help="accepted: " + NOTHING_TO_DO["fewshot_as_multiturn"]
    )
    group.add_argument(
        "--samples",
        metavar="JSON",
        help="lm-eval's documents chosen by index: refused (--limit N evaluates the first N of each task)",
    )


def apply_compat_flags(args: argparse.Namespace, backend: str, model_args: dict[str, str]) -> dict[str, str]:
    """Check the flags and apply what each means to this run (its backend's arguments, the seeds); returns the
    backend's arguments (`--use_cache` names the cache folder: `harness.run_plan`). Says in one line what a flag
    changes nothing for."""
    if args.num_fewshot not in (None, 0):
        raise UserError(
            f"--num_fewshot {args.num_fewshot}: the tasks here are zero-shot, as their papers evaluate "
            "them (MMLongBench's in-context examples are part of its prompts); only --num_fewshot 0 is "
            "accepted"
        )
    if args.samples is not None:
        raise UserError(
            "--samples: documents chosen by index are not supported here; --limit N evaluates the first N documents "
            "of each task (and the journal keeps every answer: a later, larger run asks only for the new ones)"
        )
    for flag, instead in NOTHING_TO_DO.items():
        if getattr(args, flag):
            print(f"harness: --{flag}: {instead}", file=sys.stderr)
    if args.bootstrap_iters is not None and args.bootstrap_iters < 0:
        raise UserError(f"--bootstrap_iters must be 0 or more, got {args.bootstrap_iters}")
    if args.log_samples_suffix is not None and not args.log_samples_suffix.replace("-", "").replace("_", "").isalnum():
        raise UserError(
            f"--log_samples_suffix {args.log_samples_suffix!r}: letters, digits, - and _ only (it is part "
            "of a file name)"
        )
    model_args = dict(model_args)
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
    if args.use_cache and args.cache_dir is not None and str(args.cache_dir) != args.use_cache:
        raise UserError(f"--use_cache {args.use_cache} and --cache_dir {args.cache_dir} name two caches: give one")
    if args.wandb_args:
        from harness.outputs.wandb_log import check_wandb

        check_wandb()
    seeds = getattr(args, "seeds", None)
    if seeds is not None:
        _seed_libraries(seeds)
    return model_args


def _seed_libraries(seeds: list[int | None]) -> None:
    """NumPy's and torch's global seeds, as lm-eval sets them (the draws here use their own seeded generators)."""
    import random

    random.seed(seeds[0])
    if seeds[1] is not None:
        import numpy as np

        np.random.seed(seeds[1])
    if seeds[2] is not None and "torch" in sys.modules:  # a backend that uses torch has imported it
        sys.modules["torch"].manual_seed(seeds[2])


@dataclass(frozen=True)
class CompatFlags:
    """What these flags set for a run, as its plan keeps them (`harness.run_plan.RunPlan.compat`)."""

    seeds: tuple[int | None, ...]  # lm-eval's four: random, numpy, torch, fewshot
    bootstrap_iters: int | None
    device: str | None
    use_cache: str | None
    num_fewshot: int | None
    log_samples_suffix: str | None
    show_config: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> CompatFlags:
        seeds = getattr(args, "seeds", None) or [args.seed] * 4
        return cls(
            tuple(seeds),
            args.bootstrap_iters,
            args.device,
            args.use_cache,
            args.num_fewshot,
            args.log_samples_suffix,
            args.show_config,
        )

    def recorded(self) -> dict[str, Any]:
        """What the results' `config` records of these flags, under lm-eval's keys."""
        return {
            **dict(zip(SEED_NAMES, self.seeds, strict=True)),
            "bootstrap_iters": self.bootstrap_iters,
            "device": self.device,
            "use_cache": self.use_cache,
            "num_fewshot": self.num_fewshot or 0,
            "log_samples_suffix": self.log_samples_suffix,
        }


def show_configs(configs: dict[str, Any]) -> str:
    """`--show_config`: each task's config as YAML, under its name (lm-eval prints them after its table)."""
    import yaml

    return "\n".join(
        f"--- {task} ---\n" + yaml.safe_dump(config, sort_keys=False, allow_unicode=True)
        for task, config in configs.items()
    )
