"""An alias: a backend, a checkpoint and its settings, standing for a model whatever the benchmark: its arguments, its
training window (recorded, never enforced), its official wrapper's own input settings (`rules`, on every task), what
gives it its own context, where any paper's run of it departs because of its backend, and, for a thinking model, the
tags its thinking is taken out by before scoring (`thinking`; `harness.models.facts.reasoning`). Each family module
(`harness.models.families`) declares its aliases with `hf` and `vllm` below.

What a paper did with it (the name it gave the model, the checkpoint or snapshot it ran, the arguments and per-task
input rules of that benchmark's official run) is the benchmark's (`harness.models.facts.paper_models`): `benchmark_args`
and `run_policy` read it from the benchmarks of a run's tasks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace

from harness.config.benchmark import BenchmarkDeclaration
from harness.errors import UserError
from harness.inputs.input_policy import InputPolicy, TaskRule, policy_for
from harness.models.facts.paper_models import PaperModel, PaperModels, papers, rule
from harness.models.facts.reasoning import THINK, AnswerTags, ReasoningTags, describe


@dataclass(frozen=True)
class Alias:
    backend: str
    args: dict[str, str] = field(default_factory=dict)
    note: str = ""
    trained_context: int | None = None  # informational: the training window (Table 10 of MMLongBench)
    rules: tuple[TaskRule, ...] = ()  # its own input settings (its official wrapper's, on every task: `*`)
    departs: str = ""  # where every paper's run of it departs because of its backend (a vLLM engine's length)
    own_context: dict[str, str] = field(default_factory=dict)  # what gives it its own context (`own_context`)
    # A thinking model's: its thinking's tags, taken out before scoring unless `--reasoning_tags` says otherwise, and
    # the tags it wraps its answer in after them (`harness.models.facts.reasoning`)
    reasoning_tags: ReasoningTags | None = None
    answer_tags: AnswerTags | None = None

    def status(self, run: PaperModel) -> str:
        """How it runs a paper's model: "as the paper", or "departs: why"."""
        departs = "; ".join(filter(None, (run.departs, self.departs)))
        return f"departs: {departs}" if departs else "as the paper"

    def describe(self, name: str, benchmarks: Iterable[BenchmarkDeclaration] = ()) -> dict[str, object]:
        """What the results record about the alias on a run of these benchmarks, beside the arguments it resolved
        to: the paper models it runs there and how, its rules and theirs (and, added by `harness.models.aliases`,
        the prompt its official wrapper built)."""
        runs = [(benchmark, run) for benchmark, table in papers(benchmarks) if (run := table.run_by(name))]
        rules = [*self.rules, *(rule for _, run in runs for rule in run.rules)]
        return {
            "trained_context": self.trained_context,
            "paper_name": runs[0][1].name if runs else None,
            "note": self.note,
            "papers": {
                benchmark.name.lower(): {
                    "paper_name": run.name,
                    "ran": run.ran,
                    "status": self.status(run),
                    "args": dict(run.args),
                    # the metric holding the paper's score of it, where not the strict `score`
                    **({"paper_score": asdict(run.paper_score)} if run.paper_score else {}),
                    **(
                        {"not_run": [{"tasks": list(n.tasks), "why": n.why} for n in run.not_run]}
                        if run.not_run
                        else {}
                    ),
                }
                for benchmark, run in runs
            },
            "rules": [{"tasks": list(r.tasks), **r.policy.describe(), "why": r.why} for r in rules],
            **({"reasoning_tags": describe(self.reasoning_tags)} if self.reasoning_tags else {}),
            **({"answer_tags": list(self.answer_tags)} if self.answer_tags else {}),
        }


def run_policy(alias: Alias, name: str, task: str, table: PaperModels | None) -> InputPolicy:
    """The input policy of the alias `name` on `task`, a task of the benchmark whose paper models are `table`: its own
    rules, then its paper run's there (later rules over earlier ones)."""
    run = table.run_by(name) if table is not None else None
    return policy_for(task, (*alias.rules, *(run.rules if run is not None else ())))


