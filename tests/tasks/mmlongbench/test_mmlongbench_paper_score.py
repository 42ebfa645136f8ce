"""The paper's score of MMLongBench's API models (issue 53): `eval_api.py:97-104` (26197d2) left each row whose parsed
answer is empty out of its averages, so the paper's numbers for GPT-4o, Claude 3.7 Sonnet and the Gemini models are
that average, not the strict one that scores an empty answer wrong. A run records both (`score_nonempty`, `score`) per
task and per group, and the report compares the paper's numbers with the first and shows the second beside it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from builders.mmlongbench.build import build_mmlongbench
from tasks.mmlongbench import scoring, utils, utils_v1_1
from tasks.mmlongbench.paper_models import PAPER_MODELS
from tests.support.gemini_server import GeminiServer

VRAG = ("vrag_infoseek_8k", "vrag_viquae_8k")
VH = "niah_vh_single_8k"


@pytest.mark.parametrize(
    ("dataset", "generated", "left_out"),
    [
        ("infoseek", "", True),
        ("infoseek", "   ", True),
        ("infoseek", "Answer:", True),  # the prefix repeated, nothing after it
        ("infoseek", "\nParis", True),  # the answer on the next line: the paper's parse reads the prefix's line
        ("infoseek", " Paris", False),
        ("infoseek", "Answer: Paris", False),
        ("icl_food101", "label: ", True),  # ICL's prefix is `label:`, removed once more when repeated
        ("govreport", "\n\nThe report finds...", True),
        ("govreport", "The report finds...", False),
        ("vh_single", "", False),  # VH's parsed_output is the prefixed raw output itself: never ""
        ("vh_multi", "\n", False),
    ],
)
def test_a_row_is_left_out_where_its_parsed_answer_is_empty(dataset: str, generated: str, left_out: bool) -> None:
    prefix = {"icl_food101": "label:", "govreport": "Summary:"}.get(dataset, "Answer:")
    assert scoring.parsed_answer_is_empty(dataset, generated, prefix) is left_out
    doc = {"dataset": dataset, "answer_prefix": prefix}
    judged = scoring.with_nonempty({"fluency_f1": 40.0, "score": 40.0}, doc["dataset"], generated, prefix)
    assert ("score_nonempty" in judged) is not left_out


def test_v1_1_leaves_out_on_its_own_parse() -> None:
    """V1.1's eval_api.py keeps the rule (22b9f27:97-104) but parses to the end of the output: an answer on the line
    after the prefix is kept there, where the paper's line parse leaves it out."""
    doc = {"id": "infoseek_0#0", "dataset": "infoseek", "answer_prefix": "Answer:", "answer": '["Paris"]'}
    assert "score_nonempty" not in utils.process_results(doc, ["\nParis"])
    assert utils_v1_1.process_results(doc, ["\nParis"])["score_nonempty"] == 100.0
    assert "score_nonempty" not in utils_v1_1.process_results(doc, ["  \n "])


@pytest.mark.parametrize(
    ("summary", "kept"), [("The report finds a fault.", True), ("\nThe report finds a fault.", False)]
)
def test_a_summary_eval_api_left_out_is_judged_for_the_strict_score_alone(summary: str, kept: bool) -> None:
    """eval_gpt4_summ.py judged only the rows eval_api.py kept (`results["data"]`); the harness judges every summary
    for the strict score, and gives `score_nonempty` only to those."""
    doc = {"dataset": "govreport", "answer_prefix": "Summary:", "claims": ["a", "b"]}
    verdicts = {"fluency": {"fluency": 1}, "recall": {"recall": 1}, "precision": {"precision": 1, "sentence_count": 2}}
    metrics = utils.judge_score(doc, summary, verdicts)
    assert metrics["score"] == metrics["fluency_f1"] > 0
    assert metrics.get("score_nonempty") == (metrics["score"] if kept else None)


def test_the_api_models_declare_the_papers_score_and_the_open_ones_do_not() -> None:
    """run_api.sh ran GPT-4o, Claude 3.7 Sonnet and the four Gemini models through eval_api.py (or eval_api_batch.py);
    every other model went through eval.py, which counts every row."""
    declared = {model.alias for model in PAPER_MODELS.models if model.paper_score is not None}
    assert declared == {
        "gpt-4o",
        "claude-3.7-sonnet",
        "gemini-2.0-flash",
        "gemini-2.0-flash-thinking",
        "gemini-2.5-flash",
        "gemini-2.5-pro",
    }
    assert {model.paper_score.metric for model in PAPER_MODELS.models if model.paper_score} == {"score_nonempty"}


@pytest.fixture(scope="module")
def vrag_and_vh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mmlb_paper_score")
    build_mmlongbench(source="fixture", out_dir=root, configs=[*VRAG, VH])
    return root


