"""scripts/render_alias_requests.py: one request per alias and benchmark, rendered from the processor files at hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.models import aliases


@pytest.mark.slow  # three fixture builds and a tiny checkpoint's processor
def test_each_alias_renders_one_request_per_benchmark(
    tmp_path: Path, data_dir: Path, tiny_llava_336: Path, script_module, monkeypatch, capsys
) -> None:
    from builders.milebench.build import build_milebench
    from builders.mmlongbench.build import build_mmlongbench

    build_mmlongbench(source="fixture", out_dir=tmp_path, configs=["niah_vh_single_8k"])
    build_milebench(source="fixture", out_dir=tmp_path, configs=["clevr_change"])
    (tmp_path / "mmneedle").symlink_to(data_dir / "mmneedle")
    tiny = aliases.Alias("hf", {"pretrained": str(tiny_llava_336), "prompt_style": "llava_llama_2"})
    monkeypatch.setitem(aliases.ALIASES, "tiny-llava", tiny)
    script = script_module("render_alias_requests")
    asked = "tiny-llava,gpt-4o,gpt-4o-2024-05-13,internvl"
    assert script.main(["--data_dir", str(tmp_path), "--aliases", asked, "--chars", "40"]) == 0
    rows = {tuple(cell.strip() for cell in line.split("|")[1:3]): line for line in capsys.readouterr().out.splitlines()}
    mileb = rows[("tiny-llava", "milebench")]
    # MileBench's LLaVA worker: the llava_llama_2 conversation, 576 tokens for each of CLEVR's two images (no BOS: the
    # tiny tokenizer adds none, where LLaVA's adds one).
    assert "BOS x0" in mileb and "image tokens 1152, 2 images" in mileb and 'starts "[INST] <<SYS>>' in mileb
    assert (
        "<image detail=high>" in rows[("gpt-4o-2024-05-13", "mmneedle")]
        and "<image detail=auto>" in rows[("gpt-4o", "mmlongbench")]
        and "<image detail=None>" in rows[("gpt-4o", "mmneedle")]  # not MMNeedle's paper model: no paper setting
    )
    assert "not rendered" in rows[("internvl", "mmlongbench")]  # no InternVL3 files here: said, not fatal
