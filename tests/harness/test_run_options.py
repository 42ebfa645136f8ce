"""Each run option is declared once (`harness.run.arguments.EvaluationOptions`, issue 43 item 2): the `harness`
flag, the field the run's plan reads and the keyword of `simple_evaluate` all come from that declaration, a value
means the same given either way, and a bad value is the same one-line error either way."""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness import simple_evaluate
from harness.errors import UserError
from harness.run.arguments import EvaluationOptions, parse_options, run_parser
from harness.run.cli import main
from harness.run.declared_options import FLAG, Flag, declared
from harness.run.plan import RunPlan

OPTIONS = declared(EvaluationOptions)
BASE = ["--tasks", "mmneedle_m1_n2_k1_pos", "--model", "random"]


def flag_of(name: str) -> Flag:
    return next(item.metadata[FLAG] for item in OPTIONS if item.name == name)


def test_every_declared_option_is_a_flag_a_plan_field_and_a_keyword() -> None:
    actions = {action.dest: action for action in run_parser()._actions}
    keywords = inspect.signature(simple_evaluate).parameters
    assert len(OPTIONS) == 48
    for item in OPTIONS:
        flag: Flag = item.metadata[FLAG]
        action = actions[item.name]
        assert action.option_strings == flag.names(f"--{item.name}") and action.help == flag.help, item.name
        assert action.choices == flag.choices and action.metavar == flag.metavar, item.name
        assert keywords[item.name].kind is inspect.Parameter.KEYWORD_ONLY, item.name
        assert keywords[item.name].annotation == (flag.accepts or item.type), item.name
        assert f"{item.name}:" in (simple_evaluate.__doc__ or ""), item.name
    # `harness --help` lists the declared flags, and only those (with -h, -V and --config, the file of the others)
    assert set(actions) == {item.name for item in OPTIONS} | {"help", "version", "config"}
    # The plan keeps the options whole and repeats none of them: its `model` and `tasks` are what those options
    # resolve to (a backend with its arguments, the loaded tasks), not the names given.
    plan_fields = {item.name: item.type for item in dataclasses.fields(RunPlan)}
    assert plan_fields["options"] == "EvaluationOptions"
    assert plan_fields.keys() & {item.name for item in OPTIONS} == {"model", "tasks"}
    assert (plan_fields["model"], plan_fields["tasks"]) == ("ModelChoice", "list[Task]")


def test_a_value_given_on_the_command_line_or_as_a_keyword_is_the_same_option(tmp_path: Path) -> None:
    from harness.running.sharding import Shard

    argv = [
        *("--tasks", "a,b", "--model", "constant", "--model_args", 'answer="1, 2",x=3'),
        *("--data_dir", str(tmp_path), "--include_path", "t1", "--include_path", "t2", "--limit", "2"),
        *("--batch_size", "auto", "--max_batch_tokens", "900", "--shard", "1/3", "--ray", "--seed", "5,None"),
        *("--gen_kwargs", "max_gen_toks=64,temperature=0", "--metadata", '{"subset": "full"}', "-o", str(tmp_path)),
        *("--log_samples", "-v", "info", "--hf_hub_log_args", "hub_results_org=acme", "--wandb_args", "project=p"),
        *("--max_batch_size", "8", "--apply_chat_template", "--num_fewshot", "0", "--use_cache", str(tmp_path)),
    ]
    keywords: dict[str, Any] = {
        "tasks": ["a", "b"],
        "model": "constant",
        "model_args": {"answer": "1, 2", "x": 3},
        "data_dir": tmp_path,
        "include_path": ["t1", Path("t2")],
        "limit": 2,
        "batch_size": "auto",
        "max_batch_tokens": 900,
        "shard": "1/3",
        "ray": True,
        "seed": [5, None],
        "gen_kwargs": {"max_gen_toks": 64, "temperature": 0},
        "metadata": {"subset": "full"},
        "output_path": str(tmp_path),
        "log_samples": True,
        "verbosity": "info",
        "hf_hub_log_args": "hub_results_org=acme",
        "wandb_args": {"project": "p"},
        "max_batch_size": 8,
        "apply_chat_template": True,
        "num_fewshot": 0,
        "use_cache": tmp_path,
    }
    given = parse_options(argv)
    assert given == EvaluationOptions.from_keywords(keywords)
    assert (given.model_args, given.limit, given.shard, given.ray) == (
        {"answer": "1, 2", "x": "3"},
        2.0,
        Shard(1, 3),
        "local",
    )
    assert given.seed == (5, None, 5, 5) and given.sampling_seed == 5 and given.verbosity == "INFO"
    assert given.include_path == (Path("t1"), Path("t2")) and given.gen_kwargs == {"max_gen_toks": 64, "temperature": 0}
    assert dataclasses.replace(given) == given  # a value read once reads the same again
    defaults = parse_options(["--tasks", "a"])
    assert defaults == EvaluationOptions(tasks="a") and defaults.seeds == (0, 0, 0, 0) and defaults.max_batch_size == 64


