"""Issue 31's dead ends, each as a newcomer met it: every stop is one line in seconds that says what to do.

- item 4: `--data_dir data/mmneedle` (the folder `builders build` printed) and a `--data_dir` that does not exist;
- item 5: a package the run needs and that is not installed (the backend's, a scorer's) is named, with the extra
  that brings it, before the first sample (a module is "not installed" here as Python's import system has it:
  `sys.modules[name] = None` makes `import name` fail and `find_spec` return None);
- item 6: a checkpoint not available offline is one line naming it, `hf download ID`, and what `--screen_only`
  needs, asked of the Hub cache before `from_pretrained` (which retried for most of a minute);
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


def test_a_data_dir_naming_a_build_folder_says_once_to_pass_its_parent(harness, data_dir: Path) -> None:
    run = harness("--tasks", "mmneedle_k1", "--model", "random", "--data_dir", data_dir / "mmneedle")
    assert run.code == 2
    assert run.err.strip() == (f"harness: error: --data_dir {data_dir / 'mmneedle'} is a mmneedle build (it holds "
                               f"build_manifest.json); --data_dir takes the folder holding the builds: use --data_dir "
                               f"{data_dir}")


def test_a_data_dir_that_does_not_exist_is_one_line_for_every_task(harness, tmp_path: Path) -> None:
    run = harness("--tasks", "mmneedle_k1", "--model", "random", "--data_dir", tmp_path / "nowhere")
    assert run.code == 2
    line = run.err.strip()
    assert "\n" not in line
    assert line.startswith(f"harness: error: --data_dir {tmp_path / 'nowhere'}: no such folder (read by 14 tasks); "
                           "build them with: builders build mmneedle")
    assert f"--out {tmp_path / 'nowhere'}" in line


@pytest.fixture(scope="module")
def locovqa_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from builders.locovqa import build_locovqa

    root = tmp_path_factory.mktemp("locovqa_data")
    build_locovqa(["synthetic"], root, ["okvqa_cmp_1"], limit=2, cell_size=16, num_proc=1)
    return root


def test_a_scorers_missing_extra_stops_the_run_before_the_first_sample(
        harness, locovqa_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    out = tmp_path / "out"
    run = harness("--tasks", "locovqa_okvqa_cmp_1", "--model", "random", "--data_dir", locovqa_dir, "--output_path", out)
    assert run.code == 2
    assert run.err.strip() == ("harness: error: the scorer of locovqa_okvqa_cmp_1 needs the locovqa extra "
                               "(sentence_transformers not installed): pip install -e '.[locovqa]' (checked before "
                               "the first sample: nothing was run)")
    assert not list(out.rglob("journal_*.jsonl"))
    monkeypatch.delitem(sys.modules, "sentence_transformers")
    assert harness("--tasks", "locovqa_okvqa_cmp_1", "--model", "random", "--data_dir", locovqa_dir,
                   "--output_path", out).code == 0


def test_a_backends_missing_extra_is_named_with_the_command_that_installs_it(
        harness, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "httpx", None)
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "qwen2.5-vl", "--data_dir", data_dir)
    assert run.code == 2
    assert run.err.strip() == ("harness: error: --model qwen2.5-vl needs the hf extra (torch not installed): "
                               "pip install -e '.[hf]' (checked before the first sample: nothing was run)")
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "openai", "--data_dir", data_dir)
    assert run.code == 2 and "--model openai needs the openai extra (httpx not installed): pip install -e '.[openai]'" \
        in run.err
    # The screen loads no model: it runs without the extra.
    assert harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "qwen2.5-vl", "--data_dir", data_dir,
                   "--screen_only").code == 0


def test_a_checkpoint_not_available_offline_is_one_line_naming_it_and_how_to_get_it(
        harness, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty_hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "qwen2.5-vl", "--data_dir", data_dir)
    assert run.code == 2
    (line,) = [line for line in run.err.splitlines() if line.startswith("harness: error:")]
    assert line == ("harness: error: model 'qwen2.5-vl': checkpoint Qwen/Qwen2.5-VL-7B-Instruct is not in the Hub "
                    f"cache ({tmp_path / 'empty_hub'}) and HF_HUB_OFFLINE=1 forbids downloading it: download it once "
                    "with `hf download Qwen/Qwen2.5-VL-7B-Instruct`; --screen_only needs only its config and processor: "
                    '`hf download Qwen/Qwen2.5-VL-7B-Instruct --exclude "*.safetensors" --exclude "*.bin"`')
    assert "Retrying" not in run.err
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "hf", "--model_args", "pretrained=./no/such/model",
                  "--data_dir", data_dir)
    assert run.code == 2 and "checkpoint ./no/such/model: no such folder, and not a Hub model id" in run.err
