"""A judge swapped (issue 61, item 5): MMLongBench's judged rows (the paper's Summ, judged by GPT-4o, as the demo runs
them, and V1.1's DocVQA, judged by Doubao-Seed-1.8) answered once, judged by one loopback judge server, then rescored
from the same journal by another server that grades differently; `harness compare` of the two runs says they share
replies but not the judge, and gives each judge metric's kappa and alpha with cluster-bootstrap intervals, the confusion
table and the paired difference, each checked against statsmodels and the `krippendorff` package on the judge logs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from statsmodels.stats.inter_rater import cohens_kappa

from builders.mmlongbench.build import build_mmlongbench
from harness.config.task_config import MetricSpec
from harness.config.task_index import TaskIndex
from harness.errors import UserError
from harness.outputs.compare.judge_agreement import measurement_of, swapped_pairs
from harness.outputs.compare.paired_runs import TaskJournal, pair_task
from harness.run.cli import main
from harness.running.task.judge_log import read_judge_log
from harness.running.task.task import Task
from tests.support.chat_server import ChatServer

CONFIGS = [f"v1_1_docvqa_{d}_8k" for d in ("longdocurl", "mmlongbench_doc", "slidevqa")]
CONFIGS += ["summ_govreport_8k", "summ_multilexsum_8k"]
DOCVQA = [f"mmlongbench_{c}" for c in CONFIGS[:3]]
SUMM = ["mmlongbench_summ_govreport_8k", "mmlongbench_summ_multilexsum_8k"]
TASKS = "mmlongbench_v1_1_docvqa_8k,mmlongbench_summ_8k"


def _prompt(body: dict[str, Any]) -> str:
    (message,) = body["messages"]
    return message["content"] if isinstance(message["content"], str) else message["content"][0]["text"]


def _judge(lenient: bool):
    """A judge server's replies: DocVQA's point where the current case's gold is 3 (the lenient judge also gives it for
    12.5, and covers both items of a list where the other covers one); Summ's recall of 1 claim (the lenient: 2)."""

    def reply(body: dict[str, Any]) -> str:
        prompt = _prompt(body)
        if "<Standard Answer>:" in prompt:
            case = prompt.rsplit("<Standard Answer>:", 1)[1]
            if "LIST-style" in prompt:
                return f'[JSON]:\n{{"student_answer_count": 2, "covered_count": {2 if lenient else 1}}}'
            gold = case.split("\n", 1)[0].strip()
            return "[Score]: 1 point" if gold == "3" or (lenient and gold == "12.5") else "[Score]: 0 points"
        if "evaluate the fluency" in prompt:
            return '{"fluency": 1}'
        if "Key points:" in prompt:
            return f'{{"recall": {2 if lenient else 1}}}'
        return '{"precision": 1, "sentence_count": 2}'

    return reply


