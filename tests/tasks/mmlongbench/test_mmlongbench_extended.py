"""MMLongBench past 128K in the harness: `harness ls` lists `mmlongbench_256k`, `_512k` and `_1m`, whose groups
average the four categories that have configs there (Summarization has none) while the paper's groups keep the
paper's lengths; `harness --tasks mmlongbench_256k --model random` runs end to end on a fixture build; and a model
whose hard limit is below a grown row's length records `over_length` for it, its groups N/A, without a crash."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from builders.mmlongbench.build import build_mmlongbench
from builders.mmlongbench.fixture import write_fixture
from builders.mmlongbench.leaves import CONFIGS, EXTENDED_CONFIGS, EXTENDED_LENGTHS, LENGTHS
from harness.config.task_index import TaskIndex

NIAH_256K = [name for name, cfg in EXTENDED_CONFIGS.items() if cfg.length == "256k" and cfg.leaf.category == "niah"]


def test_the_lengths_past_128k_have_their_own_groups_and_leave_the_papers_alone(harness) -> None:
    index = TaskIndex()
    assert index.groups["mmlongbench"].task == [f"mmlongbench_{length}" for length in LENGTHS]
    assert index.groups["mmlongbench_extended"].task == [f"mmlongbench_{length}" for length in EXTENDED_LENGTHS]
    for length in EXTENDED_LENGTHS:
        top = index.groups[f"mmlongbench_{length}"]
        assert top.task == [f"mmlongbench_{c}_{length}" for c in ("vrag", "niah", "icl", "docvqa")]
        assert (
            f"mmlongbench_summ_{length}" not in index.groups
            and f"mmlongbench_summ_govreport_{length}" not in index.tasks
        )
        assert [(entry["metric"], entry["aggregation"]) for entry in top.aggregate_metric_list] == [
            ("score", "strict_mean"),
            ("score_nonempty", "strict_mean"),
        ]
        assert index.groups[f"mmlongbench_mmniah_reason_{length}"].task == [
            f"mmlongbench_niah_mmniah_reason_text_{length}",
            f"mmlongbench_niah_mmniah_reason_image_{length}",
        ]
    assert index.tasks["mmlongbench_icl_food101_1m"].dataset_name == "icl_food101_1m"
    listed = harness("ls")
    assert listed.code == 0
    assert all(f"mmlongbench_{length} " in listed.out for length in EXTENDED_LENGTHS)


@pytest.mark.slow  # a build and a run of every length past 128K
def test_random_runs_mmlongbench_256k_end_to_end(harness, tmp_path: Path) -> None:
    pytest.importorskip("bm25s")  # VRAG ranks its hard negatives with it
    configs = [name for name, cfg in EXTENDED_CONFIGS.items() if cfg.length == "256k"]
    data = tmp_path / "data"
    build_mmlongbench(source="fixture", out_dir=data, configs=configs)
    out = tmp_path / "out"
    run = harness("--tasks", "mmlongbench_256k", "--model", "random", "--data_dir", data, "--output_path", out)
    assert run.code == 0, run.err
    results = run.results("random")
    assert set(results["results"]) == {f"mmlongbench_{c}" for c in configs}
    assert all(c["n_scored"] == c["sample_len"] > 0 for c in results["sample_counts"].values())
    categories = [results["groups"][f"mmlongbench_{c}_256k"]["score,none"] for c in ("vrag", "niah", "icl", "docvqa")]
    assert results["groups"]["mmlongbench_256k"]["score,none"] == pytest.approx(sum(categories) / 4)


def _jpeg(side: int, shade: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (side, side), (shade % 256, shade // 256 * 60 % 256, 120)).save(out, format="JPEG")
    return out.getvalue()


@pytest.mark.slow  # a build and a run past 128K
def test_a_model_shorter_than_a_grown_row_records_over_length_and_its_groups_are_na(harness, tmp_path: Path) -> None:
    """A VH-Single 128K row of 51 images of 2,500 tokens (~127,500 tokens) grows to ~145,000 at 256K with the
    anchor's negatives of another file: a 139,264-token model takes the 128K row and not the 256K one."""
    release = write_fixture(tmp_path / "release")
    images = release / "mmlb_image" / "vh" / "big"
    images.mkdir()
    for k in range(64):
        (images / f"{k}.jpg").write_bytes(_jpeg(1400, k * 3))
    name = [f"vh/big/{k}.jpg" for k in range(64)]
    question = "For the image with a giraffe, is there a dog?"
    depths = [
        {"id": "giraffe", "question": question, "answer": "Yes", "ctxs": name[:k] + [name[63]] + name[k:50]}
        for k in (0, 10, 20, 30, 40, 50)
    ]
    pool = [
        {
            "id": "giraffe2",
            "question": question,
            "answer": "No",
            "ctxs": name[50 : 50 + k] + [name[62]] + name[50 + k : 60],
        }
        for k in (0, 5, 10)
    ]
    for file, rows in ((CONFIGS["niah_vh_single_128k"].file, depths), (CONFIGS["niah_vh_multi_64k"].file, pool)):
        (release / "mmlb_data" / file).write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = tmp_path / "data"
    build_mmlongbench(source=str(release), out_dir=data, configs=["niah_vh_single_128k", *NIAH_256K])

    out = tmp_path / "out"
    run = harness(
        "--tasks",
        "mmlongbench_niah_vh_single_128k,mmlongbench_niah_256k",
        "--model",
        "random",
        "--model_args",
        "context_length=139264",
        "--data_dir",
        data,
        "--output_path",
        out,
    )
    assert run.code == 0, run.err
    results = run.results("random")
    counts = results["sample_counts"]
    assert counts["mmlongbench_niah_vh_single_128k"]["n_scored"] == 6
    grown = counts["mmlongbench_niah_vh_single_256k"]
    assert grown["n_scored"] == 0 and grown["sample_len"] == 6
    samples = run.samples("random", "mmlongbench_niah_vh_single_256k")
    assert len(samples) == 6 and {s["status"] for s in samples} == {"over_length"}
    assert results["results"]["mmlongbench_niah_vh_single_256k"]["score,none"] == "N/A"
    assert results["groups"]["mmlongbench_niah_256k"]["score,none"] == "N/A"
    assert results["results"]["mmlongbench_niah_mmniah_ret_text_256k"]["score,none"] != "N/A"
