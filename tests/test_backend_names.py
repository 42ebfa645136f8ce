"""A backend is one declaration (DESIGN.md, "Models"): its package and one line of `harness.models.registry`.
Nothing else compares a backend's name with a literal, so adding a backend edits no table and no `if` elsewhere:
what the rest of the tree needs to know of a backend is a field of its `BackendSpec`.

Read from the source with `ast`, as `tests/test_layers.py` reads imports: a comparison (`==`, `!=`, `in`,
`not in`) or a `match` case whose one side is a backend's name as a literal, a literal tuple, list, set or dict
holding one, or a name the module binds to such a literal (`PLAIN_BACKENDS = ("hf", ...)`, then
`backend in PLAIN_BACKENDS`). A backend's name as data (an alias's declaration `Alias("hf", ...)`, a package name
such as `vllm` in the recorded versions) compares nothing and passes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from harness.models.registry import BACKENDS, REGISTRY_MODULE

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("builders", "harness", "tasks")


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _names_in(node: ast.AST | None, names: frozenset[str]) -> set[str]:
    """The backend names a literal holds: itself, or among a collection's elements or a dict's keys."""
    if isinstance(node, ast.Constant):
        return {node.value} & names if isinstance(node.value, str) else set()
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return set().union(*(_names_in(element, names) for element in node.elts))
    if isinstance(node, ast.Dict):
        return set().union(*(_names_in(key, names) for key in node.keys))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set"):
        return _names_in(node.args[0], names) if node.args else set()
    return set()


def _tables(tree: ast.AST, names: frozenset[str]) -> dict[str, set[str]]:
    """Names the module binds (anywhere in it) to a literal holding backend names: the tables it keeps."""
    tables: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        held = _names_in(value, names)
        for target in targets:
            if held and isinstance(target, ast.Name):
                tables.setdefault(target.id, set()).update(held)
    return tables


def _comparisons(tree: ast.AST, names: frozenset[str]) -> Iterator[tuple[int, str]]:
    """(line, the backend names compared) of every comparison and `match` case against a backend's name."""
    tables = _tables(tree, names)

    def compared(node: ast.expr) -> set[str]:
        if isinstance(node, ast.Name):
            return tables.get(node.id, set())
        return _names_in(node, names)

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            held = set().union(*(compared(side) for side in [node.left, *node.comparators]))
            if held:
                yield node.lineno, ", ".join(sorted(held))
        elif isinstance(node, ast.MatchValue) and (held := _names_in(node.value, names)):
            yield node.lineno, ", ".join(sorted(held))


def backend_name_comparisons(root: Path, backends: Mapping[str, str], registry: str) -> list[str]:
    """`file:line: module compares backend name(s) ...` for each comparison outside the registry and a backend's own
    package (`backends`: name -> the package or module its registry line names)."""
    names = frozenset(backends)
    owners = {registry, *backends.values()}
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            module = _module_name(root, path)
            if any(module == owner or module.startswith(owner + ".") for owner in owners):
                continue
            for line, held in sorted(_comparisons(ast.parse(path.read_text(encoding="utf-8"), str(path)), names)):
                found.append(f"{path.relative_to(root).as_posix()}:{line}: {module} compares backend name(s) {held}")
    return found


def test_only_a_backend_and_the_registry_compare_its_name() -> None:
    assert backend_name_comparisons(ROOT, BACKENDS, REGISTRY_MODULE) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('def f(backend):\n    return backend == "hf"\n', "hf"),
        ('def f(backend):\n    return "vllm" != backend\n', "vllm"),
        ('def f(backend):\n    return backend in ("hf", "vllm")\n', "hf, vllm"),
        (
            'PLAIN = ("hf", "random", None)\n\ndef f(config):\n    return config.get("model") not in PLAIN\n',
            "hf, random",
        ),
        ('EXTRAS = {"openai": "openai"}\n\ndef f(backend):\n    return backend in EXTRAS\n', "openai"),
        ('def f(backend):\n    makers = {"hf": 1}\n    return backend in makers\n', "hf"),
        ('def f(backend):\n    match backend:\n        case "random":\n            return 1\n', "random"),
        ('WANTED = frozenset({"constant"})\n\ndef f(b):\n    return b in WANTED\n', "constant"),
    ],
)
def test_the_check_names_each_comparison_with_its_file_and_line(tmp_path: Path, source: str, expected: str) -> None:
    (tmp_path / "harness" / "outputs").mkdir(parents=True)
    (tmp_path / "harness" / "outputs" / "folder.py").write_text(source)
    (found,) = backend_name_comparisons(tmp_path, {name: f"harness.models.{name}" for name in BACKENDS}, "r")
    line = next(
        n
        for n, text in enumerate(source.splitlines(), 1)
        if "==" in text or "!=" in text or " in " in text or "case" in text
    )
    assert found == f"harness/outputs/folder.py:{line}: harness.outputs.folder compares backend name(s) {expected}"


def test_the_check_lets_data_and_a_backends_own_package_pass(tmp_path: Path) -> None:
    files = {
        # data, not comparisons: an alias's declaration, a package's name among others, a backend's own identity
        "harness/models/aliases/qwen.py": 'ALIAS = Alias("hf", {"pretrained": "Qwen"})\n',
        "harness/outputs/versions.py": 'PACKAGES = ("torch", "vllm")\n\ndef f():\n    return [p for p in PACKAGES]\n',
        "tasks/toy/utils.py": 'def f(doc):\n    return doc["answer"] == "yes"\n',
        # the backend's own package, and the registry, may compare
        "harness/models/backends/hf/settings.py": 'def f(backend):\n    return backend == "hf"\n',
        "harness/models/registry.py": 'def f(backend):\n    return backend in ("hf",)\n',
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    backends = {
        "hf": "harness.models.backends.hf",
        "vllm": "harness.models.backends.vllm_engine",
        "random": "harness.models.b.random",
    }
    assert backend_name_comparisons(tmp_path, backends, "harness.models.registry") == []
