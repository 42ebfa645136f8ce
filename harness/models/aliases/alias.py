"""An alias: a backend, a checkpoint and its settings, standing for the model one or more papers ran, with how each
paper ran it and where the alias departs from that.

`Alias.args` are the backend's `--model_args`; `per_benchmark` and then `PaperRun.args` add what one benchmark needs
on top (MileBench's truncation takes the model's context; MMNeedle's GPT-4o is the May-2024 snapshot, MMLongBench's
the November one), chosen from the run's tasks by `benchmark_args`. `rules` are the official per-task input settings (`harness.inputs.input_policy`). `trained_context`
is the model's training window: recorded, never enforced.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from harness.errors import UserError
from harness.inputs.input_policy import InputPolicy, TaskRule

BENCHMARKS = ("mmlongbench", "milebench", "mmneedle")
PAPER_TITLES = {"mmlongbench": "MMLongBench", "milebench": "MileBench", "mmneedle": "MMNeedle"}


@dataclass(frozen=True)
class PaperRun:
    """How one paper ran the model: its name in the paper's tables, the checkpoint or API snapshot it ran, what the
    alias adds for that benchmark, and where it departs from the official run (empty: as the paper)."""

    benchmark: str
    name: str
    ran: str
    departs: str = ""
    args: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.benchmark not in BENCHMARKS:
            raise ValueError(f"paper run of {self.name}: unknown benchmark {self.benchmark!r}")

    @property
    def status(self) -> str:
        return f"departs: {self.departs}" if self.departs else "as the paper"

    def describe(self) -> dict[str, object]:
        return {"paper_name": self.name, "ran": self.ran, "status": self.status, "args": dict(self.args)}


@dataclass(frozen=True)
class Alias:
    backend: str
    args: dict[str, str] = field(default_factory=dict)
    note: str = ""
    trained_context: int | None = None  # informational: the training window (Table 10 of MMLongBench)
    runs: tuple[PaperRun, ...] = ()
    rules: tuple[TaskRule, ...] = ()  # input policies on some tasks, as the papers ran this model
    # Arguments a benchmark's own rules need whichever paper ran the model (MileBench truncates to the model's
    # context, so its runs take one); a paper run's args go over them.
    per_benchmark: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def paper_name(self) -> str | None:
        """The model's name in the first paper that ran it."""
        return self.runs[0].name if self.runs else None

    def run_on(self, benchmark: str) -> PaperRun | None:
        return next((run for run in self.runs if run.benchmark == benchmark), None)

    def policy_for(self, task: str) -> InputPolicy:
        from harness.inputs.input_policy import policy_for

        return policy_for(task, self.rules)

    def describe(self) -> dict[str, object]:
        """What the results record about the alias, beside the arguments it resolved to: its paper runs, its rules
        and the prompt its official wrapper built (the template, system message, prefill and BOS)."""
        from harness.models.prompt_style import style_named

        return {
            "trained_context": self.trained_context,
            "paper_name": self.paper_name,
            "note": self.note,
            "papers": {run.benchmark: run.describe() for run in self.runs},
            "rules": [{"tasks": list(r.tasks), **r.policy.describe(), "why": r.why} for r in self.rules],
            "prompt": style_named(self.args.get("prompt_style", "default")).describe(),
        }


def benchmarks_of(task_names: Iterable[str]) -> set[str]:
    """The papers' benchmarks a run's tasks (or groups) belong to, by their names' first word."""
    return {name.split("_", 1)[0] for name in task_names} & set(BENCHMARKS)


def benchmark_args(name: str, alias: Alias, task_names: Iterable[str], given: Iterable[str] = ()) -> dict[str, str]:
    """The alias's arguments for a run of these tasks: its own, with what the run's benchmarks need over them; a
    UserError where two of the benchmarks need different values of one argument the command line does not set (the
    run cannot be both official runs at once)."""
    chosen: dict[str, tuple[str, str]] = {}
    for benchmark in sorted(benchmarks_of(task_names)):
        run = alias.run_on(benchmark)
        wanted = {**alias.args, **alias.per_benchmark.get(benchmark, {}), **(run.args if run else {})}
        for key, value in wanted.items():
            if key in given:
                continue
            if key in chosen and chosen[key][1] != value:
                other, was = chosen[key]
                raise UserError(
                    f"alias {name}: {PAPER_TITLES[other]} runs it with {key}={was} and {PAPER_TITLES[benchmark]} with "
                    f"{key}={value}; run the two benchmarks separately, or give {key}=... in --model_args"
                )
            chosen[key] = (benchmark, value)
    return {**alias.args, **{key: value for key, (_, value) in chosen.items()}}
