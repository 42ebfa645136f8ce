"""The layers of the tree point one way, and no module imports itself back (DESIGN.md, "Layers").

    builders/core  <-  builders/<benchmark>         (benchmarks never import each other)
    builders.core.contract  <-  harness            (the only part of the builders the harness sees)
    harness, builders.core.contract, builders/<same benchmark>  <-  tasks/<benchmark>

Inside the harness, one order, lowest first (`HARNESS_LAYERS`; a module may import its own layer and those below):

    base      the modules at harness/'s root (`BASE_MODULES`: the request/response contract `api`, `errors`, `redact`,
              `file_writing`, `row_tokens`, `sent`, `fit_context`, `schema`) and `uncertainty` (the statistics):
              what every layer uses, importing nothing of the harness above them
    config    task and group YAML read into typed configs, the task index
    inputs    a task's data found, verified and read; rows made into what a model is sent
    models    the model layer: `facts`, `families`, `shared` (what the backends share), the registry, `aliases`
              and `backends`, in that order (docs/ARCHITECTURE.md)
    running   the loop that screens, generates, scores and journals a task's samples (`running.task`: a task at
              run time; `running.journal`: what a run writes as it goes)
    outputs   a feature a package: `results`, `report`, `compare`, `power`, `merge`
    top       the ways in: `harness.run` (the command line, its run file and flags, the plan, its execution, the
              Python API, the image asker) and `harness.view`

Inside a layer its packages point one way too (`test_packages_point_one_way`: no two import each other, directly or
through others).

Every `import` counts, wherever it stands: a lazy import inside a function is still a dependency (it runs the
first time the function does, and an import cycle through it works only by the order modules happen to load),
and so is one under `if TYPE_CHECKING:` (whoever reads the module must read the other to follow it).
The graph is read from the source with `ast` (scripts/architecture.py's reading), so a module that cannot be
imported here is checked too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import import_script
from tests.support.layered_modules import layered_modules

ROOT = Path(__file__).resolve().parent.parent
HARNESS_LAYERS = ("base", "config", "inputs", "models", "running", "outputs", "top")
# harness.<name>: the base layer (`uncertainty` is a package: the statistics every layer may use; `sent`: a request as
# sent; `fit_context`: where a row's context stands in its prompt; `schema`: the file formats validated by pydantic)
BASE_MODULES = frozenset(
    {"api", "errors", "redact", "file_writing", "row_tokens", "uncertainty", "sent", "fit_context", "schema"}
)


def module_names(root: Path) -> dict[str, Path]:
    """Dotted name -> file, for every module of the layered packages under `root`."""
    modules = {}
    for path in layered_modules(root):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def import_graph(root: Path) -> dict[str, dict[str, int]]:
    """Module -> {module of the tree it imports: first line}; a name inside a module counts as the module."""
    modules = module_names(root)
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        edges = graph.setdefault(name, {})
        for target, line in import_script("architecture").imported(name, path):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.setdefault(target, line)
    return graph


def _layer(module: str, modules: dict[str, Path]) -> tuple[str, str]:
    """(top package, sub-package or "") of a module: ("builders", "mmneedle"), ("builders", "core"),
    ("tasks", "milebench"), ("builders", "") for `builders.cli`."""
    top, _, rest = module.partition(".")
    part = rest.split(".")[0]
    package = f"{top}.{part}"
    is_package = bool(part) and (  # task folders have no __init__.py
        any(m.startswith(package + ".") for m in modules) or modules[package].name == "__init__.py"
    )
    return top, part if is_package else ""


def harness_layer(module: str) -> str:
    """The layer of a harness module (`HARNESS_LAYERS`): its sub-package's, `base` for `BASE_MODULES`, else `top`."""
    part = module.split(".")[1] if "." in module else ""
    if part in HARNESS_LAYERS[1:-1]:
        return part
    return "base" if part in BASE_MODULES else "top"


def _allowed(source: str, target: str, modules: dict[str, Path]) -> bool:
    (top, part), (to_top, to_part) = _layer(source, modules), _layer(target, modules)
    if top == "harness":
        if to_top == "harness":
            return HARNESS_LAYERS.index(harness_layer(target)) <= HARNESS_LAYERS.index(harness_layer(source))
        return target == "builders.core.contract"
    if top == "builders":
        if to_top != "builders":
            return False
        if part in ("core", ""):  # builders/core and the CLI know benchmarks only through the registry
            return to_part in ("core", "")
        return to_part in ("core", "", part)
    # tasks/<benchmark>: its own hooks, the harness, the contract, and its own benchmark's builder package
    if to_top == "tasks":
        return to_part in ("", part)
    return to_top == "harness" or target == "builders.core.contract" or (to_top == "builders" and to_part == part)


def layer_violations(root: Path) -> list[str]:
    modules = module_names(root)
    graph = import_graph(root)
    return [
        f"{modules[source].relative_to(root)}:{line}: {source} imports {target}"
        for source, edges in graph.items()
        for target, line in edges.items()
        if not _allowed(source, target, modules)
    ]


