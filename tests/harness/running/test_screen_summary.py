"""What `--screen_only` says below its table (issue 54 item 5): the prompts' token range, that the data is an offline
stand-in where its build was made from one (so a "128k" task of 200-token prompts is not read as the benchmark), the
alias's input policies as one table, and why counts are estimates in one plain sentence that quotes no library's
error about the Hub."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from builders.mmlongbench.build import build_mmlongbench

CONFIGS = ["niah_vh_single_128k", "icl_food101_128k", "docvqa_slidevqa_128k"]
TASKS = ",".join(f"mmlongbench_{config}" for config in CONFIGS)


@pytest.fixture(scope="module")
def fixture_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mmlb_fixture")
    build_mmlongbench(source="fixture", out_dir=root, configs=CONFIGS)
    return root


def prompt_range(out: str) -> tuple[int, int]:
    """The lowest and highest of the table's `prompt tokens (min-max)` column."""
    ranges = [line.rstrip(" |").rsplit("| ", 1)[1] for line in out.splitlines() if line.startswith("| mmlongbench_")]
    bounds = [[int(n.replace(",", "")) for n in cell.split("-")] for cell in ranges]
    return min(b[0] for b in bounds), max(b[1] for b in bounds)


def test_a_screen_of_the_fixture_says_it_is_a_stand_in_with_its_token_range(
    harness, fixture_build: Path, empty_hub_cache: Path
) -> None:
    run = harness("--tasks", TASKS, "--model", "internvl", "--data_dir", fixture_build, "--screen_only")
    assert run.code == 0, run.err
    low, high = prompt_range(run.out)
    assert high < 10_000  # "128k" tasks of a few hundred or thousand tokens: the fixture's
    summary = [line for line in run.out.splitlines() if "samples would be sent" in line]
    assert re.fullmatch(rf"\d+ of \d+ samples would be sent to the model; 0 screened out; prompts of {low:,}-{high:,} "
                        r"tokens\.", summary[0]), summary  # fmt: skip
    assert (
        "The data of every task is an offline stand-in, not the benchmark's (mmlongbench built from fixture-v3): its "
        f"prompts are {low:,}-{high:,} tokens, whatever length a task's name says"
    ) in run.out
    # Why the counts are estimates: one plain sentence, no library's words about the Hub.
    (why,) = [line for line in run.out.splitlines() if line.startswith("Counts marked estimate")]
    assert why == (
        "Counts marked estimate are not the model's own, because OpenGVLab/InternVL3-8B-hf's config and processor are "
        "not on this machine (no such folder, nor in the local Hub cache): `hf download OpenGVLab/InternVL3-8B-hf "
        '--exclude "*.safetensors" --exclude "*.bin"` fetches them; the run counts with the model itself and may '
        "decide otherwise."
    )
    assert "OSError" not in run.out and "huggingface.co" not in run.out
    # The alias's input policies: one table, a row per policy, not a Python repr per task.
    assert "input policy of" not in run.out and "{'" not in run.out
    table = run.out.split("| input policy | tasks |\n|---|---|\n")[1].strip().splitlines()
    assert table == [
        "| processor crop_to_patches=True, max_patches=4 | 1: mmlongbench_docvqa_slidevqa_128k |",
        "| keep the last 400 images; processor crop_to_patches=True, max_patches=1 | 2: "
        "mmlongbench_icl_food101_128k, mmlongbench_niah_vh_single_128k |",
    ]


def test_a_build_of_a_release_folder_is_not_called_a_stand_in(harness, tmp_path: Path) -> None:
    from builders.mmlongbench.fixture import write_fixture

    release = write_fixture(tmp_path / "release")  # a folder in the release's formats: the builder cannot tell
    build_mmlongbench(source=str(release), out_dir=tmp_path / "data", configs=["niah_vh_single_128k"])
    run = harness("--tasks", "mmlongbench_niah_vh_single_128k", "--model", "random", "--data_dir", tmp_path / "data",
                  "--screen_only")  # fmt: skip
    assert run.code == 0, run.err
    assert "samples would be sent to the model; 0 screened out; prompts of " in run.out
    assert "stand-in" not in run.out and "Input policies" not in run.out
    # The baselines count nothing: the rows' own figures, not named as a Qwen rule (issue 54 item 11).
    assert (
        "Counted as the rows' own figures, no model's count: their text_tokens, and each image at one token per "
        "28x28 pixels (the builds' rule for a context's length), as the run counts." in run.out
    )
    assert "qwen" not in run.out.lower()
