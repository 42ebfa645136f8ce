"""A run's cost through the `harness` command against the loopback chat-completions server: `--screen_only`'s
estimate, `--max_cost` refusing a run over it, and stopping one whose answers' reported usage reaches it, with every
finished answer kept and the same command resuming, also after the process was killed (alone and with `--batch`);
the shards of a run, merged, cost what the unsharded run cost."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

from harness.run.cli import main
from tests.support.backend_fixtures import MMNEEDLE_LIMIT as LIMIT
from tests.support.chat_server import ChatServer
from tests.support.killed_runs import journalled, kill_when
from tests.support.openai_batches import OpenAIBatchDesk

pytestmark = pytest.mark.slow  # harness runs end to end through the CLI against a chat server

TASKS = ["mmneedle_m1_n2_k1_pos", "mmneedle_m1_n2_k1_neg", "mmneedle_m10_n1_k1_neg"]
MAX_GEN_TOKS = 300  # tasks/mmneedle/_default.yaml


def _prices(tmp_path: Path, input_usd: float, output_usd: float) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(
        json.dumps({"models": {"test-vlm": {"input": input_usd, "output": output_usd, "as_of": "2026-11-24"}}})
    )
    return path


def _argv(base_url: str, data: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--tasks",
        ",".join(TASKS),
        "--model",
        "openai",
        "--model_args",
        f"model=test-vlm,base_url={base_url},api_key=sk-test,backoff=0.01,concurrency=1,chunk_size=1",
        "--data_dir",
        str(data),
        "--output_path",
        str(out),
        "--no_progress",
        *extra,
    ]


def test_screen_only_prints_the_runs_estimate(mmneedle_dir: Path, tmp_path: Path, capsys):
    # $1 an output token, nothing an input token: the estimate is every sent request's max_gen_toks, in dollars.
    prices = _prices(tmp_path, 0.0, 1_000_000.0)
    argv = _argv("http://127.0.0.1:9", mmneedle_dir, tmp_path / "out", "--screen_only", "--prices", str(prices))
    assert main(argv) == 0
    out = capsys.readouterr().out
    total = 3 * LIMIT * MAX_GEN_TOKS
    assert f"Estimated cost: ${total:,.2f} (model ${total:,.2f})." in out
    rows = [line for line in out.splitlines() if line.startswith("| model | mmneedle_")]
    assert len(rows) == 3 and all(f"| {LIMIT} |" in row and f"| {LIMIT * MAX_GEN_TOKS:,} |" in row for row in rows)
    assert f"test-vlm: $0 in, $1e+06 out per 1M tokens (, as of 2026-11-24, {prices})" in out
    assert not (tmp_path / "out").exists()  # a screen writes nothing


def test_screen_only_prices_a_batch_run_at_the_batch_price(mmneedle_dir: Path, tmp_path: Path, capsys):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"test-vlm": {"input": 0, "output": 1_000_000, "batch": 0.5}}}))
    argv = _argv(
        "http://127.0.0.1:9", mmneedle_dir, tmp_path / "out", "--screen_only", "--batch", "--prices", str(path)
    )
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"Estimated cost: ${3 * LIMIT * MAX_GEN_TOKS / 2:,.2f}" in out and "at the batch interfaces' price" in out


def test_screen_only_says_when_a_model_has_no_price(mmneedle_dir: Path, tmp_path: Path, capsys):
    assert main(_argv("http://127.0.0.1:9", mmneedle_dir, tmp_path / "out", "--screen_only")) == 0
    assert "No estimate: no price for test-vlm in the price table" in capsys.readouterr().out


def test_an_uncapped_gemini_answer_is_priced_at_its_output_limit_or_said_to_be_unbounded(
    mmneedle_dir: Path, tmp_path: Path, capsys
):
    pytest.importorskip("google.genai")
    served = "gemini-2.5-pro-preview-03-25"
    prices = tmp_path / "prices.json"  # $1 an output token, nothing an input token
    prices.write_text(json.dumps({"models": {served: {"input": 0, "output": 1_000_000}}}))
    common = ["--tasks", ",".join(TASKS), "--data_dir", str(mmneedle_dir), "--prices", str(prices), "--no_progress"]
    # The alias sends no max_output_tokens, as the official wrapper did: each answer at the model's output limit.
    assert main(["--model", "gemini-2.5-pro", *common, "--screen_only"]) == 0
    out = capsys.readouterr().out
    total = 3 * LIMIT * 65536
    assert f"Estimated cost: ${total:,.2f} (model ${total:,.2f})." in out
    rows = [line for line in out.splitlines() if line.startswith("| model | mmneedle_")]
    assert len(rows) == 3 and all(f"| {LIMIT * 65536:,} | {LIMIT * 65536:,.2f} |" in row for row in rows)
    assert (
        f"- {served} is sent no output cap (max_output_tokens=none; its thinking bills as output): each answer " in out
    )
    # Sent no cap and given no output limit, nothing bounds an answer: said so, and --max_cost cannot check the run.
    bare = ["--model", "gemini", "--model_args", f"model={served},max_output_tokens=none", *common]
    assert main([*bare, "--screen_only"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| model | mmneedle_")]
    assert len(rows) == 3 and all(row.endswith("| not bounded | at least 0.00 |") for row in rows)
    assert (
        f"Estimated cost: at least $0.00 (model $0.00), not an upper bound: nothing bounds the answers of {served}."
        in out
    )
    assert main([*bare, "--output_path", str(tmp_path / "out"), "--max_cost", "100"]) == 2
    err = capsys.readouterr().err
    assert f"--max_cost cannot check this run: {served} is sent no output cap" in err and "nothing was sent" in err


def test_max_cost_refuses_a_run_over_its_estimate(mmneedle_dir: Path, tmp_path: Path, capsys):
    server = ChatServer()
    server.start()
    try:
        prices = _prices(tmp_path, 0.0, 1_000_000.0)
        code = main(
            _argv(server.base_url, mmneedle_dir, tmp_path / "out", "--max_cost", "100", "--prices", str(prices))
        )
        no_price = main(_argv(server.base_url, mmneedle_dir, tmp_path / "out", "--max_cost", "100"))
    finally:
        server.stop()
    err = capsys.readouterr().err
    assert code == 2 and no_price == 2
    assert f"the run's estimated cost ${3 * LIMIT * MAX_GEN_TOKS:,.2f} is over --max_cost $100.00" in err
    assert "--max_cost needs a price for test-vlm" in err
    assert server.received == []  # nothing sent


def test_max_cost_stops_the_run_keeps_its_answers_and_the_same_command_resumes(
    mmneedle_dir: Path, tmp_path: Path, capsys
):
    # The estimate counts each prompt by the rows' rule (a few hundred tokens); the server reports a million prompt
    # tokens an answer: at $1 a million input tokens each answer costs $1, and the third reaches a $2.50 budget.
    server = ChatServer(usage=lambda body: {"prompt_tokens": 1_000_000, "completion_tokens": 3})
    server.start()
    out = tmp_path / "out"
    prices = _prices(tmp_path, 1.0, 0.0)
    argv = _argv(server.base_url, mmneedle_dir, out, "--prices", str(prices), "--max_cost")
    try:
        first = main([*argv, "2.5"])
        sent_first = len(server.received)
        again = main([*argv, "2.5"])  # the journal's answers were paid for: nothing more is sent
        sent_again = len(server.received)
        larger = main([*argv, "100"])
    finally:
        server.stop()
    err = capsys.readouterr().err
    assert first == 1 and again == 1 and larger == 0, err
    assert "--max_cost $2.50 reached: the answers journalled cost $3.00" in err
    assert sent_first == 3 and sent_again == 3  # stopped after the batch that reached it; the rerun sent nothing
    assert len(server.received) == 3 * LIMIT  # every request sent once over the three runs
    journal = out / "openai__test-vlm" / f"journal_{TASKS[0]}.jsonl"
    records = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    assert len({r["sample_id"] for r in records if r.get("status") == "ok"}) == LIMIT
    results = json.loads(sorted((out / "openai__test-vlm").glob("results_*.json"))[-1].read_text())
    assert all(results["usage"][task]["prompt_tokens"] == LIMIT * 1_000_000 for task in TASKS)
    assert re.search(r"run the same command with a larger --max_cost", err)
    # The results record each task's tokens and cost, and the report shows them.
    for task in TASKS:
        entry = results["cost"][task]["model"]
        assert (entry["served"], entry["priced_as"], entry["input_tokens"]) == (
            "test-vlm",
            "test-vlm",
            LIMIT * 1_000_000,
        )
        assert entry["usd"] == pytest.approx(LIMIT * 1.0)
    assert main(["report", str(out)]) == 0
    report = (out / "report.md").read_text()
    assert "- **tokens and cost** (reported usage): model $9.00" in report
    assert f"`{TASKS[0]}` model: 3,000,000 input tokens (0 cached), 9 output tokens: $3.00 as test-vlm" in report


def _sent(body: dict) -> str:
    """A chat request by what it asks (its messages), to tell which requests a rerun sent again."""
    return json.dumps(body["messages"], sort_keys=True)


def _stopped_at(err: str) -> str:
    """The spending a `--max_cost` stop reports."""
    found = re.search(r"--max_cost \$[\d.,]+ reached: the answers journalled cost (\$[\d.,]+)", err)
    assert found, err
    return found.group(1)


def test_max_cost_through_a_kill_charges_the_journalled_answers_and_stops_at_the_same_total(
    mmneedle_dir: Path, tmp_path: Path, capsys
):
    # Each answer reports a million prompt tokens: $1 at $1 a million, so a $4.50 budget stops after the fifth. The
    # server holds the third answer until the first process, killed with two answers journalled, is gone.
    release, lock = threading.Event(), threading.Lock()
    answered: list[str] = []

    def usage(body: dict) -> dict:
        with lock:
            held = len(answered) >= 2
        if held:
            release.wait(60)
        with lock:
            answered.append(_sent(body))
        return {"prompt_tokens": 1_000_000, "completion_tokens": 3}

    server = ChatServer(usage=usage)
    server.start()
    prices = _prices(tmp_path, 1.0, 0.0)
    out, fresh = tmp_path / "out", tmp_path / "fresh"
    first_journal = out / "openai__test-vlm" / f"journal_{TASKS[0]}.jsonl"
    try:
        argv = _argv(server.base_url, mmneedle_dir, out, "--prices", str(prices), "--max_cost", "4.5")
        kill_when(argv, lambda: len(journalled(first_journal)) >= 2, "two answers journalled")
        with lock:
            paid = answered[:2]
        assert len(paid) == 2 and len(journalled(first_journal)) == 2  # the third was asked, never answered
        release.set()
        before = len(server.received)
        resumed = main(argv)
        sent_again = [_sent(r.body) for r in server.received[before:]]
        err = capsys.readouterr().err
        before = len(server.received)
        unbroken = main(_argv(server.base_url, mmneedle_dir, fresh, "--prices", str(prices), "--max_cost", "4.5"))
        sent_unbroken = len(server.received) - before
        err_unbroken = capsys.readouterr().err
    finally:
        release.set()
        server.stop()
    assert resumed == 1 and unbroken == 1, err
    # The journalled answers were charged ($2), not sent again; the budget stopped the resumed run at the same total,
    # on the same answers, as a run never killed.
    assert not set(paid) & set(sent_again) and len(sent_again) == 3 and sent_unbroken == 5
    assert _stopped_at(err) == _stopped_at(err_unbroken) == "$5.00"
    for task in TASKS:
        name = f"journal_{task}.jsonl"
        assert sorted(journalled(out / "openai__test-vlm" / name)) == sorted(
            journalled(fresh / "openai__test-vlm" / name)
        )


def test_max_cost_with_batch_through_a_kill_collects_the_journalled_batch_and_counts_it(
    mmneedle_dir: Path, tmp_path: Path, capsys
):
    # A batch a task (chunk_size=3); each answer reports a million prompt tokens, $0.50 at the batch price: the first
    # task's batch costs $1.50, the second's reaches the $2 budget.
    desk = OpenAIBatchDesk(usage=lambda body: {"prompt_tokens": 1_000_000, "completion_tokens": 3})
    server = ChatServer(batches=desk)
    server.start()
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"models": {"test-vlm": {"input": 1.0, "output": 0.0, "batch": 0.5}}}))
    out, fresh = tmp_path / "out", tmp_path / "fresh"
    batches = out / "openai__test-vlm" / "batches_model.jsonl"

    def argv(folder: Path, budget: str) -> list[str]:
        command = _argv(server.base_url, mmneedle_dir, folder, "--batch", "--prices", str(prices), "--max_cost", budget)
        model_args = command.index("--model_args") + 1
        command[model_args] = command[model_args].replace("chunk_size=1", "chunk_size=3") + ",batch_poll=0.05"
        return command

    try:
        desk.hold.set()  # the provider is still working on the first batch when the process is killed
        kill_when(argv(out, "2"), lambda: batches.exists() and desk.looks, "the first batch submitted and polled")
        submitted = list(desk.created)
        desk.hold.clear()
        resumed = main(argv(out, "2"))
        err = capsys.readouterr().err
        after_resume = list(desk.created)
        unbroken = main(argv(fresh, "2"))
        err_unbroken = capsys.readouterr().err
        finished = main(argv(out, "100"))
    finally:
        server.stop()
    assert resumed == 1 and unbroken == 1 and finished == 0, err
    # The killed run's batch was collected, not submitted (nor paid) again, and its $1.50 counted: the second task's
    # batch reached the budget, as in a run never killed.
    assert len(submitted) == 1 and after_resume[:1] == submitted and len(after_resume) == 2
    assert _stopped_at(err) == _stopped_at(err_unbroken) == "$3.00"
    assert server.received == []  # nothing went alone
    assert [json.loads(line)["batch_id"] for line in batches.read_text().splitlines()] == [
        *after_resume,
        desk.created[-1],
    ]
    results = json.loads(next((out / "openai__test-vlm").glob("results_*.json")).read_text())
    for task in TASKS:
        cost = results["cost"][task]["model"]
        assert cost["batch"] is True and cost["usd"] == pytest.approx(LIMIT * 0.5)


def test_the_results_price_each_answer_by_its_own_prompt(mmneedle_dir: Path, tmp_path: Path, capsys):
    # Gemini 2.5 Pro's rates under a test name: $1.25 / $10 a million, $2.50 / $15 for a request past 200K prompt
    # tokens. The server reports the first answer's prompt as 250K, every other one's as 100K, 1,000 output tokens each.
    prices = tmp_path / "prices.json"
    long_context = {"over_tokens": 200_000, "input": 2.5, "output": 15.0}
    prices.write_text(
        json.dumps({"models": {"test-vlm": {"input": 1.25, "output": 10.0, "long_context": long_context}}})
    )
    answered: list[int] = []
    lock = threading.Lock()

    def usage(body: dict) -> dict:
        with lock:
            answered.append(1)
            prompt = 250_000 if len(answered) == 1 else 100_000
        return {"prompt_tokens": prompt, "completion_tokens": 1_000}

    server = ChatServer(usage=usage)
    server.start()
    out = tmp_path / "out"
    try:
        code = main(_argv(server.base_url, mmneedle_dir, out, "--prices", str(prices), "--max_cost", "100"))
    finally:
        server.stop()
    assert code == 0, capsys.readouterr().err
    results = json.loads(sorted((out / "openai__test-vlm").glob("results_*.json"))[-1].read_text())
    # The 250K answer: 250,000 x $2.50 + 1,000 x $15 = $0.64; each of the other 3 x 3 - 1 = 8: 100,000 x $1.25 +
    # 1,000 x $10 = $0.135, $1.08; $1.72 in all. By each task's average prompt (at most 150K) all nine would be at the
    # base rates: 9 x $0.135 = $1.215.
    assert len(answered) == 3 * LIMIT == 9
    assert sum(results["cost"][task]["model"]["usd"] for task in TASKS) == pytest.approx(1.72)


def test_merged_shards_cost_what_the_unsharded_run_cost(mmneedle_dir: Path, tmp_path: Path, capsys):
    # Each answer's prompt is reported as 100K tokens an image, so a 10-image needle prompt (1M) is past the 200K
    # threshold and priced at the long-context rate, a 1-image one (100K) at the base rate: merged, every task's
    # tokens and dollars are the unsharded run's.
    prices = tmp_path / "prices.json"
    long_context = {"over_tokens": 200_000, "input": 2.5, "output": 15.0}
    prices.write_text(
        json.dumps({"models": {"test-vlm": {"input": 1.25, "output": 10.0, "long_context": long_context}}})
    )
    unpriced = tmp_path / "unpriced.json"
    unpriced.write_text(json.dumps({"models": {}}))

    def usage(body: dict) -> dict:
        images = sum(
            part.get("type") == "image_url"
            for m in body["messages"]
            if isinstance(m["content"], list)
            for part in m["content"]
        )
        return {"prompt_tokens": 100_000 * images, "completion_tokens": 7}

    server = ChatServer(usage=usage)
    server.start()
    shards = [tmp_path / "shard0", tmp_path / "shard1"]
    try:
        codes = [main(_argv(server.base_url, mmneedle_dir, tmp_path / "full", "--prices", str(prices)))]
        for index, shard in enumerate(shards):
            codes.append(
                main(_argv(server.base_url, mmneedle_dir, shard, "--prices", str(prices), "--shard", f"{index}/2"))
            )
        codes.append(main(["merge", str(tmp_path / "merged"), *map(str, shards)]))
        # The second shard run again under a table without the model: its answers come from its journal, unpriced.
        sent = len(server.received)
        codes.append(main(_argv(server.base_url, mmneedle_dir, shards[1], "--prices", str(unpriced), "--shard", "1/2")))
        assert len(server.received) == sent
    finally:
        server.stop()
    codes.append(main(["merge", str(tmp_path / "merged_again"), *map(str, shards)]))
    assert codes == [0] * 6, capsys.readouterr().err

    def cost(out: Path) -> dict:
        return json.loads(sorted((out / "openai__test-vlm").glob("results_*.json"))[-1].read_text())["cost"]

    full, merged = cost(tmp_path / "full"), cost(tmp_path / "merged")
    assert set(merged) == set(TASKS)
    # three 1-image answers at the base rate, three 10-image ones at the long-context rate
    assert full[TASKS[0]]["model"]["usd"] == pytest.approx(3 * (0.1 * 1.25 + 7 * 10 / 1e6))
    assert full[TASKS[2]]["model"]["usd"] == pytest.approx(3 * (1.0 * 2.5 + 7 * 15 / 1e6))
    for task in TASKS:
        assert {**merged[task]["model"], "usd": None} == {**full[task]["model"], "usd": None}
        assert merged[task]["model"]["usd"] == pytest.approx(full[task]["model"]["usd"])
    assert main(["report", str(tmp_path / "merged")]) == 0
    total = sum(e["model"]["usd"] for e in full.values())
    assert (
        f"- **tokens and cost** (reported usage): model ${total:,.2f}"
        in (tmp_path / "merged" / "report.md").read_text()
    )
    # With one shard unpriced, the merged dollars are unknown, not the other shard's alone; the tokens still add up.
    again = cost(tmp_path / "merged_again")
    assert all(again[task]["model"]["usd"] is None for task in TASKS)
    assert [again[task]["model"]["input_tokens"] for task in TASKS] == [
        full[task]["model"]["input_tokens"] for task in TASKS
    ]
