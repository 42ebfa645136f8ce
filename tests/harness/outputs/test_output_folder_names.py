"""Output paths built from model arguments stay inside `--output_path`, whatever the text (issue 49, item 8): the
model folder was the checkpoint's text sanitized as lm-eval does, and `pretrained=..` survived it, so journals,
results and the response cache landed in the output folder's parent."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from harness.outputs.results.results import model_folder_name

NAME_MAX = 255  # bytes of one file name (Linux)

TEXTS = [
    "..",
    ".",
    "...",
    "",
    "/",
    "/etc",
    "../../etc/cron.d",
    "..\\..\\windows",
    "~",
    "~root/.ssh",
    "a\x00b",
    "line\nbreak",
    "\udcff",
    "x" * 1000,
    "é" * 300,
    "Qwen/" + "q" * 400,
]


@pytest.mark.parametrize("backend", ["hf", "openai", "vllm"])
@pytest.mark.parametrize("text", TEXTS, ids=[repr(t)[:24] for t in TEXTS])
def test_every_model_folder_is_one_folder_right_under_the_output_path(tmp_path: Path, backend: str, text: str) -> None:
    key = "model" if backend == "openai" else "pretrained"
    name = model_folder_name(backend, {key: text})
    assert name and "/" not in name and "\x00" not in name and name.strip(".")
    assert len(name.encode()) <= NAME_MAX
    folder = tmp_path / "out" / name
    folder.mkdir(parents=True)  # the system takes the name as it is
    assert folder.resolve().parent == (tmp_path / "out").resolve()


def test_ordinary_names_are_kept_and_long_ones_stay_distinct() -> None:
    """Journals of existing runs resume: an ordinary name is lm-eval's sanitized text, as before."""
    assert model_folder_name("hf", {"pretrained": "Qwen/Qwen2.5-VL-7B-Instruct"}) == "Qwen__Qwen2.5-VL-7B-Instruct"
    assert model_folder_name("vllm", {"pretrained": "Qwen/Qwen2.5-VL-7B"}) == "vllm__Qwen__Qwen2.5-VL-7B"
    assert model_folder_name("hf", {"pretrained": "/data/ckpt/step-100"}) == "__data__ckpt__step-100"
    long_a, long_b = ("/data/" + "c" * 300 + suffix for suffix in ("a", "b"))
    assert model_folder_name("hf", {"pretrained": long_a}) != model_folder_name("hf", {"pretrained": long_b})


@pytest.mark.slow  # a tiny LLaVA run in process: a few seconds of CPU
def test_a_run_of_pretrained_dot_dot_writes_inside_the_output_path(
    tmp_path: Path, tiny_llava: Path, needle_run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpoint is the folder above the one the run starts in: `pretrained=..`."""
    checkpoint = Path(shutil.copytree(tiny_llava, tmp_path / "ckpt"))
    (checkpoint / "run_here").mkdir()
    monkeypatch.chdir(checkpoint / "run_here")
    out = tmp_path / "space" / "out"
    run = needle_run("mmneedle_m1_n2_k1_pos", "hf", out, "--limit", "2", model_args="pretrained=..,threads=1")
    assert run.code == 0, run.err
    assert sorted(os.listdir(tmp_path / "space")) == ["out"]  # nothing beside the output folder
    assert [p.name for p in out.iterdir()] == ["_.."]
    assert list((out / "_..").glob("results_*.json")) and list((out / "_..").glob("journal_*.jsonl"))
