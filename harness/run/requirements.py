"""What a run needs installed, checked before its first sample: the backend's extra (and the judge's), and the
extras its tasks' scorers need (`metadata.requires` in a task's YAML names one; the benchmark's declaration,
`harness.config.benchmark.BenchmarkDeclaration.extras`, says which modules it brings).
A missing package is one line naming the extra to install, as `pip install -e '.[X]'`, instead of a model load
or a whole generation that ends in "No module named 'torch'" inside every journal line.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Mapping

from harness.config.benchmark import declared_benchmark
from harness.errors import UserError
from harness.models.registry import BACKENDS, backend_spec

Extras = Mapping[str, tuple[str, ...]]  # an extra of pyproject.toml -> the modules it brings


def missing_modules(extra: str, declared: Extras | None = None) -> list[str]:
    """The modules of `extra` that cannot be imported here, of those it brings that the code imports: a backend's
    extra's (`BackendSpec.extra`), or one a benchmark declares for its scorers (`declared`)."""
    backends = [spec for name in BACKENDS if (spec := backend_spec(name).extra) is not None and spec.name == extra]
    out = []
    for module in backends[0].modules if backends else (declared or {}).get(extra, ()):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a broken or half-removed install
            found = False
        if not found:
            out.append(module)
    return out


SCORER = "scorer"  # `who` of a task's own requirement: `(SCORER, task name)`


def check_requirements(needs: Iterable[tuple[str, tuple[str, str]]], declared: Extras | None = None) -> None:
    """`needs`: (extra, (what needs it, its name)): `("flag", "--model qwen2.5-vl")` or `(SCORER, task)`; `declared`:
    the modules of the extras the tasks' benchmarks declare. One line for every extra that is not installed, naming
    what needs it and the command that installs it."""
    by_extra: dict[str, dict[str, list[str]]] = {}
    for extra, (kind, name) in needs:
        names = by_extra.setdefault(extra, {}).setdefault(kind, [])
        if name not in names:
            names.append(name)
    problems = []
    for extra, whos in by_extra.items():
        missing = missing_modules(extra, declared)
        if not missing:
            continue
        parts = [name for kind, names in whos.items() if kind != SCORER for name in names]
        tasks = whos.get(SCORER, [])
        if tasks:
            shown = ", ".join(tasks[:3]) + (f", ... ({len(tasks)} tasks)" if len(tasks) > 3 else "")
            parts.append(f"the scorer{'s' if len(tasks) > 1 else ''} of {shown}")
        problems.append(
            f"{' and '.join(parts)} need{'s' if len(parts) == 1 and len(tasks) < 2 else ''} the {extra} "
            f"extra ({', '.join(missing)} not installed): pip install -e '.[{extra}]'"
        )
    if problems:
        raise UserError("; ".join(problems) + " (checked before the first sample: nothing was run)")


def run_needs(
    backend: str, model: str, judge: tuple[str, str] | None, tasks: Iterable[object], scoring: bool = True
) -> list[tuple[str, tuple[str, str]]]:
    """What a run needs: its backend's extra, its judge's (backend, name) when a task is judged, and, when it scores,
    each task's `metadata.requires` (`tasks`: `harness.running.task.task.Task`s)."""
    needs: list[tuple[str, tuple[str, str]]] = []
    if (backend_extra := backend_spec(backend).extra) is not None:
        needs.append((backend_extra.name, ("flag", f"--model {model}")))
    tasks = list(tasks)
    judged = any(getattr(task, "judge", None) is not None for task in tasks)
    if judge is not None and judged:  # an unused judge is never opened
        if (judge_extra := backend_spec(judge[0]).extra) is not None:
            needs.append((judge_extra.name, ("flag", f"--judge_model {judge[1]}")))
    if scoring:
        for task in tasks:
            requires = getattr(task, "metadata", {}).get("requires") or []
            for extra in [requires] if isinstance(requires, str) else requires:
                needs.append((str(extra), (SCORER, str(getattr(task, "name", task)))))
    return needs


def declared_extras(tasks: Iterable[object]) -> dict[str, tuple[str, ...]]:
    """The extras the benchmarks of `tasks` declare (`BenchmarkDeclaration.extras`), read only for the tasks that name one in
    `metadata.requires` (`tasks`: `harness.running.task.task.Task`s)."""
    out: dict[str, tuple[str, ...]] = {}
    for task in tasks:
        config = getattr(task, "config", None)
        if getattr(task, "metadata", {}).get("requires") and config is not None:
            benchmark = declared_benchmark(getattr(config, "benchmark", None))
            if benchmark is not None:
                out.update(benchmark.extras)
    return out