def _run_judged(data: Path, out: Path, lenient: bool) -> str:
    server = ChatServer(answer=_judge(lenient))
    server.start()
    try:
        argv = ["--tasks", TASKS, "--model", "constant", "--model_args", 'answer=" 3"', "--data_dir", str(data)]
        argv += [
            "--output_path",
            str(out),
            "--judge_model",
            "openai",
            "--judge_args",
            f"base_url={server.base_url},api_key=k",
        ]
        assert main([*argv, "--no_progress"]) == 0
        return server.base_url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def swap(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("judge_swap")
    build_mmlongbench(source="fixture", out_dir=root / "data", configs=CONFIGS)
    url_a = _run_judged(root / "data", root / "a", lenient=False)
    shutil.copytree(root / "a", root / "b")  # the rescoring: the same journal, another judge
    journals = {p.name: p.read_bytes() for p in (root / "b" / "constant").glob("journal_*.jsonl")}
    url_b = _run_judged(root / "data", root / "b", lenient=True)
    assert {p.name: p.read_bytes() for p in (root / "b" / "constant").glob("journal_*.jsonl")} == journals
    assert main(["compare", str(root / "a"), str(root / "b"), "--out", str(root / "cmp")]) == 0
    compared = json.loads((root / "cmp" / "compare.json").read_text())
    return {
        "root": root,
        "url_a": url_a,
        "url_b": url_b,
        "json": compared,
        "md": (root / "cmp" / "compare.md").read_text(),
    }


def _judged(root: Path, side: str, task: str, metric: str) -> dict[str, float]:
    lines = (root / side / "constant" / f"judge_{task}.jsonl").read_text().splitlines()
    return {r["sample_id"]: r["metrics"][metric] for r in map(json.loads, lines) if metric in r.get("metrics", {})}


def _pooled(swap: dict[str, Any], tasks: list[str], metric: str) -> tuple[dict, np.ndarray, np.ndarray]:
    (row,) = [r for r in swap["json"]["agreement"] if r["tasks"] == tasks and r["metric"] == metric]
    a = {(t, s): v for t in tasks for s, v in _judged(swap["root"], "a", t, metric).items()}
    b = {(t, s): v for t in tasks for s, v in _judged(swap["root"], "b", t, metric).items()}
    ids = sorted(a.keys() & b.keys())
    return row, np.array([a[i] for i in ids]), np.array([b[i] for i in ids])


@pytest.mark.slow  # two judged runs and a comparison (~20 s)
def test_a_judge_swap_reports_kappa_and_alpha_with_intervals(swap: dict[str, Any]) -> None:
    md = swap["md"]
    # One line says the runs share replies but not the judge, naming each judge (the same model, two servers).
    lines = [line for line in md.splitlines() if line.startswith("- **Same replies, another judge**")]
    assert len(lines) == 2
    docvqa_line, summ_line = sorted(lines, key=lambda line: "summ" in line)
    assert all(f"`{t}`" in docvqa_line for t in DOCVQA) and all(f"`{t}`" in summ_line for t in SUMM)
    assert f"Doubao-Seed-1.8 at {swap['url_a']} in A and by Doubao-Seed-1.8 at {swap['url_b']} in B" in docvqa_line
    assert f"gpt-4o-2024-11-20 at {swap['url_a']} in A" in summ_line
    # kappa and alpha with their intervals, in the printed table.
    table = md.split("## Judge agreement", 1)[1]
    pooled = next(
        line for line in table.splitlines() if line.startswith("| `3 tasks` | doc_qa_llm, score, score_nonempty")
    )
    assert len(re.findall(r"\[-?\d\.\d{3}, -?\d\.\d{3}\]", pooled)) == 2

    # DocVQA's judge metric over the three tasks' 15 rows: kappa and alpha are statsmodels' and krippendorff's on
    # what the two judge logs hold, the level `interval` from its `mean` aggregation.
    row, a, b = _pooled(swap, DOCVQA, "doc_qa_llm")
    assert row["n"] == len(a) == 15 and row["measurement"] == "interval" and "`mean`" in row["measurement_from"]
    assert row["values"] == [0.0, 50.0, 100.0] and row["table"] == [[6, 0, 3], [0, 0, 3], [0, 0, 3]]
    expected_kappa = cohens_kappa(np.array(row["table"]), weights=np.array(row["values"]), wt="quadratic")
    assert row["kappa"] == pytest.approx(expected_kappa.kappa) and row["kappa_weights"] == "quadratic"
    assert row["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=[a, b], level_of_measurement="interval"))
    assert row["kappa_low"] < row["kappa_high"] and row["alpha_low"] < row["alpha_high"]
    # The swap's difference, paired: 30 points by the strict judge, 60 by the lenient; the same in the group's row.
    assert (row["value_a"], row["value_b"], row["difference"]) == pytest.approx((30.0, 60.0, -30.0))
    assert row["difference_low"] < -30 < row["difference_high"]
    (group,) = [r for r in swap["json"]["rows"] if r["name"] == "mmlongbench_v1_1_docvqa_8k" and r["metric"] == "score"]
    assert group["difference"] == pytest.approx(-30.0)

    # The demo's judged rows, Summ's Fluency-F1: a continuous score, no two rows alike.
    row, a, b = _pooled(swap, SUMM, "fluency_f1")
    assert row["n"] == 6 and row["equal"] == 0.0 and row["difference"] == pytest.approx(float(np.mean(a - b)))
    assert row["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=[a, b], level_of_measurement="interval"))
    per_task = [r for r in swap["json"]["agreement"] if r["tasks"] == [SUMM[0]] and r["metric"] == "fluency_f1"]
    assert per_task[0]["n"] == 3 and per_task[0]["judge_a"] != per_task[0]["judge_b"]


@pytest.mark.slow
def test_the_same_judge_twice_is_its_agreement_with_itself(swap: dict[str, Any]) -> None:
    root = swap["root"]
    shutil.copytree(root / "a", root / "a_again")
    assert main(["compare", str(root / "a"), str(root / "a_again"), "--out", str(root / "cmp_same")]) == 0
    compared = json.loads((root / "cmp_same" / "compare.json").read_text())
    docvqa = [r for r in compared["agreement"] if r["tasks"] == DOCVQA and r["metric"] == "doc_qa_llm"]
    assert docvqa[0]["same_judge"] and docvqa[0]["kappa"] == docvqa[0]["alpha"] == 1.0
    assert "in both runs: its agreement with itself" in (root / "cmp_same" / "compare.md").read_text()


@pytest.mark.slow
def test_each_column_of_the_agreement_table_holds_one_scale(swap: dict[str, Any]) -> None:
    """A and B on report.md's 0-100 scale with one decimal, as compare.md's other tables; a judge metric on no such
    scale (here a count of 3 and 5 on a task no benchmark declares) is a table of its own, as recorded (issue 76)."""
    from harness.outputs.compare.compare_md import comparison_lines

    counted = dict(swap["json"]["agreement"][0], tasks=["a_task_on_no_scale"], name="a_task_on_no_scale")
    counted.update(metric="judged_count", value_a=3.0, value_b=5.0, difference=-2.0)
    compared = dict(swap["json"], agreement=[*swap["json"]["agreement"], counted])
    text = "\n".join(comparison_lines(compared))  # type: ignore[arg-type]
    scaled, recorded = text.split("## Judge agreement", 1)[1].split("## Judge agreement: other numbers, as recorded")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in scaled.splitlines() if line.startswith("| `")]
    assert len(rows) == 7 and all(re.fullmatch(r"\d+\.\d", v) for row in rows for v in row[10:12])
    (row,) = [line for line in recorded.splitlines() if line.startswith("| `")]
    assert [c.strip() for c in row.strip("|").split("|")][10:13] == ["3", "5", "-2.0000"]


def _journal(task: str, responses: list[str], judge: dict[str, object] | None) -> TaskJournal:
    records = {
        f"s{i}": {
            "doc_id": i,
            "sample_id": f"s{i}",
            "status": "ok",
            "response": text,
            "metrics": {"doc_qa_llm": 100.0 * (i % 2)},
        }
        for i, text in enumerate(responses)
    }
    return TaskJournal(Path(f"journal_{task}.jsonl"), {}, records, judge)


def test_no_agreement_where_the_replies_differ_or_a_run_was_not_judged() -> None:
    task = Task(TaskIndex().tasks[DOCVQA[2]])
    one, other = {"model": "openai", "server": "http://127.0.0.1:1/v1"}, {"model": "openai", "server": "http://h:2/v1"}
    same = pair_task(task.name, _journal(task.name, ["3", "4"], one), _journal(task.name, ["3", "4"], other))
    assert [p.metric for p in swapped_pairs(task, same)] == ["doc_qa_llm"]  # the judge metric the rows have
    other_replies = pair_task(task.name, _journal(task.name, ["3", "4"], one), _journal(task.name, ["3", "5"], other))
    assert swapped_pairs(task, other_replies) == []  # another model's answers: the judges read different things
    unjudged = pair_task(task.name, _journal(task.name, ["3", "4"], one), _journal(task.name, ["3", "4"], None))
    assert swapped_pairs(task, unjudged) == []


def test_the_level_of_measurement_is_the_metric_s_declaration() -> None:
    assert measurement_of(MetricSpec("rating", "mean"), "t.yaml")[0] == "interval"
    assert measurement_of(MetricSpec("rating", "mean", kwargs={"level_of_measurement": "ordinal"}), "t.yaml") == (
        "ordinal",
        "declared (`level_of_measurement: ordinal`)",
    )
    with pytest.raises(UserError, match=r"t.yaml: metric 'rating': `level_of_measurement` must be one of nominal"):
        measurement_of(MetricSpec("rating", "mean", kwargs={"level_of_measurement": "likert"}), "t.yaml")


@pytest.mark.slow
def test_a_judge_log_missing_or_outside_the_folder_is_said_and_left_out(
    swap: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    root = swap["root"]
    shutil.copytree(root / "b", root / "b_logs")
    folder = root / "b_logs" / "constant"
    (folder / f"judge_{DOCVQA[0]}.jsonl").unlink()
    outside = root / "elsewhere.jsonl"  # a log planted as a link out of the results folder is not read
    shutil.move(folder / f"judge_{DOCVQA[1]}.jsonl", outside)
    (folder / f"judge_{DOCVQA[1]}.jsonl").symlink_to(outside)
    capsys.readouterr()
    assert main(["compare", str(root / "a"), str(root / "b_logs"), "--out", str(root / "cmp_logs")]) == 0
    err = capsys.readouterr().err
    for task in DOCVQA[:2]:
        assert f"judge_{task}.jsonl: unreadable judge log" in err
    compared = json.loads((root / "cmp_logs" / "compare.json").read_text())
    judged = {t for r in compared["agreement"] for t in r["tasks"]}
    assert judged == {DOCVQA[2], *SUMM}
    assert not any(r["name"] in DOCVQA[:2] and r["metric"] == "doc_qa_llm" for r in compared["rows"])


def test_a_judge_log_s_unreadable_lines_are_left_out(tmp_path: Path) -> None:
    good = {"sample_id": "s1", "doc_id": 0, "status": "judged", "stage": "judge", "metrics": {"score": 100.0}}
    unparsed = {"sample_id": "s2", "doc_id": 1, "status": "unparsed", "replies": {"judge": "?"}}
    lines = [json.dumps(good), "not json", json.dumps({**good, "sample_id": 3}), json.dumps(unparsed)]
    lines += [json.dumps({**good, "sample_id": "s4", "metrics": {"score": "high"}}), "[" * 100_000, "\xff", ""]
    path = tmp_path / "judge_t.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8", errors="surrogateescape")
    found = read_judge_log(path)
    assert found == {"s1": good, "s2": unparsed}