def import_cycles(root: Path) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    graph = import_graph(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return sorted(cycles)


def test_packages_point_one_way() -> None:
    """No two packages of the harness import each other, directly or through others (docs/ARCHITECTURE.md's order)."""
    script = import_script("architecture")
    assert [group for group in script.layered(script.package_graph(ROOT)) if len(group) > 1] == []


def test_layers_point_one_way() -> None:
    assert layer_violations(ROOT) == []


def test_no_module_imports_itself_back() -> None:
    assert import_cycles(ROOT) == []


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"builders/core/a.py": "from builders.mmneedle import x\n", "builders/mmneedle/__init__.py": ""},
            "builders/core/a.py:1: builders.core.a imports builders.mmneedle",
        ),
        (
            {
                "builders/locovqa/e.py": "def f():\n    from harness.run.execute import make_model\n",
                "harness/run/execute.py": "",
            },
            "builders/locovqa/e.py:2: builders.locovqa.e imports harness.run.execute",
        ),
        (
            {"builders/locovqa/f.py": "from builders.mmneedle.images import T\n", "builders/mmneedle/images.py": ""},
            "builders/locovqa/f.py:1: builders.locovqa.f imports builders.mmneedle.images",
        ),
        (
            {"harness/m.py": "from builders.core.release_paths import r\n", "builders/core/release_paths.py": ""},
            "harness/m.py:1: harness.m imports builders.core.release_paths",
        ),
        (
            {"tasks/milebench/s.py": "from ..mmneedle import utils\n", "tasks/mmneedle/utils.py": ""},
            "tasks/milebench/s.py:1: tasks.milebench.s imports tasks.mmneedle.utils",
        ),
        (
            {"builders/milebench/b.py": "from tasks.milebench.scoring import g\n", "tasks/milebench/scoring.py": ""},
            "builders/milebench/b.py:1: builders.milebench.b imports tasks.milebench.scoring",
        ),
        # Inside the harness: a lower layer never imports a higher one, lazily or not.
        (
            {
                "harness/models/backends/hf.py": "def f():\n    from harness.running.batching import b\n",
                "harness/running/batching.py": "",
            },
            "harness/models/backends/hf.py:2: harness.models.backends.hf imports harness.running.batching",
        ),
        (
            {
                "harness/running/runner.py": "from harness.outputs.sample_log import s\n",
                "harness/outputs/sample_log.py": "",
            },
            "harness/running/runner.py:1: harness.running.runner imports harness.outputs.sample_log",
        ),
        (
            {
                "harness/inputs/truncation.py": "from harness.running.journal.sample_store import OK\n",
                "harness/running/journal/sample_store.py": "",
            },
            "harness/inputs/truncation.py:1: harness.inputs.truncation imports harness.running.journal.sample_store",
        ),
        (
            {"harness/api.py": "def f():\n    from harness.inputs.images import g\n", "harness/inputs/images.py": ""},
            "harness/api.py:2: harness.api imports harness.inputs.images",
        ),
        (
            {"harness/outputs/results/results.py": "from harness.run.cli import c\n", "harness/run/cli.py": ""},
            "harness/outputs/results/results.py:1: harness.outputs.results.results imports harness.run.cli",
        ),
        (
            {"harness/config/task_index.py": "from harness.view.app import a\n", "harness/view/app.py": ""},
            "harness/config/task_index.py:1: harness.config.task_index imports harness.view.app",
        ),
    ],
)
def test_the_layer_check_names_an_import_against_the_direction(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    assert layer_violations(_tree(tmp_path, files)) == [expected]


def test_the_layer_check_lets_the_allowed_imports_pass(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "builders/core/contract.py": "",
            "builders/core/store.py": "from builders.core import contract\n",
            "builders/milebench/gold.py": "from builders.core.store import s\n",
            "harness/inputs/data.py": "from builders.core import contract\nfrom harness.config import task_config\n",
            "harness/config/task_config.py": "from harness.errors import E\n",
            "harness/errors.py": "",
            "harness/running/runner.py": "from harness.models.shared.scheduling import prefix_order\nfrom harness.api import OK\n",
            "harness/models/shared/scheduling/prefix_order.py": "",
            "harness/api.py": "from harness.row_tokens import t\n",
            "harness/row_tokens.py": "",
            "harness/run/cli.py": "from harness.outputs import report\n",
            "harness/outputs/report/report_md.py": "",
            "tasks/milebench/scoring.py": "from builders.milebench.gold import g\nfrom harness.inputs.data import d\n"
            "from . import utils\nfrom builders.core.contract import X\n",
            "tasks/milebench/utils.py": "",
        },
    )
    assert layer_violations(root) == []


def test_the_cycle_check_finds_a_cycle_through_a_lazy_import(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "harness/api.py": "def f():\n    from harness.inputs.images import g\n",
            "harness/inputs/images.py": "from harness.api import Request\n",
            "harness/running/task/judge.py": "from harness.running.runner import r\n",
            "harness/running/runner.py": "from harness.running.task.task import t\n",
            "harness/running/task/task.py": "import harness.running.task.judge\n",
            "harness/leaf.py": "from harness.api import x\n",
        },
    )
    assert import_cycles(root) == [
        ["harness.api", "harness.inputs.images"],
        ["harness.running.runner", "harness.running.task.judge", "harness.running.task.task"],
    ]
