"""Fuzz: command-line values (issue 30). Any value of the run's flags ends in a result or in one line, and no key
given on the command line shows in anything printed or written, whatever else is wrong with the command."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.cli import main

from .conftest import bounded, budget, counted

KEY = "sk-fuzz-9f8e7d6c5b4a3210"
WORDS = st.sampled_from(
    [
        "",
        "0",
        "1",
        "-1",
        "0.5",
        "1e400",
        "nan",
        "abc",
        "1/2",
        "2/2",
        "0/0",
        "3/2",
        "auto",
        "{}",
        "[]",
        '{"a": 1}',
        "null",
        "true",
        "a=1",
        "a=",
        "=1",
        ",",
        '"',
        'a="1,2"',
        KEY,
        "\x00",
        "é",
        "http://u:pw@h:99999/v1",
        "http://127.0.0.1:1/v1",
    ]
)
VALUE = st.one_of(WORDS, st.text(max_size=12), st.lists(WORDS, max_size=3).map(",".join))
MODEL_ARGS = st.one_of(
    st.just("answer=red"),
    st.just("answer=red"),
    st.builds(lambda extra: f"answer=red,api_key={KEY}," + extra, VALUE),
    st.builds(lambda extra: f"model=m,api_key={KEY},base_url=http://127.0.0.1:9/v1," + extra, VALUE),
    st.builds(lambda a, b: f"{a},api_key={KEY}{b}", VALUE, VALUE),
)
GOOD = {
    "--limit": "2",
    "--batch_size": "2",
    "--seed": "1",
    "--gen_kwargs": "max_gen_toks=4",
    "--metadata": '{"x": 1}',
    "--shard": "0/2",
    "--max_batch_tokens": "100000",
    "--system_instruction": "Be brief.",
}
# Each flag's value: a good one as often as not, so that the fuzz reaches runs that work, not only refusals.
FLAGS = {flag: st.one_of(st.just(good), VALUE) for flag, good in GOOD.items()}


@budget(fuzz=300, ci=8)
@given(
    backend=st.one_of(
        st.just(("constant", "answer=red")),
        st.tuples(st.sampled_from(["constant", "openai", "random", "nope"]), MODEL_ARGS),
    ),
    flags=st.dictionaries(st.sampled_from(sorted(FLAGS)), st.just(None), max_size=3),
    data=st.data(),
)
def test_any_flag_values_run_or_fail_in_one_line_and_show_no_key(
    toy_build, capsys: pytest.CaptureFixture[str], backend: tuple[str, str], flags: dict, data: st.DataObject
) -> None:
    counted()
    model, model_args = backend
    data_dir, tasks = toy_build
    argv = [
        "--tasks",
        "toy_colors",
        "--include_path",
        str(tasks),
        "--data_dir",
        str(data_dir),
        "--model",
        model,
        "--model_args",
        model_args,
        "--no_progress",
        "--judge_model",
        "openai",
        "--judge_args",
        f"model=j,api_key={KEY}",
    ]  # the key is always on the command line, whatever else is
    for flag in sorted(flags):
        argv += [flag, data.draw(FLAGS[flag], label=flag)]
    with tempfile.TemporaryDirectory() as out, bounded(60, "a harness run"):
        argv += ["--output_path", out]
        try:
            code = main(argv)
        except SystemExit as exit:  # argparse: a value its type refuses, with the usage line
            code = exit.code
        printed = capsys.readouterr()
        written = b"".join(p.read_bytes() for p in Path(out).rglob("*") if p.is_file())
    assert isinstance(code, int), code
    assert "Traceback" not in printed.err, printed.err
    for text in (printed.out, printed.err):
        assert KEY not in text, text
    assert KEY.encode() not in written
    RAN[code == 0] = RAN.get(code == 0, 0) + 1


RAN: dict[bool, int] = {}  # how many runs ended 0 (the fuzz reaches runs that work, not only refusals)
