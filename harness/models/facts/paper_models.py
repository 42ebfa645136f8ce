"""A paper's models, as its benchmark declares them (`BenchmarkDeclaration.paper`, in `tasks/<benchmark>/paper_models.py`): what
one paper did with each model, kept with the benchmark, beside the model facts the aliases hold
(`harness.models.aliases`).

    PAPER_MODELS = PaperModels(
        (
            PaperModel("Idefics2-8B", "HuggingFaceM4/idefics2-8b", alias="idefics2", rules=IDEFICS2_RULES),
            PaperModel("GPT-4o", "gpt-4o-2024-05-13", alias="gpt-4o-2024-05-13", args={"image_detail": "high"},
                       departs="OpenAI's own API serves the same snapshot, not the authors' Azure deployment"),
            PaperModel("CogVLM-17B", "THUDM/cogvlm-chat-hf", reason="its own model code only: ..."),
        ),
    )

Each model: its name in the paper's tables, the checkpoint or API snapshot it ran, the alias that runs it (a
snapshot has its own alias, so `--model` means the same model whatever the tasks), what the alias adds for this
benchmark (`args`), the official per-task input settings (`rules`: globs over the benchmark's own tasks), where the
alias departs from the paper's run and why, the tasks the official run never ran for the model (`not_run`: globs and
why; the paper's cell there is N/A, and a report says so rather than compare), how the paper's averages of the model
differ from the benchmark's own score where they do (`paper_score`: the results' metric that reproduces them, and
why; the report compares the paper's numbers with it and shows the benchmark's score beside it), and the names a run's
model is known by in the benchmark's report (`known_as`). A paper model no backend here can run has no alias and says why (`reason`);
one whose snapshot the provider retired may still record its official call (`backend` with `args`, `official_call`),
which reproduces it on a server that serves the snapshot. `own_context`: the
benchmark's own rule needs each model's context (MileBench truncates to it), so every alias runs with what gives it
its own (`Alias.own_context`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from harness.config.benchmark import BenchmarkDeclaration, field_of
from harness.inputs.input_policy import InputPolicy, TaskRule


@dataclass(frozen=True)
class NotRun:
    """Tasks a paper's official run left out for one model (globs over the benchmark's tasks), and why."""

    tasks: tuple[str, ...]
    why: str


@dataclass(frozen=True)
class PaperScore:
    """The metric of a run's results that holds the paper's score for one model, where the paper averaged that model
    otherwise than the benchmark's own `score` (its official script left some rows out, say), and why."""

    metric: str
    why: str


@dataclass(frozen=True)
class PaperModel:
    """One model of a paper (see the module docstring)."""

    name: str  # as the paper's tables name it
    ran: str  # the checkpoint or API snapshot the paper ran, where it says
    alias: str | None = None  # the alias that runs it; None: no backend here can (`reason`)
    departs: str = ""  # where the alias (or the recorded call, `backend`) departs from the paper's run (empty: as it)
    args: Mapping[str, str] = field(default_factory=dict)  # what the alias adds for this benchmark's runs
    rules: tuple[TaskRule, ...] = ()  # the official input settings, per task (globs over the benchmark's tasks)
    reason: str = ""  # why no alias runs it
    known_as: tuple[str, ...] = ()  # names a run's model is known by in the benchmark's report (its own rule)
    not_run: tuple[NotRun, ...] = ()  # the tasks the official run left out for it: the paper's N/A there
    paper_score: PaperScore | None = None  # the paper's averages of it, where not the benchmark's `score`
    # Without an alias (a retired snapshot): the backend that sends its official call with `args`, to a server that
    # still serves `ran`, so the call is on record and can be reproduced.
    backend: str | None = None

    def __post_init__(self) -> None:
        if (self.alias is None) == (not self.reason):
            raise ValueError(f"paper model {self.name}: give an alias, or the reason there is none (not both)")
        if self.backend is not None and self.alias is not None:
            raise ValueError(f"paper model {self.name}: its alias names its backend")

    @property
    def official_call(self) -> str | None:
        """Without an alias, the command-line model of its official call (`backend`, the snapshot and `args`)."""
        if self.backend is None:
            return None
        args = ",".join(f"{k}={v}" for k, v in {"model": self.ran, **self.args}.items())
        return f"--model {self.backend} --model_args {args}"

    def not_run_why(self, task: str) -> str | None:
        """Why the official run did not run `task` for this model, or None where it did."""
        return next(
            (left.why for left in self.not_run if any(fnmatch.fnmatchcase(task, glob) for glob in left.tasks)), None
        )


@dataclass(frozen=True)
class PaperModels:
    """A paper's models (`BenchmarkDeclaration.paper`): those of its result tables (`models`), and those only its ablations ran
    (`ablations`: a text-only LLM, a positional-extrapolation variant), kept apart so that `models` is the result
    tables' list."""

    models: tuple[PaperModel, ...]
    own_context: bool = False  # the benchmark's rule truncates to each model's context: aliases run with their own
    ablations: tuple[PaperModel, ...] = ()

    @property
    def every(self) -> tuple[PaperModel, ...]:
        """The result tables' models, then the ablations'."""
        return (*self.models, *self.ablations)

    def run_by(self, alias: str) -> PaperModel | None:
        """The paper model `alias` runs (a result table's first, then an ablation's), or None."""
        return next((model for model in self.every if model.alias == alias), None)

    def is_ablation(self, model: PaperModel) -> bool:
        return any(model is ablation for ablation in self.ablations)

    @property
    def without_alias(self) -> tuple[PaperModel, ...]:
        """Every model without an alias, the result tables' then the ablations'."""
        return tuple(model for model in self.every if model.alias is None)


def paper_of(benchmark: BenchmarkDeclaration) -> PaperModels | None:
    """The paper models a benchmark declares, or None (a declaration of another type is said and left out)."""
    return field_of(benchmark, "paper", PaperModels, "harness")


def papers(benchmarks: Iterable[BenchmarkDeclaration]) -> list[tuple[BenchmarkDeclaration, PaperModels]]:
    """Each benchmark that declares its paper's models, once, in the order of their titles (case aside)."""
    seen: dict[int, tuple[BenchmarkDeclaration, PaperModels]] = {}
    for benchmark in benchmarks:
        table = paper_of(benchmark)
        if table is not None and id(table) not in seen:
            seen[id(table)] = (benchmark, table)
    return sorted(seen.values(), key=lambda pair: pair[0].name.lower())


def rule(
    tasks: tuple[str, ...],
    why: str,
    *,
    keep_last_images: int | None = None,
    image_scale: float | None = None,
    processor_kwargs: Mapping[str, object] | None = None,
    max_image_side: int | None = None,
) -> TaskRule:
    """An official input setting on the tasks `tasks` (globs over task names; `*`: every task), and why
    (`harness.inputs.input_policy`)."""
    return TaskRule(tasks, InputPolicy.of(keep_last_images, image_scale, processor_kwargs, max_image_side), why)
