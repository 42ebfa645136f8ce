"""scripts/check_token_counting.py, the GPU check's count comparison, on the tiny LLaVA (CPU): the hf
backend's screen count equals the processor's real input_ids for every sample."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the script counts with a tiny LLaVA's processor


def test_the_hf_screen_counts_what_the_processor_builds(data_dir: Path, tiny_llava: Path, capsys, script_module):
    tasks = "mmneedle_m1_n2_k1_pos,mmneedle_m10_n1_k2_neg"
    code = script_module("check_token_counting").main(
        [
            "--tasks",
            tasks,
            "--model_args",
            f"pretrained={tiny_llava},threads=1",
            "--data_dir",
            str(data_dir),
            "--limit",
            "2",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "processor LlavaProcessor" in out
    rows = {
        line.split(" | ")[0].strip("| "): line.split(" | ")
        for line in out.splitlines()
        if line.startswith("| mmneedle_")
    }
    assert set(rows) == set(tasks.split(","))
    for cells in rows.values():
        samples, screen_equal = int(cells[1]), int(cells[4])
        assert samples == 2 and screen_equal == samples
    # LLaVA expands an image to a fixed count, not by the contract's Qwen2-VL rule: the image column says so.
    assert rows["mmneedle_m10_n1_k2_neg"][6].startswith("0 of 20")
