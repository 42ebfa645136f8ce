"""`harness --config FILE` (issue 60 item 5): a run's flags from a YAML file, each key a flag of the run's parser read
by that flag's own declaration, the command line's flags replacing the file's values, every mistake one line naming
the file and the key (exit 2), and the file recorded in the results with its secrets redacted. The documented example
(docs/evaluating.md's "A run file", docs/run.yaml) runs here as printed, on the offline build its block makes."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.config.yaml_loader import YAML_MOST
from harness.errors import UserError
from harness.run.arguments import EvaluationOptions, parse_options, run_parser
from harness.run.cli import main
from harness.run.run_file import read_run_file
from tests.harness.test_lm_eval_flags_on_every_benchmark import code_blocks
from tests.harness.test_run_options import BAD
from tests.support.chat_server import ChatServer
from tests.support.deadline import within
from tests.support.paths import PROJECT

EXAMPLE = PROJECT / "docs" / "run.yaml"
TASK = "mmneedle_m1_n2_k1_pos"


def write(folder: Path, text: str, name: str = "run.yaml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def cli_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line `harness ARGV` prints, its exit code 2."""
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    return line.removeprefix("harness: error: ")


def documented_commands() -> list[list[str]]:
    """The command lines of docs/evaluating.md's "A run file" block, as printed."""
    text = (PROJECT / "docs" / "evaluating.md").read_text(encoding="utf-8")
    section = text.split("## A run file (`--config`)", 1)[1].split("\n## ", 1)[0]
    (block,) = [block for language, block in code_blocks(section) if language == "sh"]
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]


@pytest.mark.slow  # a build and two harness runs
def test_the_documented_run_file_runs_as_printed_and_the_results_record_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from builders.cli import main as builders_main

    (tmp_path / "docs").mkdir()
    shutil.copyfile(EXAMPLE, tmp_path / "docs" / "run.yaml")  # the repository's root, as the page runs it from
    monkeypatch.chdir(tmp_path)
    commands = documented_commands()
    assert [argv[:2] for argv in commands] == [["builders", "build"], ["harness", "--config"], ["harness", "--config"]]
    for argv in commands:
        code = (builders_main if argv[0] == "builders" else main)(argv[1:])
        assert code == 0, capsys.readouterr().err
    given = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    override = commands[2][3:]  # what the second run gives on the command line
    for output, limit in ((given["output_path"], given["limit"]), (override[3], int(override[1]))):
        (results_path,) = (tmp_path / output / given["model"]).glob("results_*.json")
        results = json.loads(results_path.read_text())
        config = results["config"]
        # The file as read, whole, with its path; the command line as given.
        assert config["run_file"] == {"path": str(tmp_path / "docs" / "run.yaml"), "contents": given}
        assert config["argv"] == ["harness", *commands[1 if output == given["output_path"] else 2][1:]]
        # The run is the one the file (and the command line over it) asks for.
        tasks = {f"{name}_{kind}" for name in given["tasks"] for kind in ("pos", "neg")}
        assert set(results["results"]) == tasks
        assert {task: counts["effective"] for task, counts in results["n-samples"].items()} == dict.fromkeys(
            tasks, limit
        )
        assert config["model_args"] == {key: str(value) for key, value in given["model_args"].items()}
        assert config["gen_kwargs"] == given["gen_kwargs"] and config["log_samples"] is True
        assert len(list((tmp_path / output / given["model"]).glob("samples_*.jsonl"))) == len(tasks)


def test_every_flag_of_the_parser_is_a_key_and_nothing_else_is(tmp_path: Path) -> None:
    keys = [action.dest for action in run_parser()._actions if action.dest not in ("help", "version", "config")]
    every = write(tmp_path, "".join(f"{key}: null\n" for key in keys))
    assert read_run_file(every, EvaluationOptions).values == {}  # null: the flag not given
    for key in ("config", "help", "modle", "task", "model-args"):
        with pytest.raises(UserError) as raised:
            read_run_file(write(tmp_path, f"tasks: {TASK}\n{key}: x\n"), EvaluationOptions)
        assert str(raised.value).startswith(f"{tmp_path / 'run.yaml'}:2: unknown key {key!r}"), raised.value
    with pytest.raises(UserError) as raised:
        read_run_file(write(tmp_path, "modle: random\n"), EvaluationOptions)
    assert (
        str(raised.value)
        == f"{tmp_path / 'run.yaml'}:1: unknown key 'modle'; did you mean: model? (see harness --help)"
    )


