"""MMLongBench tasks on a fixture build: the leaves cover the builder's configs, every row scores through its
dataset's official scorer, the YAML groups aggregate as the paper does (`aggregation.category_scores`),
`harness --tasks mmlongbench_8k --model random|constant` and `--tasks mmlongbench_ablation` run end to end and
report, the ablations beside the paper's Figures 9-10."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from builders.mmlongbench.build import build_mmlongbench
from builders.mmlongbench.leaves import ABLATION_CONFIGS, BUILDABLE_CONFIGS, CONFIGS, LENGTHS, VLMEVALKIT_CONFIGS
from harness.config.task_index import TaskIndex
from tasks.mmlongbench import ablation_report, aggregation, report, scoring, utils
from tests.support.clustered_results import assert_clustered_fields
from tests.support.release_rows import release_rows

CONFIGS_8K = [name for name in CONFIGS if name.endswith("_8k")]
ABLATIONS_8K = [name for name in ABLATION_CONFIGS if name.endswith("_8k")]


@pytest.fixture(scope="module")
def mmlb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mmlb_data")
    build_mmlongbench(source="fixture", out_dir=root, configs=[*CONFIGS_8K, "vrag_infoseek_16k", *ABLATION_CONFIGS])
    return root


def test_task_leaves_and_groups_cover_exactly_the_builders_configs() -> None:
    index = TaskIndex()
    leaves = {name: cfg for name, cfg in index.tasks.items() if cfg.dataset_path == "mmlongbench"}
    assert {cfg.dataset_name for cfg in leaves.values()} == set(BUILDABLE_CONFIGS)
    # VLMEvalKit's rows have two tasks each: as VLMEvalKit scores them, and as the paper's harness would.
    as_paper = {f"mmlongbench_vlmevalkit_as_paper_{name.removeprefix('vlmevalkit_')}" for name in VLMEVALKIT_CONFIGS}
    assert set(leaves) == {f"mmlongbench_{name}" for name in BUILDABLE_CONFIGS} | as_paper
    # The ablations: their own groups (no pooled score) and report section, apart from the paper's groups.
    assert index.groups["mmlongbench_ablation"].task == [f"mmlongbench_ablation_{length}" for length in LENGTHS]
    assert index.groups["mmlongbench_ablation_8k"].task == [f"mmlongbench_{name}" for name in ABLATIONS_8K]
    assert not index.groups["mmlongbench_ablation_8k"].aggregate_metric_list
    assert {leaves[f"mmlongbench_{name}"].benchmark.spec for name in ABLATION_CONFIGS} == {"benchmark.ABLATIONS"}
    assert leaves["mmlongbench_vrag_viquae_8k"].benchmark.spec == "benchmark.BENCHMARK"
    assert not any(
        "ablation" in task
        for group in index.groups.values()
        if group.group.startswith("mmlongbench_") and "ablation" not in group.group
        for task in group.task
    )
    for length in LENGTHS:
        top = index.groups[f"mmlongbench_{length}"]
        assert top.task == [f"mmlongbench_{c}_{length}" for c in ("vrag", "niah", "icl", "summ", "docvqa")]
        assert index.groups[f"mmlongbench_mmniah_count_{length}"].task == [
            f"mmlongbench_niah_mmniah_count_text_{length}",
            f"mmlongbench_niah_mmniah_count_image_{length}",
        ]
        assert all(entry["aggregation"] == "strict_mean" for entry in top.aggregate_metric_list)
    assert index.groups["mmlongbench"].task == [f"mmlongbench_{length}" for length in LENGTHS]
    summ = leaves["mmlongbench_summ_govreport_128k"]
    assert (
        summ.generation_kwargs["max_gen_toks"] == 384
        and leaves["mmlongbench_icl_food101_8k"].generation_kwargs["max_gen_toks"] == 128
    )
    # ROUGE under its own name; Fluency-F1 (and the task's `score`) only from the judge.
    assert [m.metric for m in summ.metric_list] == ["rougeLsum_f1", "fluency_f1", "score", "score_nonempty"]
    assert summ.judge["metrics"] == ["fluency_f1", "score", "score_nonempty"]


def gold_response(row: dict) -> str:
    """What a model answering the gold perfectly would generate after the prefilled prefix."""
    gold = json.loads(row["answer"])
    if scoring.METRIC_OF_DATASET[row["dataset"]] == "mc_acc":
        return f" {'ABCDEFGHIJ'[gold]}"
    if isinstance(gold, list) and gold and isinstance(gold[0], int):
        return " " + json.dumps(gold)
    if isinstance(gold, list):
        return f" {gold[0]}"
    return f" {gold}"


@pytest.mark.slow
def test_every_8k_dataset_scores_100_for_its_gold_and_0_for_nonsense(mmlb_dir: Path) -> None:
    for config in [*CONFIGS_8K, *ABLATIONS_8K]:
        for row in release_rows(mmlb_dir, "mmlongbench", config):
            right = utils.process_results(row, [gold_response(row)])
            wrong = utils.process_results(row, [" zebra"])
            if row["category"] == "summ":
                assert set(right) == {"rougeLsum_f1"} and right["rougeLsum_f1"] > 95
                assert wrong["rougeLsum_f1"] < 5
                continue
            if row["answer_format"] == "List":  # each item scored by its own type against the whole answer
                assert 50 < right["score"] <= 100.0, (config, row["id"], right)
            else:
                assert right["score"] == 100.0, (config, row["id"], right)
            if row["dataset"].startswith("vh"):
                continue  # "zebra" is unparseable: VH substitutes its deterministic default answer
            assert wrong["score"] == 0.0, (config, row["id"], wrong)


def test_vh_uses_the_row_index_default_and_reports_the_fold() -> None:
    row = {"dataset": "vh_single", "answer_prefix": "Answer:", "answer": json.dumps("No"), "answer_format": ""}
    # Unparseable output: the official default cycle 0, 1, 1, 0 ("no", "yes", "yes", "no") by eval index.
    assert [utils.process_results({**row, "eval_index": i}, [" maybe"])["vh_acc"] for i in range(4)] == [
        100.0,
        0.0,
        0.0,
        100.0,
    ]
    assert utils.vh_folded([0.0, 0.0, 100.0]) == pytest.approx(100 - 100 / 3)
    assert utils.vh_folded([100.0, 0.0]) == 50.0


def test_random_answers_have_the_form_each_scorer_reads(mmlb_dir: Path) -> None:
    rng = random.Random(0)
    for config in [*CONFIGS_8K, *ABLATIONS_8K]:
        row = release_rows(mmlb_dir, "mmlongbench", config)[0]
        guess = utils.random_answer(row, rng)
        dataset = row["dataset"]
        if dataset.endswith(("ret_image", "reason_image")):
            assert guess.strip() in "ABCD"
        elif "count" in dataset:
            assert len(json.loads(guess)) == len(json.loads(row["answer"]))
        elif row["category"] == "icl":
            assert f"label: {guess.strip()}" in row["prompt"]
        elif dataset.startswith("vh"):
            assert guess.strip() in ("Yes", "No")
        else:
            assert guess.strip() and all(word in row["prompt"] for word in guess.split())


def _score(entry: dict) -> float | None:
    value = entry.get("score,none")
    return None if value in (None, "N/A") else float(value)


def random_run(harness, tasks: str, data_dir: Path, out: Path, configs: list[str]) -> dict:
    """`harness --tasks TASKS --model random`: the results file, checked to hold a task per config, every
    sample scored."""
    run = harness("--tasks", tasks, "--model", "random", "--data_dir", data_dir, "--output_path", out)
    assert run.code == 0, run.err
    (results_file,) = (out / "random").glob("results_*.json")
    results = json.loads(results_file.read_text())
    assert set(results["results"]) == {f"mmlongbench_{c}" for c in configs}
    for task, counts in results["sample_counts"].items():
        assert counts["n_scored"] == counts["sample_len"] > 0, task
    return results


@pytest.mark.slow
def test_random_run_end_to_end_groups_aggregate_as_the_paper(harness, mmlb_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    results = random_run(harness, "mmlongbench_8k", mmlb_dir, out, CONFIGS_8K)
    # Dataset scores as the paper's tables hold them (Summ has no Fluency-F1 without the judge) ...
    by_dataset = {}
    for config in CONFIGS_8K:
        entry = results["results"][f"mmlongbench_{config}"]
        by_dataset[CONFIGS[config].leaf.dataset] = _score(entry)
    assert by_dataset["govreport"] is None and by_dataset["infoseek"] is not None
    # ... aggregated by the paper's own rule give the groups the YAML computed.
    expected = aggregation.category_scores(by_dataset)
    groups = results["groups"]
    for category in aggregation.CATEGORIES:
        ours = _score(groups[f"mmlongbench_{category.lower()}_8k"])
        if expected[category] is None:
            assert ours is None, category
        else:
            assert ours == pytest.approx(expected[category]), category
    assert expected[aggregation.AVERAGE] is None and _score(groups["mmlongbench_8k"]) is None
    assert results["group_aggregation"]["mmlongbench_summ_8k"]["rules"]["score"]["missing"] == [
        "mmlongbench_summ_govreport_8k",
        "mmlongbench_summ_multilexsum_8k",
    ]
    niah = [_score(results["results"][f"mmlongbench_niah_{d}_8k"]) for d in ("vh_single", "vh_multi")]
    pairs = [
        (
            _score(results["results"][f"mmlongbench_niah_{a}_8k"])
            + _score(results["results"][f"mmlongbench_niah_{b}_8k"])
        )
        / 2
        for a, b in aggregation.MMNIAH_PAIRS.values()
    ]
    assert _score(groups["mmlongbench_niah_8k"]) == pytest.approx(sum(niah + pairs) / 5)
    # every task and pooled group with its clustered error (issue 48): the rows of one source id are one cluster
    assert assert_clustered_fields(results) > 40
    viquae = results["uncertainty"]["mmlongbench_vrag_viquae_8k"]["score"]
    assert (viquae["n"], viquae["n_clusters"]) == (18, 3)  # 3 ids x 6 depths
    assert results["uncertainty"]["mmlongbench_niah_8k"]["score"]["n_clusters"] == 24

    # The report: the category table, every dataset, and the score-against-length figure.
    assert harness("report", out).code == 0
    text = (out / "report.md").read_text()
    assert "### MMLongBench" in text and "| NIAH |" in text and "| slidevqa | score |" in text
    assert "The paper did not evaluate this model" in text
    assert (out / "mmlongbench_length_random.png").stat().st_size > 10_000


def test_constant_yes_scores_vh_as_the_share_of_yes_golds_folded(harness, mmlb_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = harness(
        "--tasks",
        "mmlongbench_niah_vh_single_8k,mmlongbench_vrag_infoseek_16k",
        "--model",
        "constant",
        "--model_args",
        "answer=yes",
        "--data_dir",
        mmlb_dir,
        "--output_path",
        out,
    )
    assert run.code == 0, run.err
    (results_file,) = (out / "constant").glob("results_*.json")
    results = json.loads(results_file.read_text())["results"]
    golds = [json.loads(a) for a in release_rows(mmlb_dir, "mmlongbench", "niah_vh_single_8k")["answer"]]
    share = 100 * sum(g == "Yes" for g in golds) / len(golds)
    assert results["mmlongbench_niah_vh_single_8k"]["vh_acc,none"] == pytest.approx(share)
    assert results["mmlongbench_niah_vh_single_8k"]["score,none"] == pytest.approx(max(share, 100 - share))
    assert results["mmlongbench_vrag_infoseek_16k"]["score,none"] == 0.0


def test_a_checkpoint_is_matched_to_the_papers_model_name() -> None:
    assert report.paper_model_for("Qwen/Qwen2.5-VL-7B-Instruct") == "Qwen2.5-VL-7B"
    assert report.paper_model_for("Qwen/Qwen2-VL-72B-Instruct") == "Qwen2-VL-72B"
    assert report.paper_model_for("qwen2.5-vl", "/models/gemma-3-12b-it/") == "Gemma3-12B"
    assert report.paper_model_for("OpenGVLab/InternVL3-8B-hf") == "InternVL3-8B"
    assert report.paper_model_for("random", "") is None


def test_the_published_numbers_sit_beside_a_paper_models_run(tmp_path: Path) -> None:
    from harness.outputs.results.model_results import ModelResults

    scores = {"VRAG": 70.0, "NIAH": 40.0, "ICL": 55.0, "Summ": 20.0, "DocVQA": 30.0}
    data = ModelResults(
        groups={
            **{f"mmlongbench_{c.lower()}_128k": {"score,none": v} for c, v in scores.items()},
            "mmlongbench_128k": {"score,none": sum(scores.values()) / 5},
        }
    )
    lines = report.section("Qwen/Qwen2.5-VL-7B-Instruct", data, tmp_path)
    published = aggregation.load_paper_results()
    paper_vrag = published[("Qwen2.5-VL-7B", "VRAG", 131072)]
    # No data recorded for these groups: the verdict beside the paper's number is "not comparable" (–).
    assert any(line == f"| VRAG | 70.0 ({paper_vrag:.1f}) – |" for line in lines), lines
    assert not math.isnan(paper_vrag) and "Qwen2.5-VL-7B" in "\n".join(lines)


@pytest.mark.slow
def test_the_ablation_group_runs_on_the_offline_fixture_and_reports(harness, mmlb_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    results = random_run(harness, "mmlongbench_ablation", mmlb_dir, out, list(ABLATION_CONFIGS))
    assert harness("report", out).code == 0
    text = (out / "report.md").read_text()
    section = text[text.index("### MMLongBench ablations") :]
    assert "The paper reports no ablation numbers for this model." in section
    triviaqa = results["results"]["mmlongbench_ablation_triviaqa_8k"]["score,none"]
    assert f"| triviaqa | `triviaqa`: ViQuAE, entity named (text only) | sub_em | {triviaqa:.1f} |" in section
    assert "| text_doc | `text_doc`: MMLongBench-Doc, OCR text | docvqa_score |" in section
    assert "### MMLongBench\n" not in text  # the benchmark's own section: only for its own tasks


def test_the_papers_ablation_numbers_sit_beside_a_paper_models_run(tmp_path: Path) -> None:
    from harness.outputs.results.model_results import ModelResults

    data = ModelResults(
        results={
            "mmlongbench_ablation_triviaqa_8k": {"score,none": 61.0},
            "mmlongbench_ablation_text_doc_128k": {"score,none": 20.0},
            "mmlongbench_ablation_occ_vrag_viquae_8k": {"score,none": 12.5},
        }
    )
    published = ablation_report.load_ablation_results()
    assert len(published) == 50  # Figures 9 (MMLB-Doc, All) and 10: 10 rows x 5 lengths
    vlm = "\n".join(ablation_report.section("Qwen/Qwen2.5-VL-7B-Instruct", data, tmp_path))
    assert published[("Qwen2.5-VL-7B", "triviaqa", 8192)] == ("w/ name", 70.8)
    assert (
        "| triviaqa | `triviaqa`: ViQuAE, entity named (text only) (paper: w/ name, Figure 10) | sub_em | 61.0 (70.8) |  |"
        in vlm
    )
    assert (
        "| text_doc | `text_doc`: MMLongBench-Doc, OCR text (paper: w/ OCR, Figure 9) | docvqa_score |  | 20.0 (21.1) |"
        in vlm
    )
    # The same model on the images, as each figure shows it (Figures 23 and 26).
    assert "| ↳ paper, on the images | ViQuAE, Qwen2.5-VL-7B | | (54.8) | (22.5) |" in vlm
    assert "| occ_vrag_viquae | `occ_vrag`: ViQuAE, gold passages removed | sub_em | 12.5 |  |" in vlm
    llm = "\n".join(ablation_report.section("Qwen/Qwen2.5-32B-Instruct", data, tmp_path))
    assert "(paper: w/ LLM, Figure 10) | sub_em | 61.0 (86.0) |" in llm and "on the images" not in llm
    assert "no ablation numbers" in "\n".join(ablation_report.section("Qwen/Qwen2-VL-7B-Instruct", data, tmp_path))


def test_qwen25_vl_at_128k_is_screened_as_the_paper_ran_it(harness, tmp_path: Path) -> None:
    """A 128K VH row of ~130K counted tokens: sent under the alias (no context cap, as the official code had none;
    no pixel cap), over_length under a context_length the user gives; `--screen_only` decides it without loading
    the model."""
    import io
    import shutil

    from PIL import Image

    from builders.mmlongbench.fixture import write_fixture

    release = write_fixture(tmp_path / "release")
    big = io.BytesIO()
    Image.new("RGB", (1000, 1000), (90, 120, 200)).save(big, format="JPEG")
    (release / "mmlb_image" / "vh" / "haystack" / "big.jpg").write_bytes(big.getvalue())
    row = {
        "id": "vh_big",
        "question": "For the image with a cat, is there a dog?",
        "answer": "No",
        "ctxs": ["vh/haystack/big.jpg"] * 100,
    }  # 100 x 1,296 tokens: one image stored once
    (release / "mmlb_data" / CONFIGS["niah_vh_single_128k"].file).write_text(json.dumps(row) + "\n")
    data = tmp_path / "data"
    build_mmlongbench(source=str(release), out_dir=data, configs=["niah_vh_single_128k"])
    shutil.rmtree(release)

    task = "mmlongbench_niah_vh_single_128k"
    run = harness("--tasks", task, "--model", "qwen2.5-vl", "--data_dir", data, "--screen_only")
    assert run.code == 0, run.err
    assert "no_context_limit" in run.out and "1 of 1 samples would be sent to the model" in run.out
    (line,) = [line for line in run.out.splitlines() if line.startswith(f"| {task} |")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[1:6] == ["1", "1", "0", "0", "0"] and cells[7] == "100"
    assert 100 * 1296 + 128 < int(cells[6].replace(",", "")) <= 131072 + 128  # prompt + max_gen_toks
    capped = harness(
        "--tasks",
        task,
        "--model",
        "qwen2.5-vl",
        "--model_args",
        "context_length=32768",
        "--data_dir",
        data,
        "--screen_only",
    )
    assert "0 of 1 samples would be sent to the model; 1 screened out; prompts of " in capped.out
    assert "> context 32768" in capped.out
