"""No alias caps a prompt's length where the official code did not (issue 42, finding 1): the training window is
recorded, never enforced, and MMLongBench's 128K rows (length-true, `--source fixture:full`) are all sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.models.aliases import ALIASES, alias_info


def test_no_hf_alias_screens_by_a_context_length() -> None:
    for name, alias in ALIASES.items():
        if alias.backend == "hf":
            assert alias.args.get("no_context_limit") == "true" and "context_length" not in alias.args, name
        assert "trained_context" in alias_info(name), name  # recorded in the results, never a limit


@pytest.fixture(scope="module")
def length_true_128k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from builders.mmlongbench.build import build_mmlongbench
    from builders.mmlongbench.leaves import LEAVES

    root = tmp_path_factory.mktemp("mmlb-128k")
    build_mmlongbench(
        source="fixture:full", out_dir=root, configs=[f"{leaf.name}_128k" for leaf in LEAVES], fixture_ids=1
    )
    return root


@pytest.mark.slow  # builds every 128K config of the length-true fixture (~40 s)
@pytest.mark.parametrize("alias", ["internvl", "idefics3", "idefics2", "gemma3", "qwen2.5-vl"])
def test_mmlongbench_128k_screens_no_row_over_length(length_true_128k: Path, alias: str, harness) -> None:
    """InternVL3-8B (trained on 32K) and Idefics (8K/10K) at 128K: the paper reports these cells, the old aliases'
    context_length screened every row out (`0 of 55 samples would be sent`)."""
    run = harness("--tasks", "mmlongbench_128k", "--model", alias, "--screen_only", "--data_dir", length_true_128k)
    assert run.code == 0, run.err
    rows = [line for line in run.out.splitlines() if line.startswith("| mmlongbench_")]
    assert len(rows) == 19
    for line in rows:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[3] == "0" and cells[1] == cells[2], line  # over_length 0, every sample sent
    assert "context limit none given (no_context_limit" in run.out
