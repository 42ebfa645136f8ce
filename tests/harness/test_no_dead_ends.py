"""Issue 31's dead ends, each as a newcomer met it: every stop is one line in seconds that says what to do.

- item 4: `--data_dir data/mmneedle` (the folder `builders build` printed) and a `--data_dir` that does not exist;
- item 5: a package the run needs and that is not installed (the backend's, a scorer's) is named, with the extra
  that brings it, before the first sample (a module is "not installed" here as Python's import system has it:
  `sys.modules[name] = None` makes `import name` fail and `find_spec` return None);
- item 6: a checkpoint not available offline is one line naming it, `hf download ID`, and what `--screen_only`
  needs, asked of the Hub cache before `from_pretrained` (which retried for most of a minute);
- item 7: lm-eval's and lmms-eval's everyday flags, `harness ls` with a section and a filter, a mistyped
  subcommand, `push_samples_to_hub` without `--log_samples`, a resumed run's one summary line, and lm-eval's
  top-level results keys; `--wandb_args` logs to Weights & Biases (offline mode);
- item 8: `simple_evaluate` has named, typed parameters and a docstring (a notebook's completion shows them), and
  prints nothing on stdout unless asked;
- item 9: `python -m builders`, as `python -m harness`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.paths import PROJECT
from tests.support.run_setups import only_results, run_args


def test_a_data_dir_naming_a_build_folder_says_once_to_pass_its_parent(harness, data_dir: Path) -> None:
    run = harness("--tasks", "mmneedle_k1", "--model", "random", "--data_dir", data_dir / "mmneedle")
    assert run.code == 2
    assert run.err.strip() == (
        f"harness: error: --data_dir {data_dir / 'mmneedle'} is a mmneedle build (it holds "
        f"build_manifest.json); --data_dir takes the folder holding the builds: use --data_dir "
        f"{data_dir}"
    )


def test_a_data_dir_that_does_not_exist_is_one_line_for_every_task(harness, tmp_path: Path) -> None:
    run = harness("--tasks", "mmneedle_k1", "--model", "random", "--data_dir", tmp_path / "nowhere")
    assert run.code == 2
    line = run.err.strip()
    assert "\n" not in line
    assert line.startswith(
        f"harness: error: --data_dir {tmp_path / 'nowhere'}: no such folder (read by 14 tasks); "
        "build them with: builders build mmneedle"
    )
    assert f"--out {tmp_path / 'nowhere'}" in line


@pytest.fixture(scope="module")
def locovqa_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from builders.locovqa import build_locovqa

    root = tmp_path_factory.mktemp("locovqa_data")
    build_locovqa(["synthetic"], root, ["okvqa_cmp_1"], limit=2, cell_size=16, num_proc=1)
    return root


@pytest.mark.slow  # a run in a fresh process (~2 s)
def test_a_scorers_missing_extra_stops_the_run_before_the_first_sample(
    harness, locovqa_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    out = tmp_path / "out"
    okvqa = run_args("locovqa_okvqa_cmp_1", "random", data_dir=locovqa_dir, out=out)
    run = harness(*okvqa)
    assert run.code == 2
    assert run.err.strip() == (
        "harness: error: the scorer of locovqa_okvqa_cmp_1 needs the locovqa extra "
        "(sentence_transformers not installed): pip install -e '.[locovqa]' (checked before "
        "the first sample: nothing was run)"
    )
    assert not list(out.rglob("journal_*.jsonl"))
    monkeypatch.delitem(sys.modules, "sentence_transformers")
    assert harness(*okvqa).code == 0


def test_a_backends_missing_extra_is_named_with_the_command_that_installs_it(
    needle_run, monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformers.utils import is_torch_available

    # transformers caches its first look for torch: taken here, with torch present, so that hiding it below cannot
    # leave the next test of this worker (a tiny LLaVA built in a fixture) without torch.
    assert is_torch_available()
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "httpx", None)
    run = needle_run("mmneedle_m1_n2_k1_pos", "qwen2.5-vl", None)
    assert run.code == 2
    assert run.err.strip() == (
        "harness: error: --model qwen2.5-vl needs the hf extra (torch not installed): "
        "pip install -e '.[hf]' (checked before the first sample: nothing was run)"
    )
    run = needle_run("mmneedle_m1_n2_k1_pos", "openai", None)
    assert (
        run.code == 2
        and "--model openai needs the openai extra (httpx not installed): pip install -e '.[openai]'" in run.err
    )
    # The screen loads no model: it runs without the extra.
    assert needle_run("mmneedle_m1_n2_k1_pos", "qwen2.5-vl", None, "--screen_only").code == 0


def test_a_checkpoint_not_available_offline_is_one_line_naming_it_and_how_to_get_it(
    needle_run, empty_hub_cache: Path
) -> None:
    run = needle_run("mmneedle_m1_n2_k1_pos", "qwen2.5-vl", None)
    assert run.code == 2
    (line,) = [line for line in run.err.splitlines() if line.startswith("harness: error:")]
    assert line == (
        "harness: error: model 'qwen2.5-vl': checkpoint Qwen/Qwen2.5-VL-7B-Instruct is not in the Hub "
        f"cache ({empty_hub_cache}) and HF_HUB_OFFLINE=1 forbids downloading it: download it once "
        "with `hf download Qwen/Qwen2.5-VL-7B-Instruct`; --screen_only needs only its config and processor: "
        '`hf download Qwen/Qwen2.5-VL-7B-Instruct --exclude "*.safetensors" --exclude "*.bin"`'
    )
    assert "Retrying" not in run.err
    run = needle_run("mmneedle_m1_n2_k1_pos", "hf", None, model_args="pretrained=./no/such/model")
    assert run.code == 2 and "checkpoint ./no/such/model: no such folder, and not a Hub model id" in run.err


@pytest.mark.slow  # runs with every flag (~2 s)
def test_lm_eval_and_lmms_eval_flags_run_and_are_recorded_under_lm_eval_keys(needle_run, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = needle_run(
        "mmneedle_m1_n2_k1",
        "random",
        None,
        "-o",
        out,
        "--device",
        "cuda:0",
        "--log_samples",
        "--log_samples_suffix",
        "model_outputs",
        "--num_fewshot",
        "0",
        "--trust_remote_code",
        "--use_cache",
        tmp_path / "cache",
        "--bootstrap_iters",
        "1000",
        "--seed",
        "3,1234,1234,1234",
        "--system_instruction",
        "Be brief.",
    )
    assert run.code == 0, run.err
    assert "--device cuda:0: the random backend places itself; the flag changes nothing" in run.err
    assert "--trust_remote_code: the random backend runs no checkpoint code" in run.err
    model_dir = out / "random"
    assert sorted(p.name.rsplit("_", 1)[0] for p in model_dir.glob("samples_*.jsonl")) == [
        "samples_mmneedle_m1_n2_k1_neg_model_outputs",
        "samples_mmneedle_m1_n2_k1_pos_model_outputs",
    ]
    results = only_results(model_dir)
    assert results["end_time"] >= results["start_time"] == results["date"]
    assert results["model_source"] == "random" and results["fewshot_as_multiturn"] is False
    assert results["system_instruction"] == "Be brief."
    assert len(results["system_instruction_sha"]) == 64
    config = results["config"]
    assert (config["random_seed"], config["numpy_seed"], config["torch_seed"], config["fewshot_seed"]) == (
        3,
        1234,
        1234,
        1234,
    )
    assert config["seed"] == 3 and config["bootstrap_iters"] == 1000 and config["device"] == "cuda:0"
    assert config["use_cache"] == str(tmp_path / "cache")
    # The random baseline's answers follow the first seed: another first seed, other answers.
    other = needle_run("mmneedle_m1_n2_k1_pos", "random", None, "--seed", "4")
    again = needle_run("mmneedle_m1_n2_k1_pos", "random", None, "--seed", "3")
    assert other.out != again.out


def test_the_hf_backend_gets_device_and_trust_remote_code_from_the_flags() -> None:
    from harness.run.arguments import parse_options
    from harness.run.lm_eval_flags import apply_compat_flags

    args = parse_options(["--tasks", "x", "--device", "cuda:1", "--trust_remote_code"])
    assert apply_compat_flags(args, "hf", {"pretrained": "m"}) == {
        "pretrained": "m",
        "device": "cuda:1",
        "trust_remote_code": "true",
    }
    given = apply_compat_flags(args, "hf", {"pretrained": "m", "device": "cpu"})
    assert given["device"] == "cpu"  # --model_args wins, as in lm-eval


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--num_fewshot", "5"], "--num_fewshot 5: the tasks here are zero-shot"),
        (["--seed", "1,2,3,4,5"], "--seed: expected one seed or lm-eval's four"),
        (
            ["--hf_hub_log_args", "hub_results_org=acme,push_samples_to_hub=True"],
            "push_samples_to_hub=True pushes the sample logs, which only --log_samples writes: add --log_samples",
        ),
    ],
)
def test_flags_that_cannot_mean_anything_here_are_refused_in_one_line(
    needle_run, tmp_path: Path, argv: list[str], expected: str
) -> None:
    run = needle_run("mmneedle_m1_n2_k1_pos", "random", tmp_path, *argv)
    assert run.code == 2 and expected in run.err
    assert len(run.err.strip().splitlines()) == 1


@pytest.mark.slow  # the CLI in fresh processes (~2 s)
def test_ls_takes_a_section_and_a_filter_and_a_mistyped_command_is_answered(harness) -> None:
    run = harness("ls", "mmlongbench_niah_vh")
    assert run.code == 0
    names = [line.split()[0] for line in run.out.splitlines() if line.startswith("  ")]
    assert names and all("mmlongbench_niah_vh" in name for name in names)
    assert "mmlongbench_niah_vh_single_8k" in names
    tasks = harness("ls", "tasks", "milebench_*_adv")
    listed = [line.split()[0] for line in tasks.out.splitlines() if line.startswith("  ")]
    assert tasks.out.startswith("Tasks (29):") and len(listed) == 29 and "Groups" not in tasks.out
    assert harness("ls", "groups").out.startswith("Groups (")
    assert harness("ls", "tags", "mmneedle").out.splitlines()[0] == "Tags (2):"
    wrong = harness("lss")
    assert wrong.code == 2 and wrong.err.strip() == (
        "harness: error: unknown command 'lss'; did you mean ls? (a run is `harness --tasks ... --model ...`)"
    )
    assert "did you mean report?" in harness("reprot").err


def test_a_resumed_run_says_so_in_one_line(needle_run, tmp_path: Path) -> None:
    assert needle_run("mmneedle_m1_n2_k1,mmneedle_m10_n1_k2", "random", tmp_path).code == 0
    again = needle_run("mmneedle_m1_n2_k1,mmneedle_m10_n1_k2", "random", tmp_path)
    resumed = [line for line in again.err.splitlines() if "samples resumed" in line]
    assert resumed == ["harness: 48 samples resumed from the journal, 0 generated now (4 of 4 tasks)"]


def _run_logged_to_wandb(needle_run, tmp_path: Path, monkeypatch, mode: str, wandb_args: str = ""):
    """One MMNeedle task with `random`, results in tmp_path/out, logged to W&B in `mode` under tmp_path."""
    wandb = pytest.importorskip("wandb")
    wandb.teardown()  # wandb keeps the settings of its first use in a process (another test's mode)
    monkeypatch.setenv("WANDB_MODE", mode)
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    project = ",".join(filter(None, ["project=mmlongeval-test", wandb_args]))
    return needle_run("mmneedle_m1_n2_k1_pos", "random", tmp_path / "out", "--wandb_args", project)


@pytest.mark.slow  # a run logged through wandb offline (~4 s)
def test_wandb_args_log_the_results_offline_as_lm_evals_logger_and_no_secret(
    needle_run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-wandb-test-SECRET-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    run = _run_logged_to_wandb(needle_run, tmp_path, monkeypatch, "offline", "name=run1,job_type=eval")
    assert run.code == 0, run.err
    (table,) = (tmp_path / "wandb").glob("offline-run-*/files/media/table/evaluation/eval_results_*.table.json")
    logged = json.loads(table.read_text())
    assert logged["columns"] == ["Task", "Version", "Filter", "n-shot", "Metric", "Value", "Stderr"]
    written = only_results(tmp_path / "out" / "random")["results"]["mmneedle_m1_n2_k1_pos"]
    rows = {(row[0], row[4]): (row[5], row[6]) for row in logged["data"]}
    assert rows[("mmneedle_m1_n2_k1_pos", "exact_acc")] == (written["exact_acc,none"], written["exact_acc_stderr,none"])
    assert len(rows) == sum(
        1 for key, value in written.items() if "," in key and "_stderr," not in key and isinstance(value, int | float)
    )
    for file in (tmp_path / "wandb").rglob("*"):
        if file.is_file():
            assert secret.encode() not in file.read_bytes(), file


@pytest.mark.slow  # wandb's service starts, then refuses (no key) or times out (its server out of reach, ~5 s)
@pytest.mark.parametrize("cause", ["no key", "server out of reach"])
def test_wandb_refusing_the_results_is_one_line_and_the_results_stay_saved(
    cause: str, needle_run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "wandb-test-SECRET-" + "0" * 22  # 40 characters, a key's shape
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc holding a real key
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb-config"))
    if cause == "no key":
        monkeypatch.delenv("WANDB_API_KEY", raising=False)
    else:
        monkeypatch.setenv("WANDB_API_KEY", key)
        monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")  # the discard port: nothing answers
        monkeypatch.setenv("WANDB_INIT_TIMEOUT", "3")
    run = _run_logged_to_wandb(needle_run, tmp_path, monkeypatch, "online")
    (saved,) = (tmp_path / "out" / "random").glob("results_*.json")
    assert run.code == 1, run.err
    assert "Traceback" not in run.err and key not in run.err + run.out
    (error,) = [line for line in run.err.splitlines() if line.startswith("harness: error:")]
    assert error.startswith("harness: error: results not logged to Weights & Biases: ")
    assert f"they are saved in {saved}" in error and "mode=offline" in error
    assert ("No API key configured" in error) == (cause == "no key")
    assert "exact_acc,none" in json.loads(saved.read_text())["results"]["mmneedle_m1_n2_k1_pos"]


def test_wandb_args_without_wandb_name_the_extra(needle_run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)
    run = needle_run("mmneedle_m1_n2_k1_pos", "random", None, "--wandb_args", "project=x")
    assert run.code == 2 and "pip install -e '.[wandb]'" in run.err


def test_simple_evaluate_has_named_typed_parameters_and_is_quiet_on_stdout(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    import inspect

    from harness import simple_evaluate

    parameters = inspect.signature(simple_evaluate).parameters
    for name in (
        "tasks",
        "model",
        "model_args",
        "data_dir",
        "output_path",
        "limit",
        "batch_size",
        "device",
        "seed",
        "gen_kwargs",
        "log_samples",
        "num_fewshot",
        "verbose",
    ):
        assert (
            parameters[name].kind is inspect.Parameter.KEYWORD_ONLY
            and parameters[name].annotation != inspect.Parameter.empty
        ), name
        assert f"{name}:" in simple_evaluate.__doc__ or name in ("tasks", "model"), name
    assert "Args:" in simple_evaluate.__doc__ and "Raises:" in simple_evaluate.__doc__
    capsys.readouterr()
    results = simple_evaluate(
        tasks=["mmneedle_m1_n2_k1_pos"],
        model="random",
        data_dir=data_dir,
        limit=2,
        seed=[5, 1234, 1234, 1234],
        no_progress=True,
    )
    assert capsys.readouterr().out == ""
    assert results["config"]["random_seed"] == 5 and results["config"]["numpy_seed"] == 1234
    simple_evaluate(
        tasks="mmneedle_m1_n2_k1_pos", model="random", data_dir=data_dir, limit=2, no_progress=True, verbose=True
    )
    assert "exact_acc" in capsys.readouterr().out


@pytest.mark.slow  # two fresh Python processes importing the builders (~4 s)
def test_python_m_builders_is_the_builders_command(tmp_path: Path) -> None:
    import os
    import subprocess

    root = PROJECT
    env = {**os.environ, "PYTHONPATH": str(root)}
    options = {"capture_output": True, "text": True, "env": env, "cwd": tmp_path, "timeout": 120}
    listed = subprocess.run([sys.executable, "-m", "builders", "list"], **options)
    assert listed.returncode == 0 and listed.stdout.startswith("locovqa: 48 configs")
    head = subprocess.run(f"{sys.executable} -m builders list | head -n 1", shell=True, **options)
    assert head.stdout.startswith("locovqa:") and head.stderr == ""  # the reader leaving is not an error
