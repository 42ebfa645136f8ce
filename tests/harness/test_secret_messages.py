"""Issue 30, item 10: a typo in `--model_args` or `--judge_args` is one line that shows no key, whatever its length
and wherever the typo is. Before, the message quoted the whole string, `api_key=sk-...` included."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

SHORT = "sk-7"  # shorter than anything scrubbed by value: only never quoting it keeps it out

TYPOS = {  # KEY is each test's own key (a key registered by one test is scrubbed in the next one's output too)
    "a field without =": "model=m,api_key={KEY},oops",
    "an unclosed quote": 'model=m,api_key="{KEY}',
    "a key pasted without its name": "model=m,{KEY}",
    "a stray comma in the key": "model=m,api_key={HEAD},{TAIL}",
    "a short key and a typo": f"model=m,api_key={SHORT},concurrency==2",
    "a bad number": "model=m,api_key={KEY},concurrency=many",
    "a key as a number": "model=m,api_key={KEY},timeout={KEY}",
}


@pytest.mark.parametrize("flag", ["--model_args", "--judge_args"])
@pytest.mark.parametrize("case", sorted(TYPOS))
def test_a_typo_in_model_or_judge_args_shows_no_key(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness, flag: str, case: str
) -> None:
    key = "sk-proj-" + hashlib.sha256(f"{flag} {case}".encode()).hexdigest()[:24]
    args = TYPOS[case].format(KEY=key, HEAD=key[:6], TAIL=key[6:])
    model = (
        ["--model", "openai", "--model_args", args]
        if flag == "--model_args"
        else ["--model", "constant", "--model_args", "answer=red", "--judge_model", "openai", "--judge_args", args]
    )
    run = harness(
        "--tasks", "toy_colors", "--include_path", toy_tasks, "--data_dir", toy_dir, *model, "--output_path", tmp_path
    )
    printed = run.out + run.err
    assert "Traceback" not in printed
    for secret in (key, key[6:], SHORT):
        assert secret not in printed, printed
    if flag == "--model_args" or case in (
        "a field without =",
        "an unclosed quote",
        "a key pasted without its name",
        "a stray comma in the key",
    ):
        assert run.code == 2 and run.err.strip().splitlines()[-1].startswith("harness: error: "), run.err
