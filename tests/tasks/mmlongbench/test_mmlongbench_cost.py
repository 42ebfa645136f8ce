"""What an MMLongBench run costs, its summarization judge included: `--screen_only`'s estimate for GPT-4o on the
length-true 128K fixture, as docs/cost.md shows it (the command and its output run from the page), the judge's part
of it counted from the judge's own prompts, and `--max_cost`'s running budget charged with the judge's calls."""

from __future__ import annotations

import json
import math
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from builders.cli import main as builders_main
from harness.run.cli import main
from tasks.mmlongbench import utils
from tests.support.chat_server import ChatServer
from tests.support.paths import PROJECT

pytestmark = pytest.mark.slow  # fixture builds and harness runs end to end

COST_PAGE = PROJECT / "docs" / "cost.md"
SUMM_TOKENS, JUDGE_TOKENS = 384, 4096  # _summ.yaml: the summary's max_gen_toks, the judge's


def _docs_example() -> tuple[list[str], list[str], list[str]]:
    """docs/cost.md's 128K example: its `builders build` and `harness` commands, and the output it shows."""
    text = COST_PAGE.read_text(encoding="utf-8")
    after = text.split("On the length-true MMLongBench fixture at 128K:", 1)[1]
    commands, shown = re.findall(r"^```\n(.*?)^```", after, flags=re.S | re.M)[:2]
    build, run = (shlex.split(line) for line in commands.strip().splitlines())
    return build, run, [line for line in shown.splitlines() if line.strip()]


def _judge_chars(data: Path, config: str) -> tuple[int, int]:
    """(calls, characters) of the judge's prompts for every row of `config`, each summary left empty."""
    import datasets

    rows = datasets.load_dataset(str(data / "mmlongbench"), config, split="test")
    prompts = [utils.judge_prompts(dict(row), "") for row in rows]
    return sum(len(p) for p in prompts), sum(len(text) for p in prompts for text in p.values())


def test_the_docs_128k_estimate_for_gpt_4o_with_its_judge(tmp_path: Path, capsys) -> None:
    build, run, shown = _docs_example()
    data = tmp_path / "data"
    assert build[:2] == ["builders", "build"] and build[build.index("--out") + 1] == "data"
    build[build.index("--out") + 1] = str(data)
    assert builders_main(build[1:]) == 0
    capsys.readouterr()
    assert run[0] == "harness" and run[run.index("--data_dir") + 1] == "data"
    assert run[run.index("--model") + 1] == "gpt-4o" and "--screen_only" in run
    run[run.index("--data_dir") + 1] = str(data)
    assert main([*run[1:], "--no_progress"]) == 0
    out = capsys.readouterr().out.splitlines()
    # What the page shows is what the command prints: every task's row, the judge's, the total.
    missing = [line for line in shown if line not in out]
    assert not missing, "\n".join(missing)
    assert any(line.startswith("Estimated cost: $") for line in shown)
    # The judge's row counted from the judge's own prompts: three calls a summary, each prompt with the summary at its
    # longest (the summary's max_gen_toks), each reply at the judge's.
    calls, chars = _judge_chars(data, "summ_govreport_128k")
    (judge,) = [line for line in out if line.startswith("| judge | mmlongbench_summ_govreport_128k |")]
    cells = [cell.strip() for cell in judge.strip("|").split("|")]
    assert cells[2:6] == [
        "gpt-4o-2024-11-20",
        f"{calls:,}",
        f"{math.ceil(chars / 4) + calls * SUMM_TOKENS:,}",
        f"{calls * JUDGE_TOKENS:,}",
    ]
    usd = ((math.ceil(chars / 4) + calls * SUMM_TOKENS) * 2.5 + calls * JUDGE_TOKENS * 10) / 1e6
    assert cells[6] == f"{usd:,.2f}"


SUMMARY = " The claims of case 1 are settled."


def _reply(body: dict[str, Any]) -> str:
    """The model's summary, or the judge's verdict on it: every stage parses."""
    if body["model"] == "test-vlm":
        return SUMMARY
    prompt = body["messages"][0]["content"]
    prompt = prompt if isinstance(prompt, str) else prompt[0]["text"]
    if "evaluate the fluency" in prompt:
        return '{"fluency": 1}'
    if "Key points:" in prompt:
        return '{"recall": 2}'
    return '{"precision": 1, "sentence_count": 4}'


def _usage(body: dict[str, Any]) -> dict[str, int]:
    """The model's answers report nothing to pay; each judge call a million prompt tokens ($1 at $1 a million)."""
    return {"prompt_tokens": 0 if body["model"] == "test-vlm" else 1_000_000, "completion_tokens": 3}


def test_the_running_budget_charges_the_judges_calls(summ_dir: Path, tmp_path: Path, capsys) -> None:
    server = ChatServer(answer=_reply, usage=_usage)
    server.start()
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps(
            {"models": {"test-vlm": {"input": 0, "output": 0}, "gpt-4o-2024-11-20": {"input": 1.0, "output": 0}}}
        )
    )
    out = tmp_path / "out"
    argv = [
        "--tasks",
        "mmlongbench_summ_govreport_8k",
        "--model",
        "openai",
        "--model_args",
        f"model=test-vlm,base_url={server.base_url},api_key=k,concurrency=1,chunk_size=1",
        "--judge_model",
        "openai",
        "--judge_args",
        f"base_url={server.base_url},api_key=k,concurrency=1,chunk_size=1",
        "--data_dir",
        str(summ_dir),
        "--output_path",
        str(out),
        "--prices",
        str(prices),
        "--no_progress",
        "--max_cost",
    ]

    def judge_calls() -> int:
        return sum(1 for r in server.received if r.body["model"] != "test-vlm")

    try:
        first = main([*argv, "4.5"])
        err = capsys.readouterr().err
        asked_first = judge_calls()
        again = main([*argv, "4.5"])
        err_again = capsys.readouterr().err
        asked_again = judge_calls()
        finished = main([*argv, "100"])
    finally:
        server.stop()
    # Three summaries, three stages each, at $1 a call: one fluency call (the three summaries are the same text, so
    # their prompt is asked once), three recall and three precision calls. The fifth reaches the $4.50 budget (the
    # summaries cost nothing): the run stops there, the answers journalled and the replies cached.
    assert first == 1, err
    stop = "--max_cost $4.50 reached: the answers journalled cost $5.00 (the judge's replies $5.00 of it)"
    assert stop in err and asked_first == 5
    # The same command reads them back, charged as before, and stops at the same total without asking again.
    assert again == 1 and stop in err_again and asked_again == 5
    assert finished == 0 and judge_calls() == 7  # a larger budget asks the rest, each call once
    results = json.loads(next((out / "openai__test-vlm").glob("results_*.json")).read_text())
    assert results["cost"]["mmlongbench_summ_govreport_8k"]["judge"]["usd"] == pytest.approx(7.0)
    assert results["sample_counts"]["mmlongbench_summ_govreport_8k"]["n_judged"] == 3
