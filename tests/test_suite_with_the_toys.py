"""The guides' promise holds for the project's own suite (issue 62, item 6): a copy of the project with the toy
benchmark (docs/ADDING_A_BENCHMARK.md) and the toy family (docs/ADDING_A_MODEL_FAMILY.md) added exactly as the guides
show, and `make docs` run as they say, passes the whole fast suite (`make test-fast`'s selection)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import PROJECT
from tests.support.toy_benchmark import CARD_TEMPLATE, write_toy_tasks
from tests.test_adding_a_model_family import REGISTRY, REGISTRY_LINE, TOY_FAMILY, TOY_TEMPLATE, add_registry_line


def _tracked_copy(root: Path) -> None:
    """The project's files as a clean clone has them (git's tracked and unignored files), no build outputs."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=PROJECT, capture_output=True, check=True
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = PROJECT / name
        if source.is_file() and not source.is_symlink():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)


@pytest.mark.slow  # the fast suite again, in a copy: several minutes
def test_the_fast_suite_passes_with_the_guides_toys_added(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (PROJECT / ".git").exists():
        pytest.skip("needs the project's git checkout to copy its tracked files")
    root = tmp_path / "project"
    _tracked_copy(root)
    # The toy benchmark: its builder package, its card template, its task folder (the benchmark guide's three).
    (root / "builders" / "toy").mkdir()
    shutil.copy(PROJECT / "tests" / "support" / "toy_builder.py", root / "builders" / "toy" / "__init__.py")
    (root / "dataset_cards" / "toy").mkdir()
    (root / "dataset_cards" / "toy" / "card.md.jinja").write_text(CARD_TEMPLATE)
    write_toy_tasks(root / "tasks" / "toy")
    # The toy family: its module, its template and one registry line (the family guide's).
    folder = root / "harness" / "models" / "families"
    shutil.copy(TOY_FAMILY, folder / "toy.py")
    shutil.copy(TOY_TEMPLATE, folder / "toy_chat.jinja")
    (root / REGISTRY).write_text(add_registry_line((root / REGISTRY).read_text(), REGISTRY_LINE))

    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    docs = subprocess.run(
        [sys.executable, "scripts/docs_tables.py"], cwd=root, env=env, capture_output=True, text=True, check=False
    )
    assert docs.returncode == 0, docs.stderr
    suite = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-m", "not slow", "-p", "no:cacheprovider", "-n", "2", "-x"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    assert suite.returncode == 0, suite.stdout[-6000:]
