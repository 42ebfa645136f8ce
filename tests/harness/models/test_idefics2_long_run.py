"""Issue 51's done-when, "a run of the fixture at 64K with `idefics2` reaches generation", through the `harness`
command: the `idefics2` alias with its checkpoint put in its place (`--model_args pretrained=DIR`: a tiny random
Idefics2 saved with the real `Idefics2Processor` and the published template, `tests.support.forward_pass`) runs the
MMLongBench fixture's VH rows at 64K and 128K, where the official run turned image splitting off
(`tasks/mmlongbench/paper_models.py`). Before the setting was applied as the processor is loaded, each row's text held
5x the image tokens of its pixels and generate raised; every sample is now answered.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.forward_pass import tiny_checkpoint

pytestmark = pytest.mark.slow  # a fixture build and two runs of the command


@pytest.fixture(scope="module")
def long_rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from builders.mmlongbench.build import build_mmlongbench

    root = tmp_path_factory.mktemp("idefics2-long")
    build_mmlongbench(source="fixture", out_dir=root, configs=["niah_vh_single_64k", "niah_vh_single_128k"])
    return root


@pytest.mark.parametrize("length", ["64k", "128k"])
def test_the_idefics2_alias_answers_the_fixture_at_64k_and_128k(
    length: str, long_rows: Path, tmp_path: Path, harness
) -> None:
    task = f"mmlongbench_niah_vh_single_{length}"
    checkpoint = tiny_checkpoint("idefics2")
    out = tmp_path / "out"
    run = harness(
        "--tasks",
        task,
        "--model",
        "idefics2",
        "--model_args",
        f"pretrained={checkpoint},dtype=float32,threads=1",
        "--device",
        "cpu",
        "--gen_kwargs",
        "max_gen_toks=2",
        "--limit",
        "2",
        "--data_dir",
        long_rows,
        "--output_path",
        out,
    )
    assert run.code == 0, run.err
    (journal,) = out.rglob(f"journal_{task}.jsonl")
    samples = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    assert len(samples) == 2
    assert all(s["status"] == "ok" and s.get("error") is None and s["response"] is not None for s in samples), samples
    (results,) = journal.parent.glob("results_*.json")
    config = json.loads(results.read_text())["config"]
    assert config["model_args"]["pretrained"] == str(checkpoint)  # the tiny checkpoint ran in the alias's place
    assert config["input_policies"][task] == {"processor_kwargs": {"do_image_splitting": False}}
