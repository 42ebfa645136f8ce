"""One clear line where a newcomer used to meet a wall of text (issue 54 items 7, 8, 9 and 11): a vLLM checkpoint that
is not on this machine, a listing filter that matches nothing, the data of many tasks missing, a usage mistake (of a
run or of any subcommand, under the one prefix `harness: error: `), a judge without its key."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

QWEN = "Qwen/Qwen2.5-VL-7B-Instruct"


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "error:" in line]


@pytest.mark.parametrize("backend", ["hf", "vllm"])
def test_a_checkpoint_not_on_this_machine_is_the_same_one_line_for_hf_and_vllm(
    harness, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    """Item 7: `--model vllm` retried the Hub for half a minute, then stopped on `RuntimeError: Device string must not
    be empty` (offline: a backend stop after the prompt count had loaded); `hf` said what to download at once."""
    if backend == "vllm" and importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM's classes are not installed (make test installs them)")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty_hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", backend, "--model_args", f"pretrained={QWEN}",
                  "--data_dir", data_dir, "--output_path", tmp_path / "out")  # fmt: skip
    assert run.code == 2
    assert error_lines(run.err) == [
        f"harness: error: model '{backend}': checkpoint {QWEN} is not in the Hub cache ({tmp_path / 'empty_hub'}) and "
        f"HF_HUB_OFFLINE=1 forbids downloading it: download it once with `hf download {QWEN}`; --screen_only needs "
        f'only its config and processor: `hf download {QWEN} --exclude "*.safetensors" --exclude "*.bin"`'
    ]
    assert "prompt count ready" not in run.err  # stopped before anything was loaded


def test_a_listing_filter_that_matches_nothing_is_an_error_naming_the_closest_names(harness) -> None:
    """Item 8: `harness ls bogus` exited 0 with four empty headers."""
    bogus = harness("ls", "bogus")
    assert bogus.code == 2 and bogus.out == ""
    assert bogus.err.strip() == (
        "harness: error: no group, tag, task or dataset config holds or matches 'bogus' (harness ls lists them all)"
    )
    typo = harness("ls", "mmneedel")
    assert typo.code == 2 and typo.err.startswith(
        "harness: error: no group, tag, task or dataset config holds or matches 'mmneedel'; did you mean: mmneedle"
    )
    elsewhere = harness("ls", "groups", "mmneedle_m1_n2_k1_pos")
    assert elsewhere.code == 2 and elsewhere.err.strip() == (
        "harness: error: no group holds or matches 'mmneedle_m1_n2_k1_pos'; task names do: "
        "harness ls tasks mmneedle_m1_n2_k1_pos"
    )
    assert harness("ls", "tasks", "mmneedle_m1_n2_k1").code == 0


def test_missing_data_is_one_line_for_all_the_tasks_with_the_readmes_source(harness, tmp_path: Path) -> None:
    """Item 9: the same missing-data line 19 times, and a hint of `--source RELEASE_DIR` where the README builds from
    `hf://ZhaoweiWang/MMLongBench`."""
    (tmp_path / "data").mkdir()
    run = harness("--tasks", "mmlongbench_128k", "--model", "qwen2.5-vl", "--data_dir", tmp_path / "data",
                  "--screen_only")  # fmt: skip
    assert run.code == 2
    (line,) = error_lines(run.err)
    assert line.startswith(
        f"harness: error: dataset 'mmlongbench' not found; looked in {tmp_path / 'data' / 'mmlongbench'} (read by 19 "
        "tasks); build them with: builders build mmlongbench --source hf://ZhaoweiWang/MMLongBench --configs "
        "vrag_infoseek_128k vrag_viquae_128k "
    ), line
    assert line.count("not found") == 1 and "RELEASE_DIR" not in line
    assert run.err.count("\n") == 1  # nothing else: no line per task


def test_missing_data_of_milebench_names_its_hub_release_and_a_task_identity_is_unchanged() -> None:
    """`builder_source` only describes the task: journals written before it was declared still resume."""
    from harness.config.task_index import TaskIndex
    from harness.inputs.build_files import build_command_template
    from harness.running.task.task import scored_metadata

    config = TaskIndex([]).tasks["milebench_image_needle"]
    template = build_command_template(config, None)
    assert template is not None and template.startswith("builders build milebench --source hf://FreedomIntelligence/")
    assert config.metadata["builder_source"] == "hf://FreedomIntelligence/MileBench"
    kept = scored_metadata(config.metadata)
    assert (
        kept is not None
        and "builder_source" not in kept
        and kept["builder_command"] == config.metadata["builder_command"]
    )


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["--model", "random"], "the following arguments are required: --tasks"),
        (["--tasks", "x", "--model", "random", "--limit", "-1"], "argument --limit: expected an integer >= 1 or a "
         "fraction in (0, 1), got '-1'"),
        (["--tasks", "x"], "the following arguments are required: --model"),
        (["--tasks", "x", "--model", "random", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)  # fmt: skip
def test_a_usage_mistake_is_one_line_without_the_usage(
    argv: list[str], reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 11: argparse printed the whole usage (28 lines) before the reason."""
    from harness.run.cli import main

    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [f"harness: error: {reason}"]


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["view"], "the following arguments are required: results_dir (see harness view --help)"),
        (["view", ".", "--port", "x"], "argument --port: invalid int value: 'x' (see harness view --help)"),
        (["compare"], "the following arguments are required: RESULTS (see harness compare --help)"),
        (["compare", "a", "b", "c"], "one or two results folders, got 3 (see harness compare --help)"),
        (["power", "--alpha", "2"], "argument --alpha: expected a number between 0 and 1 (exclusive), got '2' (see "
         "harness power --help)"),
        (["report"], "the following arguments are required: results_dir (see harness report --help)"),
        (["report", ".", "--models", "a", "b"], "--models: for a comparison of two runs; add --paired (report.md alone "
         "shows every model, task and metric of RESULTS_DIR)"),
        (["ls", "--bogus"], "unrecognized arguments: --bogus (see harness ls --help)"),
        (["models", "--bogus"], "unrecognized arguments: --bogus (see harness models --help)"),
        (["merge"], "the following arguments are required: out, shard_dirs (see harness merge --help)"),
    ],
)  # fmt: skip
def test_a_subcommands_mistake_is_one_line_under_the_one_prefix(
    argv: list[str], reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 11's leftovers: `harness view` printed argparse's usage before the reason; `harness compare` and `harness
    power` said `harness: error: harness compare: ...`, `harness report` `harness: error: harness report: ...`; the
    argparse mistakes of `ls`, `models`, `merge` and `report` began `harness ls: error: ` where every other mistake of
    theirs begins `harness: error: `. One prefix for the program; a subcommand's usage mistake names its --help."""
    from harness.run.cli import main

    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [f"harness: error: {reason}"]


@pytest.mark.parametrize("argv", [[], ["run"]])
def test_harness_alone_prints_its_help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """As `lm-eval` and `lm-eval run` alone do (and `builders` alone); it was `harness: error: the following arguments
    are required: --tasks`."""
    from harness.run.cli import main

    assert main(argv) == 0
    printed = capsys.readouterr()
    # --tasks shows as optional: `--config FILE` may give it (harness.run.run_file)
    assert printed.out.startswith("usage: harness [-h] [--tasks TASKS]") and "Other commands:" in printed.out
    assert printed.err == ""


def test_a_judges_missing_key_names_the_judge_and_its_flags(
    harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 11: the judge's missing key read `model 'openai': ... pass api_key=... in --model_args` when the run's
    model was `random`."""
    from builders.mmlongbench.build import build_mmlongbench

    build_mmlongbench(source="fixture", out_dir=tmp_path, configs=["summ_govreport_8k"])
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    run = harness("--tasks", "mmlongbench_summ_govreport_8k", "--model", "random", "--judge_model", "openai",
                  "--data_dir", tmp_path, "--limit", "1")  # fmt: skip
    assert run.code == 2
    assert error_lines(run.err) == [
        "harness: error: --judge_model openai: openai backend: no API key for https://api.openai.com/v1; set "
        "OPENAI_API_KEY or pass api_key=... in --judge_args (only a loopback server may be used without one)"
    ]
