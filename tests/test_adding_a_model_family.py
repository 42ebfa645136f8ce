"""A new model family is one module (with its bundled template beside it) and one registry line: add the toy family
(`tests/support/toy_family.py`, `toy_chat.jinja`) to a copy of the project as `harness/models/families/toy.py` and its
line to `harness/models/families/__init__.py`, and `harness models` lists its aliases, `--screen_only` estimates by
its image rule, and an `hf` run builds its prompts in its format, with no other edit (docs/ADDING_A_MODEL_FAMILY.md)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from tests.support.paths import PROJECT
from tests.support.project_copy import (
    FAMILY_REGISTRY,
    FAMILY_REGISTRY_LINE,
    TOY_FAMILY,
    TOY_TEMPLATE,
    add_registry_line,
    add_toy_family,
    changed_lines,
    copy_and_add,
)
from tests.support.toy_benchmark import build_toy, write_toy_tasks
from tests.test_adding_a_backend import run

PACKAGES = ("builders", "harness", "tasks")


@pytest.fixture(scope="module")
def project_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's packages copied, then the toy family's module, template and registry line added; nothing else."""
    root = tmp_path_factory.mktemp("project")
    before, after = copy_and_add(root, PACKAGES, add_toy_family)
    folder = Path("harness") / "models" / "families"
    assert set(after) - set(before) == {folder / "toy.py", folder / "toy_chat.jinja"}
    assert [path for path in before if before[path] != after[path]] == [FAMILY_REGISTRY]
    assert changed_lines(before[FAMILY_REGISTRY], after[FAMILY_REGISTRY]) == ["+ " + FAMILY_REGISTRY_LINE]
    return root


@pytest.mark.slow  # copies the project, then lists, screens and runs in child processes
def test_a_new_family_needs_only_its_module_and_one_registry_line(
    project_copy: Path, tmp_path: Path, tiny_llava: Path
) -> None:
    data, tasks = build_toy(tmp_path / "data").parent, write_toy_tasks(tmp_path / "toy_tasks")
    listed = run(project_copy, tmp_path, "models")
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"^  toyvision +openai +model=toyvision-1$", listed.stdout, flags=re.M), listed.stdout
    assert re.search(r"^  toy-llava +hf +pretrained=toy/llava-toy,no_context_limit=true,prompt_style=toy_chat$",
                     listed.stdout, flags=re.M)  # fmt: skip

    common = ["--tasks", "toy", "--data_dir", str(data), "--include_path", str(tasks), "--no_progress"]
    screened = run(project_copy, tmp_path, *common, "--model", "toyvision", "--model_args", "context_length=300",
                   "--screen_only")  # fmt: skip
    assert screened.returncode == 0, screened.stderr
    # An API model: estimated by its family's rule, found by the fragment of its name.
    assert "toyvision-1 is an API model" in screened.stdout and "ToyVision family's rule" in screened.stdout
    pairs = next(line for line in screened.stdout.splitlines() if line.startswith("| toy_pairs |"))
    # Two images of 100 tokens each, the prompt's text and 8 tokens to generate: past 300 would be over_length.
    cells = [cell.strip() for cell in pairs.split("|")]
    assert cells[3] == cells[2] and cells[4] == "0" and "100 tokens per image" in screened.stdout

    out = tmp_path / "results"
    ran = run(project_copy, tmp_path, *common, "--model", "toy-llava", "--model_args", f"pretrained={tiny_llava}",
              "--limit", "2", "--output_path", str(out), "--log_samples")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    (results_file,) = out.rglob("results_*.json")
    identity = json.loads(results_file.read_text())["config"]["model_identity"]
    assert identity["prompt_style"]["name"] == "toy_chat" and identity["prompt_style"]["prefill"] is False
    assert identity["chat_template_sha256"] == hashlib.sha256(TOY_TEMPLATE.read_bytes()).hexdigest()


def test_the_guide_shows_the_toy_family_as_it_is() -> None:
    guide = (PROJECT / "docs" / "ADDING_A_MODEL_FAMILY.md").read_text()
    blocks = re.findall(r"^```(?:python|jinja)\n(.*?)^```", guide, flags=re.S | re.M)
    assert TOY_FAMILY.read_text() in blocks
    assert TOY_TEMPLATE.read_text() + "\n" in blocks  # the file holds no newline at its end
    assert f"`{FAMILY_REGISTRY_LINE.strip()}`" in guide


def test_the_registry_line_goes_at_the_end_of_the_table() -> None:
    added = add_registry_line((PROJECT / FAMILY_REGISTRY).read_text(), "FAMILIES", FAMILY_REGISTRY_LINE)
    table = added[added.index("FAMILIES: dict[str, str] = {") :].split("}")[0]
    assert table.rstrip().endswith(FAMILY_REGISTRY_LINE.rstrip()) and added.count(FAMILY_REGISTRY_LINE) == 1