@pytest.mark.parametrize(("flag", "text", "value", "message"), BAD)
def test_a_bad_value_in_the_file_is_its_flags_one_line_naming_the_file_and_the_key(
    tmp_path: Path, flag: str, text: str, value: Any, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    key = flag.removeprefix("--")
    others = "" if key == "tasks" else f"tasks: {TASK}\n"
    path = write(tmp_path, f"model: random\n{others}{key}: {json.dumps(text)}\n")
    reason = re.sub(r"^(argument \S+: |--\w+: )", "", message)
    assert cli_error(["--config", str(path)], capsys).startswith(f"{path}:{3 if others else 2}: {key}: {reason}")


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("model: [random, constant]", "model: expected a single value, got a list"),
        ("limit: {n: 2}", "limit: expected a single value, got a mapping"),
        ("max_batch_tokens: true", "max_batch_tokens: expected a value, got true"),
        ("model_args: {seed: [1, 2]}", "model_args: seed: expected text, a number or true/false, got a list"),
        ("log_samples: sometimes", "log_samples: expected True or False, got 'sometimes'"),
        ("data_dir: 2024-01-01", "data_dir: expected text or a number, got a date"),
        ("gen_kwargs: 64", "gen_kwargs: expected key=value, but field 1 of 1 has no ="),
        # lmms-eval's env section (issue 74)
        ("env: [A]", "env: expected a mapping of environment variables (NAME: value), got a list"),
        ("env: {1A: x}", "env: '1A' is not an environment variable's name"),
        ("env: {A: [x]}", "env: A: expected text or a number, got a list"),
    ],
)
def test_a_value_of_the_wrong_type_is_one_line_naming_the_file_and_the_key(
    tmp_path: Path, line: str, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, f"tasks: {TASK}\n{line}\n")
    assert cli_error(["--config", str(path)], capsys).startswith(f"{path}:2: {problem}")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("tasks: [a\n", ":2:1: malformed YAML: while parsing a flow sequence"),
        ("- model: random\n- modle: constant\n", ":2: unknown key 'modle'; did you mean: model?"),  # before any run
        (
            "- model: random\n- 3\n",
            " (run 2 of 2): expected a mapping of the run's flags (tasks: ..., model: ...), got",
        ),
        ("[]\n", ": an empty list: expected the runs' flags (- tasks: ..., model: ...)"),
        ("random\n", ": expected a mapping of the run's flags (tasks: ..., model: ...), got a str"),
        ("# nothing yet\n", ": expected a mapping of the run's flags (tasks: ..., model: ...), got nothing"),
        ("model: random\n", ": the following arguments are required: --tasks (on the command line or in {path})"),
        (f"tasks: {TASK}\n", ": the following arguments are required: --model (on the command line or in {path})"),
        (b"tasks: \xff\n", ":1: not UTF-8 text (byte 0xff at offset 7); a run file must be saved as UTF-8"),
        # Issue 77, item 5: what the user wrote, not PyYAML's tag nor our class
        ("tasks: x\n<<: {model: random}\n", ":2:1: YAML merge keys (`<<:`) are not supported in a run file: write"),
        (f"tasks: {TASK}\nmodel: !function os.system\n", ":2: model: expected text or a number, got `!function os.sy"),
    ],
)
def test_a_file_that_is_no_run_is_one_line_naming_it(
    tmp_path: Path, text: str | bytes, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    shown = cli_error(["--config", str(path)], capsys)
    if problem.startswith(": the following"):
        assert shown == problem[2:].format(path=path)
    else:
        assert shown.startswith(f"{path}{problem}"), shown
    assert cli_error(["--config", str(tmp_path / "absent.yaml")], capsys) == (
        f"{tmp_path / 'absent.yaml'}: cannot read: No such file or directory"
    )


def test_a_run_file_that_is_no_regular_file_or_past_its_bound_is_one_line_before_a_byte_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 77, item 3: `--config FIFO` hung and `--config /dev/zero` read until memory ran out."""
    fifo = tmp_path / "run.yaml"
    os.mkfifo(fifo)  # nothing writes it: a blocking open would wait forever
    with within(10, "--config FIFO"):
        assert cli_error(["--config", str(fifo)], capsys) == f"{fifo}: cannot read: a FIFO, not a regular file"
    assert cli_error(["--config", "/dev/zero"], capsys) == (
        "/dev/zero: cannot read: a character device, not a regular file"
    )
    large = tmp_path / "large.yaml"
    with large.open("wb") as out:  # sparse: its size, not its bytes
        out.truncate(YAML_MOST + 1)
    assert cli_error(["--config", str(large)], capsys) == (
        f"{large}: cannot read: {YAML_MOST + 1:,} bytes, over the 4 MiB that a run file can hold; not read"
    )


def test_each_value_is_read_as_its_flag_reads_it_in_any_of_its_forms(tmp_path: Path) -> None:
    by_flags = parse_options(
        [
            *("--tasks", "a,b", "--model", "constant", "--model_args", 'answer="1, 2",x=3', "--device", "0"),
            *("--gen_kwargs", "max_gen_toks=64,temperature=0", "--seed", "5,None", "--ray", "--log_samples"),
            *("--include_path", "t1", "--include_path", "t2", "--limit", "2", "-o", "out"),
            *("--metadata", '{"subset": "full"}', "--reasoning_tags", '[["<think>", "</think>"]]'),
        ]
    )
    as_yaml = write(
        tmp_path,
        """
tasks: [a, b]
model: constant
model_args: {answer: "1, 2", x: 3}
device: 0
gen_kwargs: {max_gen_toks: 64, temperature: 0}
seed: [5, null]
ray: true
log_samples: true
include_path: [t1, t2]
limit: 2
output_path: out
metadata: {subset: full}
reasoning_tags: [["<think>", "</think>"]]
""",
    )
    as_text = write(
        tmp_path,
        """
tasks: a,b
model: constant
model_args: 'answer="1, 2",x=3'
device: "0"
gen_kwargs: max_gen_toks=64,temperature=0
seed: 5,None
ray: local
log_samples: true
include_path: [t1, t2]
limit: "2"
output_path: out
metadata: '{"subset": "full"}'
reasoning_tags: '[["<think>", "</think>"]]'
""",
        "as_text.yaml",
    )
    assert parse_options(["--config", str(as_yaml)]) == by_flags
    assert parse_options(["--config", str(as_text)]) == by_flags


def test_a_flag_on_the_command_line_replaces_the_files_value_whole(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"tasks: {TASK}\nmodel: random\nmodel_args: {{seed: 7, context_length: 900}}\nlimit: 3\n"
        "include_path: [a, b]\nlog_samples: true\noutput_path: out\n",
    )
    options = parse_options(
        ["--config", str(path), "--model_args", "seed=1", "--limit", "1", "--include_path", "c", "--model", "constant"]
    )
    assert (options.model, options.model_args, options.limit) == ("constant", {"seed": "1"}, 1.0)
    assert options.include_path == (Path("c"),) and options.log_samples and options.output_path == Path("out")
    assert options.tasks == TASK


KEY = "sk-runfile-0123456789abcdef"


@pytest.mark.slow  # a harness run against the loopback server
@pytest.mark.parametrize("form", ["mapping", "text"])
def test_a_key_in_the_file_is_redacted_in_the_record_and_written_nowhere(
    tmp_path: Path, data_dir: Path, form: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = ChatServer(answer=lambda body: "-1", faults=["echo_key_answer"])  # an answer quoting the key it was sent
    server.start()
    try:
        args = {"model": "test-vlm", "base_url": server.base_url, "api_key": KEY, "max_retries": 0}
        model_args = (
            json.dumps(args) if form == "mapping" else json.dumps(",".join(f"{k}={v}" for k, v in args.items()))
        )
        path = write(
            tmp_path,
            f"tasks: {TASK}\nmodel: openai\nmodel_args: {model_args}\nlimit: 2\ndata_dir: {data_dir}\n"
            f"output_path: {tmp_path / 'out'}\nlog_samples: true\nno_cache: true\n",
        )
        assert main(["--config", str(path), "--no_progress"]) == 0
    finally:
        server.stop()
    printed = capsys.readouterr()
    assert {r.headers["authorization"] for r in server.received} == {f"Bearer {KEY}"}
    files = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert any(p.name.startswith("samples_") for p in files)
    for written in [*(p.read_bytes() for p in files), (printed.out + printed.err).encode()]:
        assert KEY.encode() not in written
    (results,) = (tmp_path / "out").rglob("results_*.json")
    recorded = json.loads(results.read_text())["config"]["run_file"]["contents"]["model_args"]
    redacted = {**args, "api_key": "<redacted>"}
    if form == "mapping":
        assert recorded == redacted
    else:
        assert recorded == ",".join(f"{k}={v}" for k, v in redacted.items())


def test_the_record_redacts_every_secret_named_value_whatever_its_length_and_form(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"tasks: {TASK}\nmodel: openai\nmodel_args: {{model: m, api_key: k1}}\n"
        "judge_args: 'model=j,api_key=k2,base_url=http://user:k3@host/v1'\n"
        "wandb_args: {project: p, token: k4}\n",
    )
    contents = read_run_file(path, EvaluationOptions).record["contents"]
    assert contents == {
        "tasks": TASK,
        "model": "openai",
        "model_args": {"model": "m", "api_key": "<redacted>"},
        "judge_args": "model=j,api_key=<redacted>,base_url=http://user:<redacted>@host/v1",
        "wandb_args": {"project": "p", "token": "<redacted>"},
    }


def test_a_message_about_the_file_never_shows_a_key_it_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "sk-quoted-0123456789"
    path = write(tmp_path, f"tasks: {TASK}\nmodel_args: {{api_key: {secret}}}\nlimit: {secret}\n")
    assert cli_error(["--config", str(path)], capsys) == (
        f"{path}:3: limit: expected a number of documents or a fraction, got '<redacted>'"
    )


# lmms-eval's configs/example_api.yaml as published (its v0.7 config files), comments left out
LMMS_EVAL_EXAMPLE = """\
env:
  OPENAI_API_KEY: "${OPENAI_API_KEY}"
  HF_HOME: "${HF_HOME:-~/.cache/huggingface}"

model: openai
model_args: "model=gpt-4o,max_retries=5"
tasks: "mme,mmmu_val"
batch_size: 1
num_fewshot: 0
gen_kwargs: "temperature=0,max_new_tokens=1024"
output_path: "results/"
log_samples: true
"""


@pytest.mark.slow  # a harness run against the loopback server
def test_lmms_evals_example_file_runs_unchanged_its_env_set_for_the_run(
    tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its `env:` section sets the run's variables, `${VAR}` and `${VAR:-default}` expanded from the environment (the
    key reaches the server and is printed and written nowhere); the command line's flags replace the file's values
    (the tasks, which are not this harness's, and the server)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("HF_HOME", raising=False)
    monkeypatch.setenv("HF_HOME", "")  # unset or empty: the default after `:-` (restored after the test)
    path = write(tmp_path, LMMS_EVAL_EXAMPLE, "example_api.yaml")
    server = ChatServer(answer=lambda body: "-1")
    server.start()
    try:
        args = f"model=gpt-4o,max_retries=5,base_url={server.base_url}"
        argv = ["--config", str(path), "--tasks", TASK, "--model_args", args, "--data_dir", str(data_dir)]
        assert main([*argv, "--limit", "2", "--no_progress"]) == 0
    finally:
        server.stop()
    printed = capsys.readouterr()
    said = f"harness: {path}: env sets OPENAI_API_KEY, HF_HOME for this run (lmms-eval's env section)"
    assert said in printed.err.splitlines()
    assert os.environ["HF_HOME"] == "~/.cache/huggingface"
    assert {r.headers["authorization"] for r in server.received} == {f"Bearer {KEY}"}
    files = [p for p in (tmp_path / "results").rglob("*") if p.is_file()]
    for written in [*(p.read_bytes() for p in files), (printed.out + printed.err).encode()]:
        assert KEY.encode() not in written
    (results,) = (tmp_path / "results").rglob("results_*.json")
    contents = json.loads(results.read_text())["config"]["run_file"]["contents"]
    assert contents["env"] == {"OPENAI_API_KEY": "<redacted>", "HF_HOME": "${HF_HOME:-~/.cache/huggingface}"}


def test_a_list_of_runs_runs_each_in_turn_as_lmms_eval_does(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 89: lmms-eval's batch file (`configs/example_batch.yaml`: a list of runs, each its own output_path) was
    refused in one line where lmms-eval runs them one after another. Each runs with the command line's flags over its
    own; one that fails is said and the next runs; the exit code is the failure's."""
    path = write(
        tmp_path,
        f"- model: random\n  output_path: {tmp_path / 'a'}\n"
        f"- model: constant\n  model_args: answer=red\n  output_path: {tmp_path / 'b'}\n"
        f"- model: constant\n  model_args: answr=red\n  output_path: {tmp_path / 'c'}\n",
    )
    common = ["--tasks", "toy_colors", "--include_path", str(toy_tasks), "--data_dir", str(toy_dir), "--no_progress"]
    assert main(["--config", str(path), *common]) == 2
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith(f"harness: {path}: run ")] == [
        *(f"harness: {path}: run {i} of 3" for i in (1, 2, 3)),
        f"harness: {path}: run 3 of 3 failed",
    ]
    for folder, model in (("a", "random"), ("b", "constant")):
        (results,) = (tmp_path / folder).rglob("results_*.json")
        recorded = json.loads(results.read_text())["config"]
        assert recorded["model"] == model and recorded["run_file"]["path"] == str(path)
    assert not (tmp_path / "c").exists()
