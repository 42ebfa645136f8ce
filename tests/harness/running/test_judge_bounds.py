"""Issue 30, item 6: a judge reply over `judge.max_reply_chars` is never handed to the parser (MMLongBench's
official one is quadratic: 200 KB of `{` ran over 300 s for one summary), the cap is in the results, and a
prompt that several samples share within a stage is sent once (170 calls for 120 distinct prompts before)."""

from __future__ import annotations

import json
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from tests.support.chat_server import ChatServer
from tests.support.run_setups import answering_red, only_results, toy_colors_yaml

TASK = "toy_judged"


@pytest.fixture(scope="module")
def judged_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy colours judged in two stages; the prompts show only the answer, so equal answers share them. The
    verdict is read by MMLongBench's official judge parser."""
    folder = tmp_path_factory.mktemp("judged_tasks")
    (folder / "utils.py").write_text(
        textwrap.dedent("""
        from tasks.mmlongbench.scoring import parse_judge_json

        def process_results(doc, results):
            return {"acc": float(results[0].strip().lower() == doc["answer"])}

        def judge_prompts(doc, response):
            return {"first": f"Is this a colour? {response}", "second": f"Is it spelt right? {response}"}

        def judge_parse(reply):
            return parse_judge_json(reply)

        def judge_score(doc, response, verdicts):
            return {"judged": float(verdicts["first"]["ok"] and verdicts["second"]["ok"])}
    """)
    )
    judge = """
        judge:
          prompts: !function utils.judge_prompts
          parse: !function utils.judge_parse
          score: !function utils.judge_score
          metrics: [judged]
          generation_kwargs: {max_gen_toks: 4096}
    """
    (folder / f"{TASK}.yaml").write_text(toy_colors_yaml(TASK, "- metric: acc\n- metric: judged", judge))
    return folder


def _reply(body: dict) -> str:
    prompt = json.dumps(body["messages"])
    if "spelt" in prompt:
        return "{" * 200_000  # a runaway reply: the official brace search is quadratic in it
    return 'Yes.\n{"ok": true}'


@pytest.mark.slow  # a judged run against a local server (~2 s)
def test_identical_prompts_are_sent_once_and_an_overlong_reply_is_not_parsed(
    tmp_path: Path, toy_dir: Path, judged_tasks: Path, harness_script: str, script_env: dict
) -> None:
    server = ChatServer(answer=_reply)
    server.start()
    started = time.monotonic()
    try:
        judge = ("--judge_model", "openai", "--judge_args", f"model=judge,base_url={server.base_url},api_key=k")
        argv = [harness_script, *answering_red(TASK, judged_tasks, toy_dir, tmp_path), "--no_progress", *judge]
        run = subprocess.run([*argv, "--allow_failures"], env=script_env, capture_output=True, text=True, timeout=90)
    finally:
        server.stop()
    elapsed = time.monotonic() - started
    assert "Traceback" not in run.stderr, run.stderr
    assert elapsed < 60, elapsed  # parsing the reply whole took minutes
    assert len(server.received) == 2  # 6 alike answers: one prompt per stage (12 calls before)
    (log,) = tmp_path.glob("constant/judge_*.jsonl")
    outcomes = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(outcomes) == 6 and {o["status"] for o in outcomes} == {"unparsed"}
    assert {o["error"] for o in outcomes} == {
        "the second reply has 200000 characters, over the judge's cap of 8192 (judge.max_reply_chars): not parsed"
    }
    assert all(len(o["replies"]["second"]) == 2000 for o in outcomes)
    assert only_results(tmp_path / "constant")["config"]["judge"]["max_reply_chars"] == {TASK: 8192}
