"""A new benchmark is one builder package, one task folder and one card template: add the toy benchmark
(`toy_builder.py`, and the task folder and card of `toy_benchmark.py`) to a copy of the project as exactly those
files, and `builders` and `harness` pick it up with no other edit (docs/ADDING_A_BENCHMARK.md); its paper's models,
declared in its task folder, are listed by `harness models` and run as its paper ran them (issue 50 item 1)."""

from __future__ import annotations

import ast
import base64
import io
import json
import os
import re
import shlex
from pathlib import Path

import pytest
from PIL import Image

from tests.support.chat_server import ChatServer
from tests.support.paths import PROJECT
from tests.support.project_copy import TOY_BUILDER, add_toy_benchmark, copy_and_add, run_in_copy
from tests.support.toy_benchmark import TOY_DECLARATION

PACKAGES = ("builders", "harness", "tasks", "dataset_cards")


@pytest.fixture(scope="module")
def project_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's packages copied, then the toy benchmark's own files added; nothing else touched."""
    root = tmp_path_factory.mktemp("project")
    before, after = copy_and_add(root, PACKAGES, add_toy_benchmark)
    new = set(after) - set(before)
    assert set(before) <= set(after) and {p.parts[:2] for p in new} == {
        ("builders", "toy"),
        ("tasks", "toy"),
        ("dataset_cards", "toy"),
    }
    assert [path for path in before if before[path] != after[path]] == []  # no shared file touched
    assert Path("tasks", "toy", "benchmark.py") in new  # its declaration: its paper's models among them
    return root


@pytest.mark.slow  # copies the project, then builds, runs and reports in child processes
def test_a_new_benchmark_needs_only_its_own_files(project_copy: Path, tmp_path: Path) -> None:
    listed = run_in_copy(project_copy, tmp_path, "builders.cli", "list")
    assert listed.returncode == 0, listed.stderr
    assert "toy: 2 configs (coloured squares, for tests)" in listed.stdout and "mmneedle: 21 configs" in listed.stdout

    help_text = run_in_copy(project_copy, tmp_path, "builders.cli", "build", "toy", "--help").stdout
    assert "--rows" in help_text and "--image-storage" in help_text and "--source" not in help_text

    data = tmp_path / "data"
    built = run_in_copy(
        project_copy, tmp_path, "builders.cli", "build", "toy", "--rows", "4", "--configs", "pairs", "--out", str(data)
    )
    assert built.returncode == 0, built.stderr
    assert "pairs: 4 rows" in built.stdout and f"built {data / 'toy'}" in built.stdout
    bad = run_in_copy(
        project_copy, tmp_path, "builders.cli", "build", "toy", "--configs", "triangles", "--out", str(data)
    )
    assert bad.returncode == 2 and "unknown config(s) triangles; valid: colors, pairs" in bad.stderr

    ls = run_in_copy(project_copy, tmp_path, "harness.run.cli", "ls")
    assert ls.returncode == 0 and "toy_colors" in ls.stdout and "toy_pairs" in ls.stdout
    # The harness names the missing config's build as the user's own, and that command adds it to the build.
    constant = ["--tasks", "toy", "--model", "constant", "--data_dir", str(data)]
    missing = run_in_copy(
        project_copy, tmp_path, "harness.run.cli", *constant, "--output_path", str(tmp_path / "never")
    )
    assert missing.returncode == 2
    hint = missing.stderr.split("build it with: ")[1].splitlines()[0]
    assert hint == f"builders build toy --rows 4 --configs colors --out {data}"
    added = run_in_copy(project_copy, tmp_path, "builders.cli", *shlex.split(hint)[1:])
    assert added.returncode == 0 and "added colors to the build" in added.stderr, added.stderr
    manifest = json.loads((data / "toy" / "build_manifest.json").read_text())
    assert manifest["builder"] == "builders.toy" and manifest["contract"]["image_storage"] == "embedded"
    assert list(manifest["configs"]) == ["colors", "pairs"] and len(manifest["steps"]) == 2
    assert (
        (data / "toy" / "README.md")
        .read_text()
        .split("---\n")[-1]
        .startswith("\n# Toy\n\nColoured squares (2 configs)")
    )

    out = tmp_path / "results"
    argv = [*constant, "--model_args", "answer=no", "--output_path", str(out), "--no_progress"]
    evaluated = run_in_copy(project_copy, tmp_path, "harness.run.cli", *argv)
    assert evaluated.returncode == 0, evaluated.stderr
    (results_file,) = (out / "constant").glob("results_*.json")
    results = json.loads(results_file.read_text())
    # colors: no row says "no"; pairs of 4 rows: rows 1-3 show two colours.
    assert results["results"]["toy_pairs"]["acc,none"] == 0.75 and results["results"]["toy_colors"]["acc,none"] == 0.0
    assert results["groups"]["toy"]["acc,none"] == 0.375
    report = run_in_copy(project_copy, tmp_path, "harness.run.cli", "report", str(out))
    assert report.returncode == 0, report.stderr
    assert "| toy_pairs | 1.0 | 4 | 0 | acc | 0.7500 |" in (out / "report.md").read_text()
    the_papers_models(project_copy, tmp_path, data)


def the_papers_models(project_copy: Path, tmp_path: Path, data: Path) -> None:
    """The toy paper's models, declared in its task folder alone: `harness models` lists them, and its GPT-4o runs as
    the paper ran it (detail low on every image, the pairs' squares halved), recorded in the results."""
    listed = run_in_copy(project_copy, tmp_path, "harness.run.cli", "models")
    assert listed.returncode == 0, listed.stderr
    assert (
        'Toy "GPT-4o" (gpt-4o-2024-05-13) with image_detail=low: departs: the paper\'s own API client' in listed.stdout
    )
    assert 'Toy "Squares-VL" (toy/squares-vl-7b): its own model code: no backend here loads it' in listed.stdout
    server = ChatServer(answer=lambda body: "yes")
    server.start()
    try:
        out = tmp_path / "paper_run"
        os.environ["OPENAI_API_KEY"] = "sk-toy"  # the loopback server takes any key
        ran = run_in_copy(
            project_copy, tmp_path, "harness.run.cli", "--tasks", "toy", "--model", "gpt-4o-2024-05-13",
            "--model_args", f"base_url={server.base_url}", "--data_dir", str(data), "--output_path", str(out),
            "--no_progress",
        )  # fmt: skip
    finally:
        server.stop()
        del os.environ["OPENAI_API_KEY"]
    assert ran.returncode == 0, ran.stderr
    heights: dict[int, set[int]] = {}  # images in a request (2: toy_pairs) -> their heights as sent
    for request in server.received:
        sent = [
            part["image_url"]
            for message in request.body["messages"]
            if isinstance(message["content"], list)
            for part in message["content"]
            if part.get("type") == "image_url"
        ]
        assert sent and {image["detail"] for image in sent} == {"low"}
        for image in sent:
            data = base64.b64decode(image["url"].split(",", 1)[1])
            heights.setdefault(len(sent), set()).add(Image.open(io.BytesIO(data)).height)
    assert heights == {1: {40}, 2: {20}}  # the toy's squares are 40 px high; a pair's are halved
    (results_file,) = out.rglob("results_*.json")
    config = json.loads(results_file.read_text())["config"]
    assert config["input_policies"] == {"toy_pairs": {"image_scale": 0.5}}
    assert config["alias_info"]["papers"] == {
        "toy": {
            "paper_name": "GPT-4o",
            "ran": "gpt-4o-2024-05-13",
            "status": "departs: the paper's own API client; the alias sends the same images through OpenAI's",
            "args": {"image_detail": "low"},
        }
    }


def code_lines(source: str) -> int:
    """Lines of code: not blank, not a comment, not part of a docstring."""
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            docstrings.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return sum(
        1
        for number, line in enumerate(source.splitlines(), 1)
        if line.strip() and not line.strip().startswith("#") and number not in docstrings
    )


def test_the_guide_shows_the_toy_builder_as_it_is_and_it_is_short() -> None:
    builder = TOY_BUILDER.read_text()
    guide = (PROJECT / "docs" / "ADDING_A_BENCHMARK.md").read_text()
    assert builder in re.findall(r"^```python\n(.*?)^```", guide, flags=re.S | re.M)
    assert code_lines(builder) <= 60
    assert TOY_DECLARATION in re.findall(r"^```python\n(.*?)^```", guide, flags=re.S | re.M)
