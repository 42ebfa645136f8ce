"""`harness models`: the backends, every alias with the paper models it stands for and how it runs each ("as the
paper" or "departs: why", per benchmark), and the papers' models that have no alias, with the reason: the one table
each benchmark declares (`BenchmarkDeclaration.paper`), read through the installed task folders. A model only a paper's
ablations ran (`PaperModels.ablations`) is said so ("MMLongBench ablation"). Last, every model family of the registry
(`harness.models.families`): the backends its aliases run on, or why no backend here loads it. With `--tasks`
(`sends`), what one name sends for those tasks, as a run resolves it."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence

from harness.config.benchmark import BenchmarkDeclaration
from harness.errors import UserError, suggest
from harness.models.facts.alias import Alias
from harness.models.facts.paper_models import PaperModel, PaperModels


def _alias_lines(
    name: str, alias: Alias, width: int, backend_width: int, tables: list[tuple[BenchmarkDeclaration, PaperModels]]
) -> list[str]:
    settings = ",".join(f"{k}={v}" for k, v in alias.args.items())
    lines = [f"  {name:<{width}}{alias.backend:<{backend_width}}{settings}"]
    indent = " " * (2 + width + backend_width)
    trained = (
        f"trained on {alias.trained_context:,} tokens (informational, not a limit); " if alias.trained_context else ""
    )
    if alias.note or trained:
        lines.append(f"{indent}{trained}{alias.note}")
    if alias.reasoning_tags:  # a thinking model's: what the scorer is not given (--reasoning_tags overrides it)
        tags = ", ".join(f"{start}...{end}" for start, end in alias.reasoning_tags)
        kept = f"; scored: what {alias.answer_tags[0]}...{alias.answer_tags[1]} holds" if alias.answer_tags else ""
        lines.append(f"{indent}thinking taken out before scoring: {tags}{kept}")
    runs = [(benchmark, table, run) for benchmark, table in tables if (run := table.run_by(name))]
    for benchmark, table, run in runs:
        extra = ",".join(f"{k}={v}" for k, v in run.args.items())
        with_args = f" with {extra}" if extra else ""
        left = "".join(f"; the paper did not run {', '.join(n.tasks)} ({n.why})" for n in run.not_run)
        lines.append(
            f'{indent}{_where(benchmark, table, run)} "{run.name}" ({run.ran}){with_args}: {alias.status(run)}{left}'
        )
    if not runs:
        lines.append(f"{indent}not a model of the papers here")
    return lines


def _where(benchmark: BenchmarkDeclaration, table: PaperModels, run: PaperModel) -> str:
    """The benchmark, and "ablation" for a model only its paper's ablations ran (none of its result tables)."""
    return f"{benchmark.name} ablation" if table.is_ablation(run) else benchmark.name


def listing(
    backends: list[str],
    benchmarks: Iterable[BenchmarkDeclaration],
    name: str | None = None,
    benchmark: str | None = None,
) -> str:
    """The listing, or part of it: `name` keeps the aliases (and backends) whose name holds it, case aside (an
    alias's own name: that alias alone); `benchmark` keeps one benchmark's paper models, the aliases that run one of
    them and those without an alias. A filter that keeps nothing is a `UserError` with the names it could be."""
    from harness.models.aliases import ALIASES
    from harness.models.facts.paper_models import papers

    benchmarks = list(benchmarks)
    tables = papers(benchmarks)
    if benchmark is not None:
        tables = [(b, table) for b, table in tables if b.name.lower() == benchmark.lower()]
        known = sorted({b.name for b in benchmarks})
        if not tables and benchmark.lower() in {k.lower() for k in known}:
            raise UserError(f"--benchmark {benchmark}: its declaration lists no paper models")
        if not tables:
            by_lower = {k.lower(): k for k in known}
            close = difflib.get_close_matches(benchmark.lower(), list(by_lower), n=3, cutoff=0.6)
            hint = f"; did you mean: {', '.join(by_lower[c] for c in close)}?" if close else ""
            raise UserError(f"unknown benchmark {benchmark!r}{hint} (benchmarks: {', '.join(known)})")
    aliases = sorted(ALIASES.items())
    if name is not None:
        backends = [b for b in backends if name.lower() in b.lower()]
        exact = [(n, a) for n, a in aliases if n == name]
        aliases = exact or [(n, a) for n, a in aliases if name.lower() in n.lower()]
    if benchmark is not None:
        aliases = [(n, a) for n, a in aliases if any(table.run_by(n) for _, table in tables)]
    if name is not None and not aliases and not backends:
        raise UserError(suggest(name, [*ALIASES, *backends], "model") + " (`harness models` lists them all)")
    lines = ["Backends:", *(f"  {b}" for b in backends)] if benchmark is None and backends else []
    lines.append("Aliases (--model NAME; --model_args override; backend=... switches backend):")
    width = max(len(n) for n in ALIASES) + 2
    # Wide enough for the longest backend name and a space ("openai" once ran into its settings).
    backend_width = max(len(alias.backend) for alias in ALIASES.values()) + 2
    for alias_name, alias in aliases:
        lines.extend(_alias_lines(alias_name, alias, width, backend_width, tables))
    if name is None:
        lines.append("Paper models without an alias:")
        for paper, table in tables:
            for missing in table.without_alias:
                lines.append(f'  {_where(paper, table, missing)} "{missing.name}" ({missing.ran}): {missing.reason}')
                if missing.official_call:
                    departs = f" (departs: {missing.departs})" if missing.departs else ""
                    lines.append(
                        f"    its official call, to a server that still serves it: {missing.official_call}{departs}"
                    )
    if name is None and benchmark is None:
        lines.extend(_family_lines())
    return "\n".join(lines)


