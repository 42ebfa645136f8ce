"""The summarization judge after generation: the official prompts in the official order through an
OpenAI-compatible server, Fluency-F1 as defined, a reply without JSON left out (as official), the replies
cached, per-sample outcomes logged, and the Summ groups scored once the judge has run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from builders.mmlongbench.build import build_mmlongbench
from tasks.mmlongbench import scoring
from tests.support.judged_runs import judge_server, judged_run, prompt_of

TASKS = "mmlongbench_summ_8k"  # its two configs, built by `summ_dir` (conftest.py)
GOVREPORT = "mmlongbench_summ_govreport_8k"
CASE_1_SUMMARY = '" The claims of case 1 are settled."'  # names case 1: no recall JSON (judge_reply)


def judge_reply(body: dict[str, Any]) -> str:
    """A judge that grades every summary alike, except that it writes no JSON when asked about the recall of
    a summary of the Multi-LexSum case 'case-1'."""
    prompt = prompt_of(body)
    if "evaluate the fluency" in prompt:
        return 'The text is fluent.\n{"fluency": 1}'
    if "Key points:" in prompt:  # the recall prompts
        if "civil lawsuit" in prompt and "The claims of case 1" in prompt:
            return "I cannot tell."
        return 'Supported: 1 and 2.\n```json\n{"recall": 2}\n```'
    return '{"precision": 1, "sentence_count": 4}'


@pytest.mark.slow  # harness runs end to end
def test_summaries_are_judged_in_the_official_order_and_scored_as_fluency_f1(
    summ_dir: Path, tmp_path: Path, harness
) -> None:
    out = tmp_path / "out"
    with judge_server(judge_reply) as server:
        args = (*judged_run(server, TASKS, summ_dir, answer=CASE_1_SUMMARY), "--output_path", out)
        run = harness(*args)
        assert run.code == 0, run.err
        asked = [prompt_of(r.body) for r in server.received]
        bodies = [r.body for r in server.received]
    # Every summary: fluency first, then recall, then precision (only while replies parse); the paper's judge
    # model and settings unless told otherwise.
    assert {(b["model"], b["temperature"], b["max_tokens"]) for b in bodies} == {
        (scoring.JUDGE_MODEL, scoring.JUDGE_TEMPERATURE, scoring.JUDGE_MAX_TOKENS)
    }
    assert "evaluate the fluency" in asked[0]
    (results_file,) = (out / "constant").glob("results_*.json")
    results = json.loads(results_file.read_text())
    gov = results["results"]["mmlongbench_summ_govreport_8k"]
    lex = results["results"]["mmlongbench_summ_multilexsum_8k"]
    counts = results["sample_counts"]
    # GovReport: all 3 judged. Each row: recall 2 / n_claims, precision 1/4, fluency 1.
    claims = {3, 4, 5}  # the fixture's claims per document: 3, 4, 5
    expected = [100 * 2 * (2 / n * 0.25) / (2 / n + 0.25) for n in sorted(claims)]
    assert counts["mmlongbench_summ_govreport_8k"]["n_judged"] == 3
    assert gov["fluency_f1,none"] == pytest.approx(sum(expected) / 3)
    assert gov["score,none"] == gov["fluency_f1,none"] and "rougeLsum_f1,none" in gov
    # Multi-LexSum: the constant summary names case 1, so every recall reply there lacks JSON: no row is
    # judged, and the task, its category and the length average are N/A, as the official script skips them.
    assert counts["mmlongbench_summ_multilexsum_8k"]["n_judge_unparsed"] == 3
    assert "fluency_f1,none" not in lex and "score,none" not in lex
    assert results["groups"]["mmlongbench_summ_8k"]["score,none"] == "N/A"
    log = [
        json.loads(line)
        for line in (out / "constant" / "judge_mmlongbench_summ_multilexsum_8k.jsonl").read_text().splitlines()
    ]
    assert {(r["status"], r["stage"]) for r in log} == {("unparsed", "recall")}
    assert all("precision" not in r["replies"] for r in log)  # never asked after a reply without a verdict
    assert results["config"]["judge"]["model"]["served_model"] == scoring.JUDGE_MODEL
    # The judge's tokens and cost per task, as its server reported them (10 in, 3 out a call), at GPT-4o's price;
    # the constant model reported none.
    summ = ["mmlongbench_summ_govreport_8k", "mmlongbench_summ_multilexsum_8k"]
    judged = [results["cost"][task]["judge"] for task in summ]
    assert all("model" not in results["cost"][task] for task in summ)
    assert sum(j["input_tokens"] for j in judged) == 10 * len(bodies)
    assert sum(j["output_tokens"] for j in judged) == 3 * len(bodies)
    assert {j["priced_as"] for j in judged} == {"gpt-4o-2024-11-20"}
    assert sum(j["usd"] for j in judged) == pytest.approx(len(bodies) * (10 * 2.5 + 3 * 10) / 1e6)

    # Rerun: the journal answers and the cache judges; the judge server is gone and nothing changes.
    again = harness(*args)
    assert again.code == 0, again.err
    (_, second) = sorted((out / "constant").glob("results_*.json"))
    assert json.loads(second.read_text())["results"] == results["results"]


def test_without_a_judge_the_task_reports_rouge_only_and_says_why(summ_dir: Path, tmp_path: Path, harness) -> None:
    run = harness("--tasks", TASKS, "--model", "random", "--data_dir", summ_dir, "--output_path", tmp_path / "o")
    assert run.code == 0, run.err
    assert "without --judge_model their judge metrics (fluency_f1, score, score_nonempty) stay absent" in run.err
    (results_file,) = (tmp_path / "o" / "random").glob("results_*.json")
    results = json.loads(results_file.read_text())["results"]
    assert set(results["mmlongbench_summ_govreport_8k"]) == {
        "alias",
        "rougeLsum_f1,none",
        "rougeLsum_f1_stderr,none",
        "rougeLsum_f1_stderr_clustered,none",
    }


@pytest.mark.slow  # two judged runs (~2 s)
def test_a_failed_judge_call_is_recorded_for_its_sample_and_judged_on_the_rerun(
    summ_dir: Path, tmp_path: Path, harness
) -> None:
    # The three summaries are alike ("x"), so their fluency prompt is one call; the first recall call gets a 400.
    with judge_server(judge_reply, faults=["ok", "bad_request"]) as server:
        govreport = judged_run(server, GOVREPORT, summ_dir, answer="x", judge_options="api_key=a-long-test-key")
        args = (*govreport, "--output_path", tmp_path / "o")
        first = harness(*args)
        # A failed judge call is a failed sample: exit 1 unless --allow_failures, as README says.
        assert first.code == 1, first.err
        assert "the judge failed on 1 sample(s), left out of the judge metrics above" in first.err
        assert "--allow_failures" in first.err
        second = harness(*args)
        calls = len(server.received)
    files = sorted((tmp_path / "o" / "constant").glob("results_*.json"))
    counts = [json.loads(f.read_text())["sample_counts"]["mmlongbench_summ_govreport_8k"] for f in files]
    assert [(c["n_judged"], c["n_judge_error"]) for c in counts] == [(2, 1), (3, 0)]
    # First run: 1 fluency call (the three samples share its prompt: issue 30 sends it once), 3 recall calls (one
    # failed), 2 precision calls. The rerun asks only the failed sample, whose fluency reply comes from the cache:
    # its recall and precision.
    assert second.code == 0 and calls == 1 + 3 + 2 + 2


def test_a_judge_for_tasks_without_one_is_named_as_ignored(tmp_path: Path, harness) -> None:
    build_mmlongbench(source="fixture", out_dir=tmp_path / "data", configs=["vrag_infoseek_8k"])
    run = harness(
        "--tasks",
        "mmlongbench_vrag_infoseek_8k",
        "--model",
        "random",
        "--data_dir",
        tmp_path / "data",
        "--judge_model",
        "openai",
    )
    assert run.code == 0, run.err
    assert "--judge_model/--judge_args ignored: no selected task is scored by a judge" in run.err


def _judge_summaries(
    harness, summ_dir: Path, out: Path, faults: list[str], judge_args: str = "api_key=a-long-test-key"
):
    """(run, server): the GovReport summaries (the constant summary "x") judged through a server that answers
    the first judge calls with `faults`, failed samples allowed."""
    with judge_server(judge_reply, faults=faults) as server:
        govreport = judged_run(server, GOVREPORT, summ_dir, answer="x", judge_options=judge_args)
        run = harness(*govreport, "--output_path", out, "--allow_failures")
    return run, server


def test_a_run_in_which_every_judge_call_failed_exits_1(summ_dir: Path, tmp_path: Path, harness) -> None:
    # The 3 summaries' first judge calls get a 400.
    run, _ = _judge_summaries(harness, summ_dir, tmp_path / "o", ["bad_request"] * 3)
    assert run.code == 1  # not even --allow_failures accepts a run whose judge answered nothing
    assert "harness: error: every judge call of this run failed (3 sample(s)), so no judge metric was scored" in run.err
    counts = run.results("constant")["sample_counts"]["mmlongbench_summ_govreport_8k"]
    assert (counts["n_judged"], counts["n_judge_error"]) == (0, 3)


def test_a_key_the_judge_server_quotes_back_is_in_neither_the_judge_log_nor_the_cache(
    summ_dir: Path, tmp_path: Path, harness
) -> None:
    import base64
    from urllib.parse import quote

    key = "sk-judge+key/0123456789"
    # The three recall calls (after the one fluency call the alike summaries share): an error, a refusal and a reply
    # (kept by the cache), each quoting the key.
    run, server = _judge_summaries(
        harness,
        summ_dir,
        tmp_path / "o",
        ["ok", "echo_key", "echo_key_refused", "echo_key_answer"],
        f"api_key={key},concurrency=1",
    )
    assert {r.headers["authorization"] for r in server.received} == {f"Bearer {key}"}
    folder = tmp_path / "o" / "constant"
    log, cache = folder / "judge_mmlongbench_summ_govreport_8k.jsonl", folder / "cache.sqlite3"
    outcomes = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(o["status"] for o in outcomes) == ["error", "error", "unparsed"]
    assert all("<redacted>" in (o.get("error") or o["replies"]["recall"]) for o in outcomes)
    assert b"you sent Bearer <redacted>" in cache.read_bytes()  # the reply, kept for a rerun
    forms = [key, quote(key, safe=""), json.dumps(key)[1:-1], base64.b64encode(key.encode()).decode()]
    for path in [p for p in folder.rglob("*") if p.is_file()]:
        assert not any(form.encode() in path.read_bytes() for form in forms), path
    assert not any(form in run.err + run.out for form in forms)


@pytest.mark.slow  # harness runs end to end
def test_with_batch_the_judge_goes_through_the_batch_api(summ_dir: Path, tmp_path: Path, harness) -> None:
    """`--batch` sends the judge's calls as batches, a batch a stage (its journal beside the model's), and scores as
    the single calls do; the constant model, without a batch interface, answers as usual."""
    from tests.support.openai_batches import OpenAIBatchDesk

    out = tmp_path / "out"
    with judge_server(judge_reply, batches=OpenAIBatchDesk(answer=judge_reply)) as server:
        batched = judged_run(server, TASKS, summ_dir, answer=CASE_1_SUMMARY, judge_options="api_key=k,batch_poll=0.01")
        run = harness(*batched, "--output_path", out, "--batch")
    assert run.code == 0, run.err
    assert "--batch: the constant backend (model) has no batch interface" in run.err
    assert server.received == []  # no judge call went alone
    journal = [json.loads(line) for line in (out / "constant" / "batches_judge.jsonl").read_text().splitlines()]
    assert [entry["batch_id"] for entry in journal] == server.batches.created
    results = json.loads(next((out / "constant").glob("results_*.json")).read_text())
    counts = results["sample_counts"]
    assert counts["mmlongbench_summ_govreport_8k"]["n_judged"] == 3  # as with single calls (the test above)
    assert counts["mmlongbench_summ_multilexsum_8k"]["n_judge_unparsed"] == 3
    assert results["cost"]["mmlongbench_summ_govreport_8k"]["judge"]["batch"] is True


@pytest.mark.slow  # a judged run, two judged shards and merges (~4 s)
def test_merged_judged_shards_equal_the_unsharded_judged_run(summ_dir: Path, tmp_path: Path, harness) -> None:
    """The judge's metrics are not in the journal (its replies are in the response cache, its decisions in
    `judge_<task>.jsonl`): merge joins each shard's decisions to its records, so the merged Summ tasks and groups are
    the unsharded run's; a shard whose decisions are gone is one line saying to run it again."""
    with judge_server(judge_reply) as server:
        args = (*judged_run(server, TASKS, summ_dir), "--seed", "2")
        runs = [harness(*args, "--output_path", tmp_path / "full")]
        shards = [tmp_path / f"s{index}" for index in (0, 1)]
        runs += [harness(*args, "--shard", f"{index}/2", "--output_path", s) for index, s in enumerate(shards)]
        assert [run.code for run in runs] == [0, 0, 0], runs[-1].err
        merged = harness("merge", tmp_path / "m", *shards)
        assert merged.code == 0, merged.err
        expected = runs[0].results("random")
        got = json.loads(next((tmp_path / "m" / "random").glob("results_*.json")).read_text())
        for key in ("results", "groups", "sample_counts", "uncertainty", "breakdowns"):
            assert got.get(key) == expected.get(key), key
        assert "fluency_f1,none" in got["results"]["mmlongbench_summ_govreport_8k"]
        assert got["cost"] == expected["cost"]
        for task in ("mmlongbench_summ_govreport_8k", "mmlongbench_summ_multilexsum_8k"):
            log = f"random/judge_{task}.jsonl"
            assert (tmp_path / "m" / log).read_text() == (tmp_path / "full" / log).read_text()

        (shards[1] / "random" / "judge_mmlongbench_summ_govreport_8k.jsonl").unlink()
        again = harness("merge", tmp_path / "m2", *shards)
        assert again.code == 2 and "Traceback" not in again.err
        assert (
            f"{shards[1] / 'random' / 'judge_mmlongbench_summ_govreport_8k.jsonl'}: no judge decisions for "
            "mmlongbench_summ_govreport_8k (doc 1"
        ) in again.err
        assert "run that shard again (it judges from the cache, generating nothing), then merge" in again.err
