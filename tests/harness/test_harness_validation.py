"""Every setting is checked before a sample runs, with a one-line message; a run that scored nothing, or
left failed samples behind, does not exit 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run_setups import needle_task_yaml, run_args

TASK = "mmneedle_m1_n2_k1_neg"


def _minus_one(data_dir: Path) -> list[str]:
    """The arguments of a run of TASK on `data_dir` by the constant model answering -1."""
    return list(run_args(TASK, "constant", model_args="answer=-1", data_dir=data_dir))


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--gen_kwargs", "max_gen_toks=abc", "--gen_kwargs max_gen_toks='abc': expected a positive integer"),
        ("--gen_kwargs", "max_gen_toks=0", "--gen_kwargs max_gen_toks=0: expected a positive integer"),
        ("--gen_kwargs", "max_gen_toks=-5", "--gen_kwargs max_gen_toks=-5: expected a positive integer"),
        ("--gen_kwargs", "top_p=7", "--gen_kwargs top_p=7: expected a number in (0, 1]"),
        ("--gen_kwargs", "temperature=hot", "--gen_kwargs temperature='hot': expected a number >= 0"),
        ("--gen_kwargs", "temperature=nan", "--gen_kwargs temperature=nan: expected a number >= 0"),
        ("--gen_kwargs", "do_sample=maybe", "--gen_kwargs do_sample='maybe': expected true or false"),
    ],
)
def test_bad_settings_stop_the_run_with_one_line(flag: str, value: str, message: str, data_dir: Path, harness) -> None:
    run = harness(*_minus_one(data_dir), flag, value)
    assert run.code == 2 and "Traceback" not in run.err
    (line,) = [line for line in run.err.splitlines() if "error:" in line]
    assert line.endswith(message), line


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "2.5"])
def test_bad_limits_are_usage_errors(value: str, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.run.cli import main

    argv = _minus_one(data_dir)
    assert main([*argv, "--limit", value]) == 2  # argparse's mistake, as for any malformed flag: one line
    assert capsys.readouterr().err.splitlines() == [
        f"harness: error: argument --limit: expected an integer >= 1 or a fraction in (0, 1), got {value!r}"
    ]


def test_limit_zero_is_refused_as_it_would_score_nothing(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.run.arguments import run_parser
    from harness.run.cli import main

    argv = _minus_one(data_dir)
    assert main([*argv, "--limit", "0"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "harness: error: argument --limit: 0 documents would evaluate nothing; give N >= 1 or a fraction in (0, 1)"
    ]
    assert "--limit 0 is refused" in " ".join(run_parser().format_help().split())


@pytest.mark.parametrize(
    ("model_args", "message"),
    [
        (
            "model=m,base_url=http://127.0.0.1:9,timeout=nan",
            "openai backend: model argument timeout='nan': expected a finite number",
        ),
        (
            "model=m,base_url=http://127.0.0.1:9,timeout=0",
            "openai backend: timeout must be a positive number of seconds, got 0.0",
        ),
        ("model=m,base_url=http://127.0.0.1:9,concurrency=0", "openai backend: concurrency must be at least 1, got 0"),
        (
            "model=m,base_url=http://127.0.0.1:9,context_length=-1",
            "openai backend: model argument context_length=-1: must be at least 1",
        ),
        (
            "model=m,base_url=http://127.0.0.1:9,max_images=0",
            "openai backend: model argument max_images=0: must be at least 1",
        ),
        (
            "model=m,base_url=http://127.0.0.1:9,max_retries=-2",
            "openai backend: model argument max_retries=-2: must not be negative",
        ),
    ],
)
def test_bad_model_args_stop_the_run_with_one_line(model_args: str, message: str, data_dir: Path, harness) -> None:
    run = harness(*run_args(TASK, "openai", model_args=model_args, data_dir=data_dir))
    assert run.code == 2 and "Traceback" not in run.err
    (line,) = [line for line in run.err.splitlines() if "error:" in line]
    assert line == f"harness: error: model 'openai': {message}"


@pytest.mark.parametrize(
    ("model", "model_args", "message"),
    [
        (
            "hf",
            "pretrained=/nowhere,context_length=-1",
            "model 'hf': hf backend: model argument context_length=-1: must be at least 1",
        ),
        (
            "hf",
            "pretrained=/nowhere,context_length=0",
            "model 'hf': hf backend: model argument context_length=0: must be at least 1",
        ),
        ("random", "seed=-3", "model 'random': random backend: model argument seed=-3: must not be negative"),
        ("random", "seed=1,seed=2", "--model_args: 'seed' is given twice; give each argument once"),
    ],
)
def test_negative_numbers_and_repeated_keys_in_model_args_are_refused(
    model: str, model_args: str, message: str, tmp_path: Path, data_dir: Path, harness
) -> None:
    run = harness(*run_args(TASK, model, model_args=model_args, data_dir=data_dir, out=tmp_path / "out"))
    assert run.code == 2 and "Traceback" not in run.err
    (line,) = [line for line in run.err.splitlines() if "error:" in line]
    assert line == f"harness: error: {message}"
    assert not (tmp_path / "out").exists()  # refused before anything was written (or left behind)
    screen = harness(*run_args(TASK, model, model_args=model_args, data_dir=data_dir), "--screen_only")
    assert screen.code == 2 and "Traceback" not in screen.err, screen.err
    assert screen.err.strip().splitlines()[-1].endswith(message.removeprefix(f"model '{model}': ")), screen.err


def test_a_judge_argument_given_twice_is_refused_naming_its_flag(data_dir: Path, harness) -> None:
    judge = ("--judge_model", "openai", "--judge_args", "model=a,model=b")
    run = harness(*run_args(TASK, "random", data_dir=data_dir), *judge)
    assert run.code == 2
    assert (
        run.err.strip().splitlines()[-1]
        == "harness: error: --judge_args: 'model' is given twice; give each argument once"
    )


def test_failed_samples_make_the_exit_code_unless_allowed(tmp_path: Path, data_dir: Path, harness) -> None:
    (tmp_path / "t.yaml").write_text(needle_task_yaml("no_guess"))
    flags = {"include_path": tmp_path / "t.yaml", "data_dir": data_dir, "out": tmp_path / "out"}
    args = (*run_args(f"no_guess,{TASK}", "random", **flags), "--limit", "3")
    both = harness(*args)  # errors in one task, scores in the other
    assert both.code == 1 and "3 sample(s) failed with errors" in both.err and "--allow_failures" in both.err
    assert both.results("random")["failed_samples"] == {"no_guess": 3}
    allowed = harness(*args, "--allow_failures")
    assert allowed.code == 0, allowed.err


def test_nothing_scored_names_each_status_in_the_order_the_tasks_counted_it(capsys: pytest.CaptureFixture[str]) -> None:
    """A status one task counts 0 of keeps its place when a later task counts it (a `sum` of Counters reordered)."""
    from types import SimpleNamespace

    from harness.run.execute import _exit_code

    tasks = [
        SimpleNamespace(n_effective=2, n_scored=0, counts={"error": 0, "over_length": 2}, judge_counts={}),
        SimpleNamespace(n_effective=3, n_scored=0, counts={"error": 3, "over_length": 0}, judge_counts={}),
    ]
    assert _exit_code(tasks, allow_failures=False) == 1  # type: ignore[arg-type]
    assert "no sample of this run was scored (3 error, 2 over_length)" in capsys.readouterr().err