def _family_lines() -> list[str]:
    """Each model family (`harness.models.families`): its variants with the config names that identify each, then the
    backends its aliases run on, or why no backend here loads it."""
    from harness.models.families import families

    lines = ["Model families (each variant's model_types; the backends of the family's aliases, or why none runs it):"]
    for family in families():
        types = (
            "; ".join(f"{v.name}: {', '.join(v.model_types) or 'no model_type'}" for v in family.variants)
            or "no image rule"
        )
        backends = ", ".join(sorted({alias.backend for alias in family.aliases.values()}))
        runs = f"runs on {backends}" if backends else f"no backend here: {family.unavailable}"
        lines.append(f"  {family.name} ({types}): {runs}")
    return lines


def sends(
    name: str, backend: str, args: Mapping[str, str], tasks: Sequence[tuple[str, BenchmarkDeclaration | None]]
) -> str:
    """`harness models NAME --tasks ...`: what `--model NAME` sends on these tasks (each with the benchmark it
    declares), resolved to `backend` and `args` as a run resolves them (`harness.run.plan.resolve_model`): those
    arguments, the snapshot, the prompt style they name, and for an alias its paper runs there, its input policy on
    each task and the tasks its paper's run left out, as the results record them (`config.model_args`,
    `config.alias_info`, `config.input_policies`)."""
    from harness.models.aliases import ALIASES, alias_policy, left_out, prompt_of
    from harness.models.facts.paper_models import papers
    from harness.models.registry import backend_spec

    names = [task for task, _ in tasks]
    shown = ", ".join(names[:4]) + (f", ... ({len(names)} tasks)" if len(names) > 4 else "")
    checkpoint = args.get("pretrained") or args.get("model")
    revision = args.get("revision")
    api = backend_spec(backend).priced  # an API backend's server renders the prompt of the model it names
    pinned = f" at revision {revision}" if revision else " (no revision pinned: the latest)"
    lines = [
        f"--model {name} on {shown}:",
        f"  backend: {backend}",
        f"  model args: {','.join(f'{k}={v}' for k, v in args.items()) or 'none'}",
        f"  snapshot: {checkpoint or 'none named'}"
        + (" (the provider's model of that name)" if api else pinned if checkpoint else ""),
    ]
    if not api:
        lines.append(f"  prompt style: {', '.join(f'{k}={v}' for k, v in prompt_of(args).items())}")
    alias = ALIASES.get(name)
    if alias is None:
        lines.append(f"  {name} is a backend, not an alias: no input policy, no paper run")
        return "\n".join(lines)
    benchmarks = list({id(b): b for _, b in tasks if b is not None}.values())
    paper_lines = _alias_lines(name, alias, 0, 0, papers(benchmarks))[1:]  # the alias's notes and its paper runs
    lines += [f"  {line.strip()}" for line in paper_lines]
    by_policy: dict[str, list[str]] = {}  # tasks alike in policy on one line
    for task, benchmark in tasks:
        policy = alias_policy(name, task, benchmark, looked_up=True)
        described = (
            ", ".join(f"{k}={v}" for k, v in policy.describe().items()) if policy else "none (the task's inputs)"
        )
        by_policy.setdefault(described, []).append(task)
    for described, alike in by_policy.items():
        on = ", ".join(alike[:4]) + (f", ... ({len(alike)} tasks)" if len(alike) > 4 else "")
        lines.append(f"  input policy: {described} on {on}")
    lines += [f"  {line.removeprefix('harness: ')}" for line in left_out(name, tasks)]
    return "\n".join(lines)
