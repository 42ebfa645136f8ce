"""`harness models`: the backends, every alias with the paper models it stands for and how it runs each ("as the
paper" or "departs: why", per benchmark), and the papers' models that have no alias, with the reason: the one table
each benchmark declares (`Benchmark.paper`), read through the installed task folders."""

from __future__ import annotations

from collections.abc import Iterable

from harness.config.benchmark import Benchmark
from harness.models.alias import Alias
from harness.models.paper_models import PaperModels


def _alias_lines(
    name: str, alias: Alias, width: int, backend_width: int, tables: list[tuple[Benchmark, PaperModels]]
) -> list[str]:
    settings = ",".join(f"{k}={v}" for k, v in alias.args.items())
    lines = [f"  {name:<{width}}{alias.backend:<{backend_width}}{settings}"]
    indent = " " * (2 + width + backend_width)
    trained = (
        f"trained on {alias.trained_context:,} tokens (informational, not a limit); " if alias.trained_context else ""
    )
    if alias.note or trained:
        lines.append(f"{indent}{trained}{alias.note}")
    runs = [(benchmark, run) for benchmark, table in tables if (run := table.run_by(name))]
    for benchmark, run in runs:
        extra = ",".join(f"{k}={v}" for k, v in run.args.items())
        with_args = f" with {extra}" if extra else ""
        lines.append(f'{indent}{benchmark.name} "{run.name}" ({run.ran}){with_args}: {alias.status(run)}')
    if not runs:
        lines.append(f"{indent}not a model of the papers here")
    return lines


def listing(backends: list[str], benchmarks: Iterable[Benchmark]) -> str:
    from harness.models.aliases import ALIASES
    from harness.models.paper_models import papers

    tables = papers(benchmarks)
    lines = ["Backends:", *(f"  {name}" for name in backends)]
    lines.append("Aliases (--model NAME; --model_args override; backend=... switches backend):")
    width = max(len(n) for n in ALIASES) + 2
    # Wide enough for the longest backend name and a space ("openai" once ran into its settings).
    backend_width = max(len(alias.backend) for alias in ALIASES.values()) + 2
    for name, alias in sorted(ALIASES.items()):
        lines.extend(_alias_lines(name, alias, width, backend_width, tables))
    lines.append("Paper models without an alias:")
    for benchmark, table in tables:
        for missing in table.without_alias:
            lines.append(f'  {benchmark.name} "{missing.name}" ({missing.ran}): {missing.reason}')
    return "\n".join(lines)
