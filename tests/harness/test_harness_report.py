"""`harness report`: the markdown table and the MMNeedle plots (cell heat map, depth curve)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image


def test_report_writes_markdown_and_plots(tmp_path: Path, data_dir: Path, harness) -> None:
    out = tmp_path / "results"
    for model, args in (("random", ()), ("constant", ("--model_args", "answer=-1"))):
        run = harness("--tasks", "mmneedle_m1_n2_k1_pos,mmneedle_m1_n2_k1_neg,mmneedle_m10_n1_k2_pos", "--model", model,
                      *args, "--data_dir", data_dir, "--output_path", out)
        assert run.code == 0, run.err
    report = harness("report", out)
    assert report.code == 0, report.err
    text = (out / "report.md").read_text()
    assert "## random" in text and "## constant" in text
    assert "| mmneedle_m1_n2_k1_neg | 1.0 | 12 | 0 | existence_acc | 1.0000 | 0.0000 |" in text  # constant -1
    # the paper's layout: positives' existence/index/exact, negatives' existence, in percent
    assert "| M=1 N=2 K=1 | 12 | 0.0 ± 0.0 | 0.0 ± 0.0 | 0.0 ± 0.0 |  |  | 12 | 100.0 ± 0.0 |" in text
    for name in ("heatmap_random_mmneedle_m1_n2_k1_pos.png", "depth_random_k2.png", "heatmap_constant_mmneedle_m1_n2_k1_pos.png"):
        assert f"]({name})" in text
        with Image.open(out / name) as image:
            assert image.format == "PNG" and image.width > 300 and image.height > 300
    # N = 1 has a single cell: no heat map for it
    assert not list(out.glob("heatmap_*m10_n1*"))


def test_report_on_a_folder_without_results(tmp_path: Path, harness) -> None:
    run = harness("report", tmp_path)
    assert run.code == 2 and "no results_*.json" in run.err
