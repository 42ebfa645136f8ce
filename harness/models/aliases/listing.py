"""`harness models`: the backends, every alias with the paper models it stands for and how it runs each ("as the
paper" or "departs: why", per benchmark), and the papers' models that have no alias, with the reason."""

from __future__ import annotations

from harness.models.aliases.alias import PAPER_TITLES, Alias


def _alias_lines(name: str, alias: Alias, width: int, backend_width: int) -> list[str]:
    settings = ",".join(f"{k}={v}" for k, v in alias.args.items())
    lines = [f"  {name:<{width}}{alias.backend:<{backend_width}}{settings}"]
    indent = " " * (2 + width + backend_width)
    trained = (
        f"trained on {alias.trained_context:,} tokens (informational, not a limit); " if alias.trained_context else ""
    )
    if alias.note or trained:
        lines.append(f"{indent}{trained}{alias.note}")
    for run in alias.runs:
        extra = ",".join(f"{k}={v}" for k, v in run.args.items())
        with_args = f" with {extra}" if extra else ""
        lines.append(f'{indent}{PAPER_TITLES[run.benchmark]} "{run.name}" ({run.ran}){with_args}: {run.status}')
    if not alias.runs:
        lines.append(f"{indent}not a model of the three papers")
    return lines


def listing(backends: list[str]) -> str:
    from harness.models.aliases import ALIASES, WITHOUT_ALIAS

    lines = ["Backends:", *(f"  {name}" for name in backends)]
    lines.append("Aliases (--model NAME; --model_args override; backend=... switches backend):")
    width = max(len(n) for n in ALIASES) + 2
    # Wide enough for the longest backend name and a space ("openai" once ran into its settings).
    backend_width = max(len(alias.backend) for alias in ALIASES.values()) + 2
    for name, alias in sorted(ALIASES.items()):
        lines.extend(_alias_lines(name, alias, width, backend_width))
    lines.append("Paper models without an alias:")
    for missing in WITHOUT_ALIAS:
        lines.append(f'  {PAPER_TITLES[missing.benchmark]} "{missing.name}" ({missing.ran}): {missing.reason}')
    return "\n".join(lines)
