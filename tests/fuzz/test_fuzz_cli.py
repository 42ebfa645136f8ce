"""Fuzz: command-line values (issue 30). Any value of the run's flags ends in a result or in one line, and no key
given on the command line shows in anything printed or written, whatever else is wrong with the command. Issue 41:
a run whose every value is a good one must work (the property counted the runs that worked and never checked the
count, so it missed `--seed -1`, in its own word list); every flag is given every word once; integers past 2**70 and
`--ray` addresses are among the values; any `--ray` address is refused in one line or found to have no Ray cluster
behind it within the bound, where Ray itself retried for minutes."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.run.cli import main

from .conftest import FUZZ, LONG_INTEGERS, RAY_ADDRESSES, bounded, budget, closed_port, counted

KEY = "sk-fuzz-9f8e7d6c5b4a3210"
WORD_LIST = [
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
    "²",
    "٣",
    "4294967296",
    "9" * 4301,
    '{"a": ' + "9" * 4301 + "}",
    "1/" + "9" * 5000,
    "http://u:pw@h:99999/v1",
    "http://127.0.0.1:1/v1",
    "127.0.0.1:99999",
    "no-such-host.invalid:6379",
]
WORDS = st.sampled_from(WORD_LIST)
VALUE = st.one_of(WORDS, st.text(max_size=12), st.lists(WORDS, max_size=3).map(",".join), LONG_INTEGERS)
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
    "--ray": "auto",  # data_parallel_size is 1: the model runs in this process, and a line says the flag changes nothing
}
# Each flag's value: a good one as often as not, so that the fuzz reaches runs that work, not only refusals.
FLAGS = {flag: st.one_of(st.just(good), VALUE) for flag, good in GOOD.items()}
FLAGS["--ray"] = st.one_of(st.just(GOOD["--ray"]), RAY_ADDRESSES, VALUE)


def _run(toy_build, capsys: pytest.CaptureFixture[str], model: str, model_args: str, flags: list[str]) -> int:
    """`harness` with the toy task, a judge's key always on the command line, and `flags`; the exit code, after
    checking that the run ended in a result or one line, and that no key shows anywhere."""
    data_dir, tasks = toy_build
    argv = [
        "--tasks", "toy_colors", "--include_path", str(tasks), "--data_dir", str(data_dir), "--model", model,
        "--model_args", model_args, "--no_progress", "--judge_model", "openai", "--judge_args", f"model=j,api_key={KEY}",
        *flags,
    ]  # fmt: skip
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
    if code != 0:  # one line says why (argparse's usage lines before it aside)
        errors = [line for line in printed.err.splitlines() if "error:" in line]
        assert len(errors) == 1 and errors[0].startswith(("harness: error: ", "harness run: error: ")), printed.err
    for text in (printed.out, printed.err):
        assert KEY not in text, text
    assert KEY.encode() not in written
    return code


RAN: dict[bool, int] = {}  # how many runs ended 0 (the fuzz must reach runs that work, not only refusals)


@budget(fuzz=300, ci=8)
@given(
    backend=st.one_of(
        st.just(("constant", "answer=red")),
        st.tuples(st.sampled_from(["constant", "openai", "random", "nope"]), MODEL_ARGS),
    ),
    flags=st.dictionaries(st.sampled_from(sorted(FLAGS)), st.just(None), max_size=3),
    data=st.data(),
)
def _any_flag_values(toy_build, capsys, backend: tuple[str, str], flags: dict, data: st.DataObject) -> None:
    counted()
    model, model_args = backend
    values = {flag: data.draw(FLAGS[flag], label=flag) for flag in sorted(flags)}
    code = _run(toy_build, capsys, model, model_args, [part for item in values.items() for part in item])
    if backend == ("constant", "answer=red") and all(values[flag] == GOOD[flag] for flag in values):
        assert code == 0, f"a run of good values only was refused: {values}"
    RAN[code == 0] = RAN.get(code == 0, 0) + 1


def test_any_flag_values_run_or_fail_in_one_line_and_show_no_key(toy_build, capsys: pytest.CaptureFixture[str]) -> None:
    RAN.clear()
    _any_flag_values(toy_build, capsys)
    # Half the backends drawn are the working one and half the values good ones: about a tenth of the runs work
    # (27 of 300 under `make fuzz`); under a twentieth, the fuzz tries little but refusals (a good value refused in
    # some company would show here).
    assert RAN.get(True, 0) >= max(1, sum(RAN.values()) // 20), RAN


# Under `make test`, each flag gets the words most likely to break it; `make fuzz` gives it every one.
HARD_WORDS = ["-1", "9" * 4301, "²"]


@pytest.mark.parametrize("flag", sorted(GOOD))
def test_every_flag_takes_every_word_or_refuses_it_in_one_line(
    toy_build, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    for word in WORD_LIST if FUZZ else HARD_WORDS:
        counted()
        _run(toy_build, capsys, "constant", "answer=red", [flag, word])


@budget(fuzz=1000, ci=30)
@given(address=RAY_ADDRESSES)
def test_any_ray_address_is_refused_in_one_line_or_has_no_cluster_within_the_bound(address: str) -> None:
    """No address the strategy makes has a Ray cluster behind it (loopback ports nothing listens on, names that do
    not resolve): each is refused by its form, or found empty, in one line and within `CONNECT_TIMEOUT` a check."""
    from harness.models.backends.replicas.cluster import AUTO, CONNECT_TIMEOUT, LOCAL, address_problem, no_cluster_at

    counted()
    address = address.replace("{closed}", str(closed_port()))
    with bounded(2 * CONNECT_TIMEOUT + 5, f"--ray {address!r}"):
        problem = address_problem(address)
        if problem is None and address not in (AUTO, LOCAL):
            problem = no_cluster_at(address)
            assert problem is not None, f"{address!r}: a Ray cluster answers there?"
    if problem is not None:
        assert problem.strip() and "\n" not in problem, problem
        problem.encode("ascii", "backslashreplace").decode()  # printable, whatever the address held
