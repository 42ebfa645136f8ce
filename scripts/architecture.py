"""`make docs`: docs/ARCHITECTURE.md, the harness's packages and which imports which, read from the code.

Each package is a node: a folder of `harness/` (its sub-folders folded into it below `MAX_DEPTH`, as the backends'
packages are into `harness.models.backends`), or `harness` for the modules at its root. An edge is any `import` of a
module of another node, wherever it stands (inside a function or under `if TYPE_CHECKING:` too), read with `ast` as
tests/test_layers.py reads them. The paragraph under each package is the first paragraph of its `__init__`'s docstring.
`--check` writes nothing and fails where the page differs from the code (the test runs that).

    python scripts/architecture.py [--check] [PAGE]
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "ARCHITECTURE.md"
PACKAGE = "harness"
MAX_DEPTH = 3  # harness.models.backends: its backends' packages are folded into it
# The package's face, left out: `harness/__init__.py` (`simple_evaluate`, imported on first use) and `__main__.py`
# (`python -m harness`) import the run, above everything else.
FACE = frozenset({PACKAGE, f"{PACKAGE}.__main__"})
HEAD = """# Architecture

The harness (`harness/`), package by package, and which imports which: written by `make docs`
(`scripts/architecture.py`) from the code; a test fails where this page is stale. `builders/` and `tasks/` sit beside it:
the harness sees only `builders.core.contract`, and each `tasks/<benchmark>/` folder imports the harness
(tests/test_layers.py holds the rules, [layout.md](layout.md) the folders). The package's face, `harness/__init__.py`\n(`simple_evaluate`) and `__main__.py`, import the run and are left out.

A package below imports only packages listed before it (lowest first), or those it stands with: packages that import\neach other, directly or through others, are said so in their row. The diagram draws an import only where no other\nimport of the package reaches it already; the table lists them all.
"""


def modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file, for every module of the harness."""
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(name: str, path: Path) -> Iterator[tuple[str, int]]:
    """(dotted name as written, relative imports resolved against the package; line) of every import of the module;
    `from pkg import x` names `pkg.x`, the module `x` or a name inside `pkg`."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            yield from ((f"{base}.{alias.name}", node.lineno) for alias in node.names)


def node_of(module: str, known: dict[str, Path]) -> str:
    """The package a module is drawn in: its folder, cut at `MAX_DEPTH`; `harness` for the root's modules."""
    parts = module.split(".")
    folder = parts if known[module].name == "__init__.py" else parts[:-1]
    return ".".join(folder[:MAX_DEPTH])


def package_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Package -> the other packages of the harness its modules import."""
    known = modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        if name in FACE:
            continue
        source = node_of(name, known)
        targets = graph.setdefault(source, set())
        for target, _ in imported(name, path):
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and node_of(target, known) != source:
                targets.add(node_of(target, known))
    return graph


def reach(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every package `start` imports, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        for target in graph.get(todo.pop(), set()) - seen:
            seen.add(target)
            todo.append(target)
    return seen


def layered(graph: dict[str, set[str]]) -> list[list[str]]:
    """The packages lowest first, each after every package it imports (ties by name); packages that import each
    other, directly or through others, stand together as one group."""
    reached = {package: reach(graph, package) for package in graph}
    groups = {p: sorted(q for q in graph if q == p or (q in reached[p] and p in reached[q])) for p in graph}
    order: list[list[str]] = []
    placed: set[str] = set()
    while len(placed) < len(graph):
        ready = [
            groups[p]
            for p in sorted(graph)
            if p not in placed and p == groups[p][0] and reached[p] - set(groups[p]) <= placed
        ]
        order += ready
        placed.update(p for group in ready for p in group)
    return order


def drawn(graph: dict[str, set[str]], package: str) -> list[str]:
    """The imports of `package` the diagram draws: those no other import of it reaches already (the table lists all)."""
    others = {t: reach(graph, t) for t in graph[package]}
    return sorted(t for t in graph[package] if not any(t in others[u] and u not in reach(graph, t) for u in others))


def paragraph(root: Path, package: str) -> str:
    """The first paragraph of the package's `__init__` docstring (the root's for `harness`), on one line."""
    init = root.joinpath(*package.split("."), "__init__.py")
    text = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) if init.exists() else None
    return " ".join((text or "(no docstring)").split("\n\n")[0].split())


def render(root: Path = ROOT) -> str:
    graph = package_graph(root)
    known = modules(root)
    order = layered(graph)
    lines = [HEAD, "```mermaid", "graph BT"]
    lines += [f"  {p.replace('.', '_')} --> {t.replace('.', '_')}" for g in order for p in g for t in drawn(graph, p)]
    lines += ["```", "", "| package | modules | imports |", "|---|---|---|"]
    for group in order:
        for package in group:
            count = sum(1 for m in known if m not in FACE and node_of(m, known) == package)
            each = ", ".join(f"`{t}`" for t in sorted(graph[package])) or "-"
            together = f" (imports {', '.join(f'`{q}`' for q in group if q != package)} and is imported back)"
            lines.append(f"| `{package}` | {count} | {each}{together if len(group) > 1 else ''} |")
    lines.append("")
    for package in (p for group in order for p in group):
        lines += [f"## `{package}`", "", paragraph(root, package), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 where the page is stale")
    parser.add_argument("page", nargs="?", type=Path, default=PAGE)
    args = parser.parse_args(argv)
    page = render()
    if args.check:
        stale = not args.page.exists() or args.page.read_text(encoding="utf-8") != page
        if stale:
            print(f"{args.page} is stale: run `make docs`", file=sys.stderr)
        return int(stale)
    args.page.write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