def benchmark_args(
    name: str, alias: Alias, benchmarks: Iterable[BenchmarkDeclaration], given: Iterable[str] = ()
) -> dict[str, str]:
    """The alias's arguments for a run of these benchmarks: its own, with what each benchmark's paper needs over them
    (its context for a benchmark that truncates to it, its paper run's arguments); a UserError where two of the
    benchmarks need different values of one argument the command line does not set (the run cannot be both official
    runs at once)."""
    chosen: dict[str, tuple[str, str]] = {}
    given = set(given)
    for benchmark, table in papers(benchmarks):
        run = table.run_by(name)
        context = alias.own_context if table.own_context else {}
        wanted: dict[str, str] = {**alias.args, **context, **(run.args if run else {})}
        for key, value in wanted.items():
            if key in given:
                continue
            if key in chosen and chosen[key][1] != value:
                other, was = chosen[key]
                raise UserError(
                    f"alias {name}: {other} runs it with {key}={was} and {benchmark.name} with "
                    f"{key}={value}; run the two benchmarks separately, or give {key}=... in --model_args"
                )
            chosen[key] = (benchmark.name, value)
    return {**alias.args, **{key: value for key, (_, value) in chosen.items()}}


# MMLongBench's 128K inputs (131,072 counted tokens, plus the chat template and up to 384 new tokens) fit in the
# official `vllm serve` line's limit (--max-model-len 139264, VLLM_ALLOW_LONG_MAX_MODEL_LEN=1): a vLLM engine's.
LONG_CONTEXT = "139264"
VLLM_LENGTH = (
    f"a vLLM engine holds max_model_len={LONG_CONTEXT} (the official vllm serve line's): a longer prompt is "
    "over_length, where the official HF run sent it"
)
# Every prompt is sent, however long, as the official wrappers sent theirs.
NO_LIMIT = {"no_context_limit": "true"}


def switched_from_hf(args: dict[str, str], length_arg: str) -> dict[str, str]:
    """An hf alias's arguments for vLLM (or `vllm serve`): an engine allocates for a length, the official vllm serve
    line's where hf had none (`length_arg`: the backend's argument for it). An AnyRes pinpoint cap
    (`max_grid_tiles`, LLaVA-OneVision's official 4 tiles) is the `hf` backend's alone: refused, not dropped."""
    args = dict(args)
    if args.get("text_only") == "true":
        raise UserError(
            "text_only=true (a text LLM, its context cut as the official text-only wrapper cut it) is a setting of the "
            "hf backend only: run this alias on hf"
        )
    if "max_grid_tiles" in args:
        raise UserError(
            f"max_grid_tiles={args['max_grid_tiles']} (the official wrapper's AnyRes pinpoints) is a setting of the hf "
            f"backend only: run this alias on hf, or name the checkpoint ({args.get('pretrained')}) as the model"
        )
    if args.pop("no_context_limit", "false") == "true" and not {"max_model_len", "context_length"} & set(args):
        args[length_arg] = LONG_CONTEXT
    return args


def wrapper(why: str, processor_kwargs: Mapping[str, object]) -> TaskRule:
    """A wrapper's own processor setting (InternVL's 4 tiles, Ovis2's max_partition): every task of every benchmark,
    the model's one official wrapper being the one its paper published."""
    return rule(("*",), why, processor_kwargs=processor_kwargs)


def thinking(alias: Alias, tags: ReasoningTags = THINK, answer: AnswerTags | None = None) -> Alias:
    """`alias`, a thinking model's: its output's thinking (`tags`, by default `<think>`...`</think>`) taken out before
    scoring, then what its `answer` tags hold kept."""
    return replace(alias, reasoning_tags=tags, answer_tags=answer)


def hf(
    pretrained: str, note: str, trained_context: int | None, rules: tuple[TaskRule, ...] = (), /, **args: str
) -> Alias:
    """An `hf` alias: the checkpoint, no context cap; its own context back (the checkpoint's) where a benchmark's
    rule truncates to it."""
    return Alias(
        "hf",
        {"pretrained": pretrained, **NO_LIMIT, **args},
        note,
        trained_context,
        rules,
        own_context={"no_context_limit": "false"},
    )


def vllm(
    pretrained: str, note: str, trained_context: int | None, rules: tuple[TaskRule, ...] = (), /, **args: str
) -> Alias:
    """A `vllm` alias (a checkpoint transformers cannot load as an image-text-to-text model): the official vllm
    serve line's length, remote code trusted as the official wrapper trusted it; where a benchmark's rule truncates
    to the model's context, the length vLLM derives from the model's config."""
    return Alias(
        "vllm",
        {
            "pretrained": pretrained,
            "trust_remote_code": "true",
            "max_model_len": LONG_CONTEXT,
            "past_window": "true",  # the official line's VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: rows past the window run
            # the checkpoint's generation_config, as the official HF generate applies it (eos tokens, penalties)
            "generation_config": "auto",
            **args,
        },
        note,
        trained_context,
        rules,
        departs=VLLM_LENGTH,
        own_context={"max_model_len": "none"},
    )
