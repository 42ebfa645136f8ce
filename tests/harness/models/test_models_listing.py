"""`harness models`: every alias line reads as name, backend, settings, each separated by spaces."""

from __future__ import annotations

from harness.models.aliases import ALIASES


def test_every_alias_line_separates_its_backend_from_its_settings(harness) -> None:
    run = harness("models")
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    listed = {}
    for line in lines[
        lines.index("Aliases (--model NAME; --model_args override; backend=... switches backend):") + 1 :
    ]:
        if not line.startswith("   "):  # an alias line, not its note
            name, backend, settings = line.split()
            listed[name] = (backend, settings)
    assert set(listed) == set(ALIASES)
    for name, alias in ALIASES.items():
        assert listed[name] == (alias.backend, ",".join(f"{k}={v}" for k, v in alias.args.items()))
    assert listed["gpt-4o"][0] == "openai"  # the longest backend name, once run into "model=..."