# (flag, text, its keyword's other value or None, the one-line error): every option that can be given wrong.
BAD = [
    ("--tasks", ",", [" "], "--tasks is empty"),
    ("--model_args", "answer", None, "--model_args: expected key=value, but field 1 of 1 has no ="),
    ("--limit", "0", 0, "argument --limit: 0 documents would evaluate nothing; give N >= 1 or a fraction in (0, 1)"),
    ("--limit", "2.5", None, "argument --limit: expected an integer >= 1 or a fraction in (0, 1), got '2.5'"),
    ("--batch_size", "big", None, "argument --batch_size: expected an integer >= 1 or auto, got 'big'"),
    ("--max_batch_tokens", "0", 0, "--max_batch_tokens must be at least 1"),
    ("--max_batch_tokens", "many", None, "argument --max_batch_tokens: invalid int value: 'many'"),
    ("--shard", "4/4", None, "--shard 4/4: the index must be in 0..3 (shards are 0-based: the last of 4 is 3/4)"),
    ("--seed", "1,2,3,4,5", [1, 2, 3, 4, 5], "--seed: expected one seed or lm-eval's four"),
    ("--seed", "None", None, "--seed: the first seed (sampling and the random baseline) cannot be None"),
    ("--gen_kwargs", "max_gen_toks", None, "--gen_kwargs: expected key=value"),
    ("--metadata", "[1]", None, "--metadata: expected a JSON object, got list"),
    ("--metadata", "{", None, "--metadata: not valid JSON"),
    ("--judge_args", 'model="j', None, '--judge_args: unbalanced "'),
    ("--max_batch_size", "0", 0, "argument --max_batch_size: expected an integer >= 1, got '0'"),
    ("--apply_chat_template", "chatml", None, "--apply_chat_template chatml: every backend renders"),
    ("--verbosity", "loud", None, "argument -v/--verbosity: invalid choice: 'LOUD' (choose from 'DEBUG', 'INFO',"),
    ("--hf_hub_log_args", "acme", None, "--hf_hub_log_args: expected key=value"),
    ("--log_samples_suffix", "a b", None, "--log_samples_suffix 'a b': letters, digits, - and _ only"),
    ("--num_fewshot", "5", 5, "--num_fewshot 5: the tasks here are zero-shot"),
    ("--bootstrap_iters", "-1", -1, "--bootstrap_iters must be 0 or more, got -1"),
    ("--wandb_args", "project", None, "--wandb_args: expected key=value"),
    ("--wandb_config_args", "a=1,a=2", None, "--wandb_config_args: 'a' is given twice"),
    ("--seed", "-1", -1, "--seed: each seed must be an integer from 0 to 4294967295 (or None), got '-1'"),
    ("--cache_requests", "maybe", None, "argument --cache_requests: invalid choice: 'maybe'"),
    ("--samples", '{"t": [1]}', None, "--samples: documents chosen by index are not supported here"),
    ("--reasoning_tags", "[]", [], "--reasoning_tags: expected a non-empty list of [start, end] pairs"),
    ("--reasoning_tags", '[["<think>"]]', [["<think>"]], '--reasoning_tags: ["<think>"] is not a [start, end] pair'),
    ("--max_cost", "0", 0, "argument --max_cost: expected a number of US dollars above 0, got '0'"),
    ("--max_cost", "cheap", None, "argument --max_cost: expected a number of US dollars, got 'cheap'"),
]
# Options whose every value is good: text kept as given, or a path.
ANY_VALUE = {"model", "data_dir", "include_path", "ray", "output_path", "cache_dir", "judge_model"}
ANY_VALUE |= {"system_instruction", "device", "use_cache", "prices"}


