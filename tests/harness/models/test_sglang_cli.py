"""The `sglang` backend through the `harness` command: `--screen_only` on a tiny checkpoint (its count is the
checkpoint's processor, as SGLang's expands it: the same verdicts as `vllm`'s screen), and a run whose engine is the
stand-in (tests/support/fake_sglang.py: SGLang's engine needs a GPU), journaled, resumed and recorded as every
backend's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import fake_sglang

pytest.importorskip("sglang.srt.server_args", reason="SGLang's classes (make test installs them)")


def _row(out: str, task: str) -> list[str]:
    (line,) = [line for line in out.splitlines() if line.startswith(f"| {task} |")]
    return [cell.strip() for cell in line.strip("|").split("|")]


@pytest.mark.slow  # two screens of a tiny LLaVA
def test_the_screen_counts_as_sglang_will_and_agrees_with_vllms(data_dir: Path, tiny_llava_336: Path, harness) -> None:
    """576 tokens per image against 2,048: the ten-image rows are over length, counted exactly by the checkpoint's
    processor, as the vllm backend's screen counts them."""
    task = "mmneedle_m10_n1_k2_pos"
    common = ("--tasks", task, "--data_dir", data_dir, "--limit", "3", "--screen_only")
    sglang = harness(*common, "--model", "sglang", "--model_args", f"pretrained={tiny_llava_336},context_length=2048")
    assert sglang.code == 0, sglang.err
    vllm = harness(*common, "--model", "vllm", "--model_args", f"pretrained={tiny_llava_336},max_model_len=2048")
    assert vllm.code == 0, vllm.err
    assert _row(sglang.out, task) == _row(vllm.out, task)
    assert _row(sglang.out, task)[9] == "exact" and "as SGLang counts it" in sglang.out


@pytest.mark.slow  # two runs through the CLI
def test_a_run_through_the_cli_is_journaled_and_resumed(
    data_dir: Path, tiny_llava: Path, tmp_path: Path, harness, monkeypatch
):
    """Everything but the engine process is real: the plan, the screen, the cache order, the journal, the results;
    a second run of the same command resumes from the journal and sends nothing."""
    import sglang

    monkeypatch.setattr(sglang, "Engine", fake_sglang.FakeEngine, raising=False)
    monkeypatch.delenv("SGLANG_VLM_CACHE_SIZE_MB", raising=False)
    fake_sglang.CALLS.clear()
    out = tmp_path / "out"
    tasks = "mmneedle_m1_n2_k1_pos,mmneedle_m10_n1_k2_pos"
    command = ("--tasks", tasks, "--model", "sglang", "--model_args", f"pretrained={tiny_llava},context_length=8192",
               "--data_dir", data_dir, "--limit", "3", "--gen_kwargs", "max_gen_toks=4", "--output_path", out)  # fmt: skip
    first = harness(*command)
    assert first.code == 0, first.err
    assert "harness: sglang image-embedding cache SGLANG_VLM_CACHE_SIZE_MB=100 MB" in first.err
    sent = sum(len(call["prompt"]) for call in fake_sglang.CALLS)
    assert sent == 6 and len({id(call["kwargs"]) for call in fake_sglang.CALLS}) == 1  # one engine, every task
    (results,) = out.rglob("results_*.json")
    config = json.loads(results.read_text())["config"]
    assert config["model"] == "sglang" and config["model_identity"]["server_args"] == {"context_length": 8192}
    assert config["backend_stats"]["image_cache_mb"] == 100 and "as SGLang counts it" in config["token_counting"]
    # every argument sglang.Engine was built with, given or the backend's own (issue 74, item 3)
    assert config["backend_stats"]["engine_args"] == json.loads(json.dumps(fake_sglang.CALLS[0]["kwargs"]))
    assert config["backend_stats"]["engine_args"]["context_length"] == 8192
    journal = out.rglob("journal_mmneedle_m10_n1_k2_pos.jsonl").__next__().read_text().splitlines()[1:]
    records = [json.loads(line) for line in journal]
    assert [r["status"] for r in records] == ["ok"] * 3
    assert all(r["response"].count("img:") == 10 for r in records)  # each prompt's ten images reached the engine

    again = harness(*command)
    assert again.code == 0, again.err
    assert sum(len(call["prompt"]) for call in fake_sglang.CALLS) == sent  # resumed: nothing sent again
