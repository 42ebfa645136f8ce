"""A reasoning model's thinking is taken out of its answer before any scorer reads it (issue 51, item 6;
`harness.models.facts.reasoning`, lmms-eval's `strip_reasoning_tags` with one named departure)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.models.facts.reasoning import LMMS_EVAL_DEFAULT, parse_reasoning_tags, strip_reasoning
from tests.support.harness_fixtures import toy_colors_run

THINK = (("<think>", "</think>"),)


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("<think>It is red, no: blue.</think>\n\nAnswer: blue", "Answer: blue"),
        ("<think>a</think> x <think>b</think> y", "x  y"),
        ("Let me see.</think>blue", "blue"),  # the template prefilled <think>: the text after the last end tag
        ("<think>still thinking when max_gen_toks ran out: Answer: red", ""),  # never closed: all thinking
        ("no thinking at all", "no thinking at all"),
        ("<THINK>case</THINK> kept", "<THINK>case</THINK> kept"),  # tags match case-sensitively, as lmms-eval's
        # Issue 61, item 6: the answer after a closed block keeps a tag it names, as lmms-eval and VLMEvalKit keep it
        ("<think>r</think>The model writes <think> before it reasons.", "The model writes <think> before it reasons."),
        ("<think>r</think>It ends with </think> then answers.", "It ends with </think> then answers."),
        ("Let me see.</think>It closes with </think>.", "It closes with </think>."),  # prefilled: the first end ends it
    ],
)
def test_the_thinking_is_taken_out(text: str, answer: str) -> None:
    assert strip_reasoning(text, THINK) == answer


def test_an_output_that_never_closes_the_thinking_its_prompt_opened_has_no_answer() -> None:
    """Issue 72, item 4: the prompt ended in `<think>` (the template opened it) and the output stopped before `</think>`
    (`max_gen_toks`): all of it is thinking, where without the prompt's state it would be scored whole."""
    cut = "The colour is red, so Answer: 2 might"
    assert strip_reasoning(cut, THINK, opened="<think>") == "" and strip_reasoning(cut, THINK) == cut
    assert strip_reasoning("red, so 2.</think>Answer: 2", THINK, opened="<think>") == "Answer: 2"
    gemma4 = (("<|channel>", "<channel|>"),)  # Gemma 4's thought channel, its own markers
    assert strip_reasoning("<|channel>thought\nA or B?<channel|>B", gemma4) == "B"
    assert strip_reasoning("<think>is kept</think>B", gemma4) == "<think>is kept</think>B"


def test_every_pair_is_taken_out() -> None:
    text = "<analysis>A or B?</analysis><think>B.</think>B"
    assert strip_reasoning(text, LMMS_EVAL_DEFAULT) == "B"
    assert strip_reasoning("◁think▷A?◁/think▷A", (("◁think▷", "◁/think▷"),)) == "A"  # Kimi-VL-Thinking's


def test_the_setting_is_read_as_lmms_eval_s_or_refused_in_one_line() -> None:
    assert parse_reasoning_tags('[["<think>", "</think>"]]') == THINK
    assert parse_reasoning_tags("default") == LMMS_EVAL_DEFAULT
    assert parse_reasoning_tags("none") == () and parse_reasoning_tags(None) is None  # none: over an alias's own
    for bad, said in (('[["<think>"]]', "is not a .start, end. pair"), ("<think>", "not JSON"), ("[]", "non-empty")):
        with pytest.raises(ValueError, match=said):
            parse_reasoning_tags(bad)


DEFAULT_TAGS = ("--reasoning_tags", "default")


@pytest.fixture
def toy_run(harness, toy_dir: Path, toy_tasks: Path) -> Callable[..., Any]:
    """`toy_run(out, answer, *extra)`: `harness --tasks toy_colors` into `out`, the constant model answering `answer`."""

    def run(out: Path, answer: str, *extra: str) -> Any:
        return toy_colors_run(harness, toy_dir, toy_tasks, out, "constant", f"answer={answer}", *extra)

    return run


def test_a_think_block_never_reaches_a_scorer(tmp_path: Path, toy_run) -> None:
    """The toy scorer takes the whole answer: with the thinking left in, no answer is right; taken out, the run
    scores as the answer alone does, and keeps the whole output in its journal, its sample log and its results."""
    thinking = "<think>blue? green? It is red.</think>red"
    plain = toy_run(tmp_path / "plain", "red")
    left_in = toy_run(tmp_path / "left", thinking)
    taken_out = toy_run(tmp_path / "out", thinking, *DEFAULT_TAGS)
    for run in (plain, left_in, taken_out):
        assert run.code == 0, run.err
    acc = {
        name: run.results("constant")["results"]["toy_colors"]["acc,none"]
        for name, run in (("plain", plain), ("left", left_in), ("out", taken_out))
    }
    assert acc["left"] == 0.0 and acc["out"] == acc["plain"] == pytest.approx(1 / 6)
    samples = taken_out.samples("constant", "toy_colors")
    assert {s["response"] for s in samples} == {"red"} and {s["raw_response"] for s in samples} == {thinking}
    assert all("raw_response" not in s for s in plain.samples("constant", "toy_colors"))
    config = taken_out.results("constant")["config"]
    assert config["reasoning_tags"] == [list(pair) for pair in LMMS_EVAL_DEFAULT]
    assert "reasoning_tags" not in plain.results("constant")["config"]


def test_a_journal_written_with_other_reasoning_tags_is_not_resumed(tmp_path: Path, toy_run) -> None:
    thinking = "<think>red</think>blue"
    first = toy_run(tmp_path, thinking, *DEFAULT_TAGS)
    assert first.code == 0, first.err
    again = toy_run(tmp_path, thinking)
    assert again.code != 0 and "reasoning_tags" in again.err


def test_the_sample_log_writes_the_whole_output_and_the_answer_scored(tmp_path: Path, toy_run) -> None:
    thinking = "<think>blue? It is red.</think>red"
    run = toy_run(tmp_path, thinking, *DEFAULT_TAGS)
    assert run.code == 0, run.err
    (log,) = (tmp_path / "constant").glob("samples_toy_colors_*.jsonl")
    line = json.loads(log.read_text().splitlines()[0])
    assert line["resps"] == [[thinking]] and line["filtered_resps"] == ["red"]  # as lmms-eval logs them


def test_the_viewer_shows_the_whole_output_beside_the_answer(tmp_path: Path, data_dir: Path, harness) -> None:
    from starlette.testclient import TestClient

    from harness.view.app import create_app, served_hosts

    hostile = "<script>window.pwned=1</script>"
    run = harness(
        "--tasks",
        "mmneedle_m1_n2_k1_pos",
        "--model",
        "constant",
        "--model_args",
        f"answer=<think>{hostile}</think>-1",
        "--reasoning_tags",
        "default",
        "--data_dir",
        data_dir,
        "--output_path",
        tmp_path,
    )
    assert run.code == 0, run.err
    client = TestClient(create_app(tmp_path, hosts=served_hosts("127.0.0.1", 8765)), base_url="http://127.0.0.1:8765")
    page = client.get("/sample", params={"model": "constant", "task": "mmneedle_m1_n2_k1_pos", "id": "m1_n2_k1-00000"})
    assert page.status_code == 200 and hostile not in page.text
    assert '<pre class="text response">-1</pre>' in page.text
    assert "whole output" in page.text and "&lt;think&gt;&lt;script&gt;window.pwned=1" in page.text