def cli_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line of `harness ARGV` (exit code 2 either way: argparse's usage error or the harness's)."""
    try:
        code = main(argv)
    except SystemExit as exit:
        code = exit.code
    assert code == 2
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("harness: error: ")]
    return line.removeprefix("harness: error: ")


def python_error(**keywords: Any) -> str:
    with pytest.raises(UserError) as raised:
        simple_evaluate(**keywords)
    return str(raised.value)


@pytest.mark.parametrize(("flag", "text", "value", "message"), BAD)
def test_a_bad_value_is_the_same_one_line_error_given_either_way(
    flag: str, text: str, value: Any, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name = flag.removeprefix("--")
    keywords = {"tasks": "mmneedle_m1_n2_k1_pos", "model": "random"}
    shown = cli_error([*BASE, flag, text] if name != "tasks" else ["--model", "random", flag, text], capsys)
    assert shown.startswith(message), shown
    assert python_error(**{**keywords, name: text}) == shown
    if value is not None:  # the keyword's own type (a number, a list) is read as the text is
        assert python_error(**{**keywords, name: value}).startswith(message)
    with pytest.raises(UserError) as made:  # and so is a value the options are made with directly
        EvaluationOptions.from_keywords({**keywords, name: value if value is not None else text})
    assert str(made.value).startswith(message)


def test_every_option_that_can_be_given_wrong_is_checked_both_ways() -> None:
    checked = {flag.removeprefix("--") for flag, *_ in BAD}
    for item in OPTIONS:
        flag: Flag = item.metadata[FLAG]
        if flag.switch or item.name in ANY_VALUE:
            assert flag.check is None and flag.choices is None and flag.parse in (None, str, Path, os.fspath), item.name
        else:
            assert item.name in checked, f"{item.name}: no bad value in BAD"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--predict_only"], "--predict_only needs --output_path (the folder the answers are journalled in)"),
        (["--log_samples"], "--log_samples needs --output_path (the folder the sample logs go to)"),
        (["--batch"], "--batch needs --output_path (the folder its batch ids are journalled in)"),
        (["--use_cache", "a", "--cache_dir", "b"], "--use_cache a and --cache_dir b name two caches: give one"),
    ],
)
def test_options_that_need_each_other_are_checked_both_ways(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_error([*BASE, *argv], capsys) == message
    keywords: dict[str, Any] = {}
    for flag, value in zip(argv, [*argv[1:], None], strict=True):
        if flag.startswith("--"):
            keywords[flag.removeprefix("--")] = True if value is None or value.startswith("--") else value
    said = python_error(tasks="mmneedle_m1_n2_k1_pos", model="random", **keywords)
    if argv[0] in ("--predict_only", "--log_samples"):  # the Python API logs them in a folder of its own (lm-eval's)
        assert "needs --output_path" not in said
    else:
        assert said == message


def test_an_unknown_or_missing_keyword_is_one_line() -> None:
    assert python_error(tasks="t", model="random", limt=2) == "unknown keyword 'limt'; did you mean: limit?"
    assert python_error(model="random") == "tasks= is required"
    assert python_error(tasks="t") == "model= is required"
    assert (
        python_error(tasks="t", model="random", log_samples="yes") == "log_samples: expected True or False, got 'yes'"
    )


@pytest.mark.slow  # a harness run
def test_a_keyword_is_used_as_given_never_spelled_and_parsed_again(data_dir: Path, tmp_path: Path) -> None:
    # A value holding a quote and a comma has no `k=v` spelling that reads back the same: a keyword's value reaches
    # the model as it is.
    answer = 'a"b, c'
    results = simple_evaluate(
        tasks="mmneedle_m1_n2_k1_pos",
        model="constant",
        model_args={"answer": answer},
        data_dir=data_dir,
        limit=1,
        output_path=tmp_path,
        log_samples=True,
        no_progress=True,
    )
    (log,) = tmp_path.glob("*/samples_*.jsonl")
    assert json.loads(log.read_text().splitlines()[0])["resps"] == [[answer]]
    assert results["config"]["argv"][:5] == ["harness", "--tasks", "mmneedle_m1_n2_k1_pos", "--model", "constant"]
