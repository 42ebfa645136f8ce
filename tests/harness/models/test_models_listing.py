"""`harness models`: every alias line reads as name, backend, settings, each separated by spaces, followed by the paper
models it stands for ("as the paper" or "departs: why", per benchmark); every model of the three papers' result tables
has an alias or is listed with the reason it has none."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

from harness.models.aliases import ALIASES, PAPER_TITLES, WITHOUT_ALIAS

ROOT = Path(__file__).resolve().parents[3]
RESULT_TABLES = {
    "mmlongbench": "tasks/mmlongbench/paper_results.csv",
    "milebench": "tasks/milebench/paper_results.csv",
    "mmneedle": "tasks/mmneedle/paper_results.csv",
}


def paper_models(benchmark: str) -> set[str]:
    """The models of a paper's result tables, as the repository transcribed them (the Random row is no model)."""
    with (ROOT / RESULT_TABLES[benchmark]).open() as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return {row["model"] for row in rows} - {"Random"}


def test_every_paper_model_has_an_alias_or_a_reason() -> None:
    sizes = {benchmark: len(paper_models(benchmark)) for benchmark in RESULT_TABLES}
    assert sizes == {"mmlongbench": 46, "milebench": 22, "mmneedle": 13}
    for benchmark in RESULT_TABLES:
        covered = Counter(run.name for alias in ALIASES.values() for run in alias.runs if run.benchmark == benchmark)
        covered.update(missing.name for missing in WITHOUT_ALIAS if missing.benchmark == benchmark)
        assert set(covered) == paper_models(benchmark), benchmark
        assert max(covered.values()) == 1, benchmark  # one alias or one reason each, never both
    assert all(missing.reason for missing in WITHOUT_ALIAS)


def test_every_alias_line_separates_its_backend_from_its_settings(harness) -> None:
    run = harness("models")
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    start = lines.index("Aliases (--model NAME; --model_args override; backend=... switches backend):") + 1
    end = lines.index("Paper models without an alias:")
    listed = {}
    for line in lines[start:end]:
        if not line.startswith("   "):  # an alias line, not its notes
            name, backend, settings = line.split()
            listed[name] = (backend, settings)
    assert set(listed) == set(ALIASES)
    for name, alias in ALIASES.items():
        assert listed[name] == (alias.backend, ",".join(f"{k}={v}" for k, v in alias.args.items()))
    assert listed["gpt-4o"][0] == "openai"  # the longest backend name, once run into "model=..."
    text = "\n".join(lines[start:end])
    for alias in ALIASES.values():
        for paper_run in alias.runs:
            assert f'{PAPER_TITLES[paper_run.benchmark]} "{paper_run.name}" ({paper_run.ran})' in text
    assert 'MMNeedle "GPT-4o"' in text and "image_detail=high" in text
    assert len(lines[end + 1 :]) == len(WITHOUT_ALIAS)
    assert 'MileBench "Qwen-VL-Chat" (Qwen/Qwen-VL-Chat): its own model code' in run.out


def test_each_benchmark_picks_its_own_official_run() -> None:
    """MMNeedle's GPT-4o is the May-2024 snapshot at detail high with no temperature sent, MMLongBench's the November
    one; a run of both at once is refused (it cannot be both), unless the command line settles the argument."""
    import pytest

    from harness.errors import UserError
    from harness.models.aliases import resolve

    assert resolve("gpt-4o", {}, ["mmlongbench_128k"])[1] == {"model": "gpt-4o-2024-11-20", "send_temperature": "true"}
    needle = resolve("gpt-4o", {}, ["mmneedle_m10_n2_k1_pos"])[1]
    assert needle == {"model": "gpt-4o-2024-05-13", "image_detail": "high", "send_temperature": "false"}
    assert resolve("gpt-4o", {}, ["milebench"])[1]["model"] == "gpt-4o-2024-05-13"
    with pytest.raises(UserError, match="MMLongBench runs it with model=gpt-4o-2024-11-20 and MMNeedle"):
        resolve("gpt-4o", {}, ["mmlongbench_8k", "mmneedle"])
    given = {"model": "gpt-4o", "send_temperature": "true", "image_detail": "auto"}
    assert resolve("gpt-4o", given, ["mmlongbench_8k", "mmneedle"])[1] == given
    # MileBench truncates to the model's context: its hf runs screen against the checkpoint's own.
    assert resolve("idefics2", {}, ["milebench_docvqa"])[1]["no_context_limit"] == "false"
    assert resolve("idefics2", {}, ["mmlongbench_128k"])[1]["no_context_limit"] == "true"


def test_the_backends_page_tables_every_paper_model_as_the_alias_table_does() -> None:
    page = (ROOT / "docs" / "backends.md").read_text()
    for name, alias in ALIASES.items():
        for paper_run in alias.runs:
            assert f"| {paper_run.name} | `{name}` | {alias.backend} | {paper_run.status} |" in page, name
    for missing in WITHOUT_ALIAS:
        assert f"| {missing.name} | none |  | {missing.reason} |" in page, missing.name
