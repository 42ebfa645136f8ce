"""`make docs`: the tables of docs/backends.md, written from the registries (issue 62, item 6), and the engine sweep's
from its record (issue 104).

Each table sits between `<!-- make docs: KIND [BENCHMARK] -->` and `<!-- end make docs -->`; this script rewrites what
is between them and leaves the prose around them as it is. A benchmark that declares paper models
(`harness.models.facts.paper_models.papers`) and has no table on the page yet gets a section of its own, before "## A
checkpoint without an alias". `--check` writes nothing and fails where the page differs (the test runs that).

    python scripts/docs_tables.py [--check] [PAGE]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

import engine_sweep  # scripts/engine_sweep.py, beside this one

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "backends.md"
BLOCK = re.compile(r"<!-- make docs: (?P<kind>[\w-]+)(?: (?P<arg>[^>]+?))? -->\n.*?<!-- end make docs -->", re.S)
NEW_SECTIONS_BEFORE = "\n## A checkpoint without an alias"


def _paper_tables() -> dict[str, object]:
    from harness.models.aliases import index_benchmarks
    from harness.models.facts.paper_models import papers

    return {benchmark.name: table for benchmark, table in papers(index_benchmarks())}


def _paper_rows(models: tuple) -> list[str]:
    from harness.models.aliases import ALIASES

    rows = ["| paper's name | alias | backend | how it runs |", "|---|---|---|---|"]
    for run in models:
        if run.alias is None:
            rows.append(f"| {run.name} | none |  | {run.reason} |")
        else:
            alias = ALIASES[run.alias]
            rows.append(f"| {run.name} | `{run.alias}` | {alias.backend} | {alias.status(run)} |")
    return rows


def paper_models(benchmark: str) -> list[str]:
    """A benchmark's result-table models: its heading (with their count) and their table."""
    table = _paper_tables()[benchmark]
    return [f"### {benchmark} ({len(table.models)} models)", "", *_paper_rows(table.models)]


def paper_ablations(benchmark: str) -> list[str]:
    """The models only a benchmark's ablations ran."""
    return _paper_rows(_paper_tables()[benchmark].ablations)


def _never_run(api: bool) -> list[str]:
    """The aliases no paper ran, API models (`api`) or checkpoints."""
    from harness.models.aliases import ALIASES
    from harness.models.registry import backend_spec

    ran = {name for table in _paper_tables().values() for name in ALIASES if table.run_by(name)}
    return [name for name in ALIASES if name not in ran and backend_spec(ALIASES[name].backend).priced == api]


def never_run() -> list[str]:
    """Each alias no paper ran: its checkpoint, backend, family and the thinking taken out of its answers."""
    from harness.models.aliases import ALIASES
    from harness.models.families import alias_family

    rows = ["| alias | checkpoint | backend | family rule | thinking taken out |", "|---|---|---|---|---|"]
    for name in _never_run(api=False):
        alias = ALIASES[name]
        family = alias_family(alias.args["pretrained"])
        if family is None:
            raise SystemExit(f"{name}: no family declares its checkpoint {alias.args['pretrained']}")
        tags = ", ".join(f"`{a}`...`{b}`" for a, b in alias.reasoning_tags or ()) or "none"
        if alias.answer_tags:
            tags += f"; scored: `{alias.answer_tags[0]}`...`{alias.answer_tags[1]}`"
        rows.append(f"| `{name}` | {alias.args['pretrained']} | {alias.backend} | {family.name} | {tags} |")
    return rows


def api_never_run() -> list[str]:
    """Each API alias no paper ran: the model it serves, its backend, its family and its dated price."""
    from harness.models.aliases import ALIASES
    from harness.models.facts.pricing import PriceTable
    from harness.models.families import family_of_api_name

    prices = PriceTable.load()
    header = "| alias | model served | backend | family rule | price per 1M tokens in / out (entry, as of) |"
    rows = [header, "|---|---|---|---|---|"]
    for name in _never_run(api=True):
        alias = ALIASES[name]
        served = alias.args["model"]
        family, price = family_of_api_name(served), prices.price_of(served)
        if family is None:
            raise SystemExit(f"{name}: no family's fragments name {served}")
        # A model served by anyone (an OpenAI-compatible server's) may have no published price
        rates = (
            f"${price.rates.input:g} / ${price.rates.output:g} (`{price.model}`, {price.as_of})" if price else "none"
        )
        rows.append(f"| `{name}` | {served} | {alias.backend} | {family.name} | {rates} |")
    return rows


def forward_pass() -> list[str]:
    """Each forward-pass row (`tests/support/forward_families.py`): its classes, aliases, backend, whether it runs."""
    sys.path.insert(0, str(ROOT))
    from harness.models.aliases import ALIASES
    from tests.support.forward_families import FAMILIES

    rows = ["| family | classes | aliases | backend | on this machine |", "|---|---|---|---|---|"]
    for family in FAMILIES:
        aliases = ", ".join(f"`{a}`" if a in ALIASES else a for a in family.aliases)
        rows.append(
            f"| {family.name} | {family.classes} | {aliases} | {family.backend} | {family.reason or 'runs here'} |"
        )
    return rows


def engine_sweep_table() -> list[str]:
    """The engine sweep's sentence and table (`scripts/engine_sweep.py`), from its record alone."""
    return engine_sweep.table_lines()


KINDS: dict[str, Callable[..., list[str]]] = {
    "paper_models": paper_models,
    "paper_ablations": paper_ablations,
    "never_run": never_run,
    "api_never_run": api_never_run,
    "forward_pass": forward_pass,
    "engine_sweep": engine_sweep_table,
}


def _block(kind: str, arg: str | None) -> str:
    rows = KINDS[kind](arg) if arg else KINDS[kind]()
    opening = f"<!-- make docs: {kind}{f' {arg}' if arg else ''} -->"
    return "\n".join([opening, *rows, "<!-- end make docs -->"])


def render(page: str) -> str:
    """The page with every table written anew, and a section for each benchmark that has none."""
    for match in BLOCK.finditer(page):
        if match["kind"] not in KINDS:
            raise SystemExit(f"docs table kind {match['kind']!r} is unknown; known: {', '.join(KINDS)}")
    page = BLOCK.sub(lambda m: _block(m["kind"], m["arg"]), page)
    tabled = {m["arg"] for m in BLOCK.finditer(page) if m["kind"] == "paper_models"}
    for benchmark, table in _paper_tables().items():
        if benchmark in tabled:
            continue
        if NEW_SECTIONS_BEFORE not in page:
            raise SystemExit(f"the page has no {NEW_SECTIONS_BEFORE.strip()!r} to put {benchmark}'s section before")
        section = _block("paper_models", benchmark)
        if table.ablations:
            section += "\n\n" + _block("paper_ablations", benchmark)
        page = page.replace(NEW_SECTIONS_BEFORE, f"\n{section}\n{NEW_SECTIONS_BEFORE}", 1)
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("page", nargs="?", type=Path, default=PAGE)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 where the page differs")
    args = parser.parse_args(argv)
    old = args.page.read_text()
    new = render(old)
    if args.check:
        if new != old:
            print(f"{args.page} differs from the registries: run `make docs`", file=sys.stderr)
            return 1
        return 0
    if new != old:
        args.page.write_text(new)
        print(f"{args.page}: tables written from the registries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