def _rows(root: Path, config: str) -> list[dict[str, Any]]:
    import datasets

    return list(datasets.load_dataset(str(root / "mmlongbench"), config, split="test"))


def _text(body: dict[str, Any]) -> str:
    """A generateContent body's prompt, its images left out (what identifies the row)."""
    return "".join(p["text"] for c in body["contents"] for p in c["parts"] if "text" in p)


@pytest.mark.slow  # harness runs end to end, through google-genai and a loopback Gemini server
def test_a_gemini_run_records_the_papers_score_and_the_strict_one_and_the_report_shows_both(
    vrag_and_vh: Path, tmp_path: Path, harness
) -> None:
    """Gemini 2.5 Pro, as the paper ran it, answers each VRAG row in turn with its gold, nothing (a thinking budget
    spent), and its gold on the line after the prefix's (`"\\nParis"`), and every VH row with nothing. The strict
    score counts the first and third right and the second wrong; the paper's leaves the second and third out. VH keeps
    every row in both."""
    pytest.importorskip("google.genai")
    replies: dict[str, str] = {}
    expected: dict[str, tuple[float, float, int]] = {}  # task -> (strict, the paper's, rows the paper's keeps)
    for config in VRAG:
        rows = _rows(vrag_and_vh, config)
        texts = [row["prompt"].replace("<image>", "") for row in rows]
        # Each prompt text in turn (depth rows that differ only in their images' order share one answer).
        turn = {text: i % 3 for i, text in enumerate(dict.fromkeys(texts))}
        kinds = [turn[text] for text in texts]
        for row, text in zip(rows, texts, strict=True):
            gold = json.loads(row["answer"])[0]
            replies[text] = (gold, "", "\n" + gold)[turn[text]]
        assert {0, 1, 2} <= set(kinds)
        right = sum(1 for kind in kinds if kind != 1)
        expected[f"mmlongbench_{config}"] = (100.0 * right / len(rows), 100.0, kinds.count(0))
    server = GeminiServer(reply=lambda body: replies.get(_text(body), ""))
    server.start()
    try:
        out = tmp_path / "out"
        run = harness(
            "--tasks",
            "mmlongbench_vrag_8k,mmlongbench_niah_vh_single_8k",
            "--model",
            "gemini-2.5-pro",
            "--model_args",
            f"base_url={server.base_url},api_key=test-key,timeout=5,max_retries=1",
            "--data_dir",
            vrag_and_vh,
            "--output_path",
            out,
        )
        assert run.code == 0, run.err
    finally:
        server.stop()
    (results_file,) = (out / "gemini__gemini-2.5-pro-preview-03-25").glob("results_*.json")
    results = json.loads(results_file.read_text())
    recorded = results["config"]["alias_info"]["papers"]["mmlongbench"]["paper_score"]
    assert recorded["metric"] == "score_nonempty" and recorded["why"].startswith("eval_api.py:97-104")
    for task, (strict, paper, kept) in expected.items():
        entry = results["results"][task]
        assert (entry["score,none"], entry["score_nonempty,none"]) == (pytest.approx(strict), pytest.approx(paper))
        assert strict < paper
        assert results["uncertainty"][task]["score_nonempty"]["n"] == kept
    vrag = results["groups"]["mmlongbench_vrag_8k"]
    strict_vrag = sum(strict for strict, _, _ in expected.values()) / 2
    assert (vrag["score,none"], vrag["score_nonempty,none"]) == (pytest.approx(strict_vrag), pytest.approx(100.0))
    vh = results["results"]["mmlongbench_niah_vh_single_8k"]
    assert vh["score_nonempty,none"] == vh["score,none"]  # every empty VH answer kept, as vh_post_process keeps it
    n_empty = results["sample_counts"]["mmlongbench_niah_vh_single_8k"]["n_empty"]
    assert n_empty == 18

    assert harness("report", out).code == 0
    text = (out / "report.md").read_text()
    assert "Beside each score: the paper's for **Gemini-2.5-Pro**" in text
    left = 9 + 18 - sum(kept for _, _, kept in expected.values())
    assert "Ours is the paper's average of this model (`score_nonempty`): eval_api.py:97-104" in text
    assert f"which leaves out {left} of the {9 + 18 + 18} scored rows here" in text
    (vrag_row,) = [line for line in text.splitlines() if line.startswith("| VRAG |")]
    assert vrag_row.startswith("| VRAG | 100.0 (") and vrag_row.endswith(f" · strict {strict_vrag:.1f} |")
    (infoseek_row,) = [line for line in text.splitlines() if line.startswith("| infoseek |")]
    assert infoseek_row.startswith("| infoseek | score_nonempty | 100.0 (")
    assert infoseek_row.endswith(f" · strict {expected['mmlongbench_vrag_infoseek_8k'][0]:.1f} |")
