"""MMLongBench's text-only LLM ablation ("w/ LLM", Figures 9-10; issue 51 item 4), end to end: the ablation fixture's
text sets located by their `fit_context` hook (`tasks/mmlongbench/context.py`), run through `harness` with the
`qwen2.5-7b-instruct` alias on a tiny random Qwen2 causal LM, its long contexts cut as the official text-only wrapper
cuts them (a reimplementation of `vlm_model/text_only_model.py`, `tests/support/official_text_only.py`), and `harness
report` showing the paper's "w/ LLM" row beside the run."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest

from builders.mmlongbench.build import build_mmlongbench
from builders.mmlongbench.fixture import write_fixture
from tasks.mmlongbench.context import fit_context
from tests.support.official_text_only import PASSAGE, TEXT_RAG_USER, tokenize
from tests.support.tiny_qwen2_text import build_tiny_qwen2_text, tiny_qwen2_tokenizer

FILLER = "harbour copper orchard ember falcon saffron lagoon meadow glacier canyon willow prairie velvet quartz marble"
TASKS = ("mmlongbench_ablation_triviaqa_8k", "mmlongbench_ablation_text_doc_8k")


def long_release(root: Path) -> tuple[Path, list[dict[str, object]]]:
    """The fixture release with 400 more passages in each ViQuAE 8K row: past 8K tokens, so that the fit cuts."""
    release = write_fixture(root)
    viquae = release / "mmlb_data" / "vrag" / "viquae_K8_dep6.jsonl"
    rows = [json.loads(line) for line in viquae.read_text().splitlines()]
    for row in rows:
        row["ctxs"] += [{"doc_id": f"filler-{k}", "title": f"Filler {k}", "text": FILLER} for k in range(400)]
    viquae.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return release, rows


def official_sample(row: dict[str, object]) -> dict[str, str]:
    """The official `load_text_rag` sample of a release row (data.py:141-148): its context and question."""
    ctxs = row["ctxs"]
    assert isinstance(ctxs, list)
    return {"context": "\n\n".join(PASSAGE.format(**c) for c in ctxs), "question": str(row["original_question"])}


def test_the_hook_locates_the_text_sets_context_and_refuses_another_prompt(tmp_path: Path) -> None:
    data = tmp_path / "data"
    build_mmlongbench(source="fixture", out_dir=data, configs=["ablation_triviaqa_8k", "ablation_text_doc_8k"])
    for config in ("ablation_triviaqa_8k", "ablation_text_doc_8k"):
        for row in datasets.load_dataset(str(data / "mmlongbench"), config, split="test"):
            found = fit_context(row)
            assert found["length"] == 8192 and isinstance(found["context"], str)
            assert row["prompt"].index(found["context"]) < row["prompt"].rindex("\n\nQuestion: ")
            assert found["context"].startswith("Document ")
            assert row["prompt"].endswith(
                row["prompt"][row["prompt"].index(found["context"]) + len(found["context"]) :]
            )
    with pytest.raises(ValueError, match="its prompt is not the text_rag template filled"):
        fit_context({"id": "x", "dataset": "triviaqa", "prompt": "Something else", "length": 8192})
    with pytest.raises(ValueError, match="has no text context to fit"):
        fit_context({"id": "x", "dataset": "viquae", "prompt": "", "length": 8192})


@pytest.mark.slow
def test_the_text_llm_runs_the_ablations_cut_as_the_paper_and_the_report_shows_its_row(harness, tmp_path: Path) -> None:
    release, rows = long_release(tmp_path / "release")
    data = tmp_path / "data"
    build_mmlongbench(source=str(release), out_dir=data, configs=["ablation_triviaqa_8k", "ablation_text_doc_8k"])
    checkpoint = build_tiny_qwen2_text(tmp_path / "Qwen2.5-7B-Instruct")  # its folder names the paper's model
    out = tmp_path / "results"
    args = [
        "--tasks",
        ",".join(TASKS),
        "--model",
        "qwen2.5-7b-instruct",
        "--model_args",
        f"pretrained={checkpoint},threads=1",
        "--data_dir",
        data,
    ]
    screen = harness(*args, "--screen_only", "--limit", "2")
    assert screen.code == 0, screen.err
    run = harness(*args, "--output_path", out, "--log_samples", "--limit", "2")
    assert run.code == 0, run.err
    assert "departing from the paper" not in run.err  # the tasks the paper ran its LLM on
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    results = json.loads(sorted(folder.glob("results_*.json"))[-1].read_text())
    config = results["config"]
    assert config["model_args"]["text_only"] == "true" and config["model_args"]["yarn_factor"] == "4"
    assert config["alias_info"]["papers"]["mmlongbench"]["status"] == "as the paper"
    assert config["backend_stats"]["text_only_fit"]["requests_cut"] == 2  # both ViQuAE rows were over 8K

    tokenizer = tiny_qwen2_tokenizer()
    (log,) = folder.glob("samples_mmlongbench_ablation_triviaqa_8k_*.jsonl")
    lengths = []
    for record in map(json.loads, log.read_text().splitlines()):
        doc = record["doc"]
        # The release row the sample was built from: its prompt is the official template filled with that row.
        matches = [r for r in rows if TEXT_RAG_USER.format(**official_sample(r)) == doc["prompt"]]
        assert matches, doc["id"]
        official_prompt, official_ids = tokenize(tokenizer, official_sample(matches[0]), 8192, 128)
        sent = record["arguments"]["gen_args_0"]["arg_0"]
        assert sent == official_prompt  # cut where the official wrapper cut it, to the character
        uncut = tokenizer(tokenize(tokenizer, official_sample(matches[0]), 10**6, 128)[0], add_special_tokens=False)
        assert len(official_ids) <= 8192 - 128 < len(uncut.input_ids)
        lengths.append(len(official_ids))
    # `--screen_only` counted what the run sent, exactly, cut included.
    (line,) = [line for line in screen.out.splitlines() if line.startswith(f"| {TASKS[0]} |")]
    assert line.endswith(f"| exact | {min(lengths):,}-{max(lengths):,} |"), line
    (doc_log,) = folder.glob("samples_mmlongbench_ablation_text_doc_8k_*.jsonl")
    assert all(
        "Question: Based on Document" in json.loads(line)["arguments"]["gen_args_0"]["arg_0"]
        for line in doc_log.read_text().splitlines()
    )

    report = harness("report", out)
    assert report.code == 0, report.err
    text = (out / "report.md").read_text()
    assert "the paper's for **Qwen2.5-7B-Instruct**" in text
    assert "(paper: w/ LLM, Figure 10) | sub_em |" in text and "(65.3) |" in text  # Figure 10, 7B at 8K
    assert "(paper: w/ LLM, Figure 9) | docvqa_score |" in text and "(45.4) |" in text  # Figure 9, 7B at 8K
