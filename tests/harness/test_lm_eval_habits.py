"""What an lm-eval user types works here: its flags (`--batch_size auto`, `--predict_only`, `--system_instruction`,
`--write_out`, `--apply_chat_template`, `--verbosity`, `--hf_hub_log_args`), its Python API (`simple_evaluate`), and
its `make_table` on our results (scored top groups, no constant among the metrics)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from builders.locovqa import build_locovqa
from builders.mmneedle import build_mmneedle
from harness import simple_evaluate
from harness.errors import UserError
from harness.models.shared.scheduling.auto_batch import FittingBatchSize, is_out_of_memory
from tests.support.hf_runs import hf_run
from tests.support.results_runs import harness_run
from tests.support.run_setups import checkpoint_folder, run_args

K1_POSITIVES = ["m1_n2_k1", "m1_n4_k1", "m1_n8_k1", "m10_n1_k1", "m10_n2_k1", "m10_n4_k1", "m10_n8_k1"]


@pytest.fixture(scope="module")
def needle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every MMNeedle config, one positive and one negative each (the real builder, synthetic source)."""
    root = tmp_path_factory.mktemp("mmneedle_all")
    build_mmneedle(source="synthetic", out_dir=root, configs=None, limit=1, seed=0, num_proc=1)
    return root


@pytest.fixture(scope="module")
def locovqa_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The random baseline's results on two LoCoVQA configs (MMStar: chance 1/4; the needle: 1/10)."""
    root = tmp_path_factory.mktemp("locovqa")
    build_locovqa(["synthetic"], root / "data", ["mmstar_cmp_1", "needle_int_4"], limit=2, cell_size=16, num_proc=1)
    return harness_run(root / "out", root / "data", "locovqa_mmstar_cmp_1,locovqa_needle_int_4", "random")


def results_file(folder: Path) -> dict:
    return json.loads(sorted(folder.glob("results_*.json"))[-1].read_text())


def table_rows(table: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.split("|")[1:-1]] for line in table.splitlines()[2:] if line.strip()]


@pytest.mark.slow  # two runs of every k1 config
def test_predict_only_with_batch_size_auto_journals_unscored_answers_that_a_later_run_scores(
    harness, needle_dir: Path, tmp_path: Path
) -> None:
    every_k1 = run_args("mmneedle_k1", "random", data_dir=needle_dir, out=tmp_path)
    run = harness(*every_k1, "--batch_size", "auto", "--predict_only")
    assert run.code == 0, run.err
    assert "--batch_size auto: random pads no batch in device memory" in run.err
    predicted = results_file(tmp_path / "random")
    assert "not scored" in predicted["predict_only"] and predicted["config"]["predict_only"] is True
    assert predicted["config"]["batch_size"] == "auto" and predicted["config"]["batch_sizes"] == []
    assert all(set(entry) == {"alias"} for entry in [*predicted["results"].values(), *predicted["groups"].values()])
    journal = run.samples("random", "mmneedle_m1_n2_k1_pos")
    assert journal and all("metrics" not in record and record["response"] for record in journal)
    assert len(list((tmp_path / "random").glob("samples_mmneedle_*.jsonl"))) == 14  # lm-eval: implies --log_samples

    scored = harness(*every_k1)
    assert scored.code == 0, scored.err
    assert "harness: 14 samples resumed from the journal, 0 generated now (14 of 14 tasks)" in scored.err  # one line
    results = results_file(tmp_path / "random")
    assert "predict_only" not in results
    exact = [results["results"][f"mmneedle_{c}_pos"]["exact_acc,none"] for c in K1_POSITIVES]
    assert results["groups"]["mmneedle_k1"]["exact_acc_pos,none"] == pytest.approx(sum(exact) / len(exact))
    answers = {r["sample_id"]: r["response"] for r in journal}
    assert {r["sample_id"]: r["response"] for r in scored.samples("random", "mmneedle_m1_n2_k1_pos")} == answers


def test_predict_only_needs_an_output_path_and_a_bad_batch_size_is_named(harness, needle_dir: Path) -> None:
    run = harness("--tasks", "mmneedle_k1", "--model", "random", "--predict_only", "--data_dir", needle_dir)
    assert run.code == 2 and "--predict_only needs --output_path" in run.err
    run = harness("--tasks", "mmneedle_k1", "--model", "random", "--batch_size", "big")
    assert run.code == 2 and run.err.startswith("harness: error: argument --batch_size: ") and run.err.count("\n") == 1


@pytest.mark.slow  # lm-eval imported and its table made (~2 s)
def test_lm_eval_make_table_shows_scored_top_groups_and_no_chance_metric(
    harness, needle_dir: Path, locovqa_run: Path, tmp_path: Path
) -> None:
    make_table = pytest.importorskip("lm_eval.utils").make_table
    assert harness(*run_args("mmneedle", "random", data_dir=needle_dir, out=tmp_path)).code == 0
    results = results_file(tmp_path / "random")
    rows = table_rows(make_table(results, "groups"))
    # lmms-eval's `<metric>_stderr_clustered` key: lm-eval's table shows it as a row of that name (lmms-eval's, as a
    # column); the clusters and design effect behind it are kept apart, under `uncertainty`, where no table reads them
    clustered = [row for row in rows if row[4].endswith("_stderr_clustered")]
    assert {row[4] for row in clustered} == {"exact_acc_pos_stderr_clustered", "existence_acc_neg_stderr_clustered"}
    assert not any(row[4].startswith(("n_clusters", "design_effect")) for row in rows)
    assert all(not row[0] for row in clustered)  # each below its metric's row, which names the group
    rows = [row for row in rows if row not in clustered]
    assert rows[0][0] == "mmneedle" and rows[0][4] in ("exact_acc_pos", "existence_acc_neg")
    top = {row[4] for row in rows[:2]}
    assert top == {"exact_acc_pos", "existence_acc_neg"}
    assert [row[0] for row in rows if row[0]] == ["mmneedle", "- mmneedle_k1", "- mmneedle_k2", "- mmneedle_k5"]
    assert float(rows[0][6]) == pytest.approx(results["groups"]["mmneedle"][f"{rows[0][4]},none"], abs=1e-4)

    results = results_file(locovqa_run / "random")
    metrics = {row[4] for row in table_rows(make_table(results))}
    assert "accuracy" in metrics and "chance" not in metrics
    assert results["references"] == {
        "locovqa_mmstar_cmp_1": {"chance": pytest.approx(0.25)},
        "locovqa_needle_int_4": {"chance": pytest.approx(0.1)},
    }
    assert "chance" not in results["higher_is_better"]["locovqa_mmstar_cmp_1"]


def test_the_locovqa_report_reads_chance_where_older_results_files_kept_it(locovqa_run: Path, tmp_path: Path) -> None:
    from harness.outputs.results.model_results import load_results
    from tasks.locovqa.series import series

    results = results_file(locovqa_run / "random")
    for task, levels in results.pop("references").items():  # as written before `references`: among the metrics
        results["results"][task].update({f"{name},none": value for name, value in levels.items()})
    (tmp_path / "random").mkdir()
    (tmp_path / "random" / "results_old.json").write_text(json.dumps(results))
    old, new = (series(load_results(folder)["random"]) for folder in (tmp_path, locovqa_run))
    assert [c.chance for c in old] == [c.chance for c in new]
    assert {round(c.chance[0], 9) for c in new} == {0.1, 0.25}


def test_system_instruction_is_the_first_system_text_recorded_and_written_out(needle_run, tmp_path: Path) -> None:
    flags = ("--system_instruction", "Think step by step.", "--write_out", "--apply_chat_template", "--log_samples")
    run = needle_run("mmneedle_m1_n2_k1_pos", "random", tmp_path, "--limit", "2", *flags)
    assert run.code == 0, run.err
    assert run.err.count("--- mmneedle_m1_n2_k1_pos, document ") == 2
    assert "[system] Think step by step.\n[user] <image>Given 1 image" in run.err
    results = results_file(tmp_path / "random")
    assert results["config"]["system_instruction"] == "Think step by step."
    (log,) = (tmp_path / "random").glob("samples_*.jsonl")
    prompt = json.loads(log.read_text().splitlines()[0])["arguments"]["gen_args_0"]["arg_0"]
    assert prompt.startswith("[system] Think step by step.\n[user] <image>")


def test_system_instruction_comes_before_a_tasks_system_prompt_and_keys_the_cache(data_dir: Path) -> None:
    from harness.config.task_index import TaskIndex
    from harness.inputs.prompts import with_system_instruction
    from harness.running.cache import request_key
    from harness.running.task.task import Task

    config = TaskIndex().tasks["mmneedle_m1_n2_k1_pos"]
    plain, instructed = Task(config), Task(config, system_instruction="Be brief.")
    for task in (plain, instructed):
        task.load(data_dir, 1)
    settings = plain.generation_settings()
    first, second = (t.build_request(0, t.doc(0), settings) for t in (plain, instructed))
    assert [m.role for m in second.messages] == ["system", "user"] and second.messages[1] == first.messages[0]
    assert request_key({"model": "m"}, first) != request_key({"model": "m"}, second)
    merged = with_system_instruction(with_system_instruction(first.messages, "Task rules."), "Be brief.")
    assert merged[0].content[0].text == "Be brief.\n\nTask rules." and len(merged[0].content) == 1


def test_apply_chat_template_with_a_template_name_and_verbosity(harness, needle_run) -> None:
    run = needle_run("mmneedle_m1_n2_k1_pos", "random", None, "--apply_chat_template", "chatml")
    assert run.code == 2 and "a named template is not supported" in run.err
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "random", "--verbosity", "LOUD")
    assert run.code == 2 and "argument -v/--verbosity: invalid choice: 'LOUD'" in run.err
    import logging

    loggers = [logging.getLogger(name) for name in ("", "transformers", "datasets")]
    before = [logger.level for logger in loggers]
    try:
        run = needle_run("mmneedle_m1_n2_k1_pos", "random", None, "--limit", "1", "--verbosity", "error")
        assert run.code == 0 and [logger.level for logger in loggers] == [logging.ERROR] * 3
    finally:
        for logger, level in zip(loggers, before, strict=True):
            logger.setLevel(level)


def test_hub_upload_offline_fails_in_one_line_after_saving_and_never_writes_the_token(
    needle_run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    token = "hf_uploadtokenvalue12345"
    hub = ("--hf_hub_log_args", f"hub_results_org=ORG,results_repo_name=evals,push_results_to_hub=True,token={token}")
    run = needle_run("mmneedle_m1_n2_k1_pos", "random", tmp_path, "--limit", "1", *hub)
    assert run.code == 1
    (line,) = [line for line in run.err.splitlines() if "error" in line]
    assert line.startswith("harness: error: results not uploaded to https://huggingface.co/datasets/ORG/evals: ")
    assert f"they are saved in {tmp_path / 'random'}" in line
    assert results_file(tmp_path / "random")["results"]
    written = "".join(p.read_text(errors="replace") for p in (tmp_path / "random").iterdir() if p.is_file())
    assert token not in written + run.err + run.out


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("hub_results_org=ORG,push_results=True", "did you mean"),
        ("push_results_to_hub=True", "hub_results_org=ORG is needed"),
        ("hub_results_org=ORG,push_results_to_hub=maybe", "expected True or False"),
    ],
)
def test_hub_log_args_are_checked_before_the_run(needle_run, tmp_path: Path, value: str, message: str) -> None:
    run = needle_run("mmneedle_m1_n2_k1_pos", "random", tmp_path, "--hf_hub_log_args", value)
    assert run.code == 2 and message in run.err and not (tmp_path / "random").exists()


def test_fitting_batch_size_halves_on_out_of_memory_and_keeps_the_order() -> None:
    import torch

    calls: list[int] = []

    def generate(piece: list[int]) -> list[int]:
        calls.append(len(piece))
        if len(piece) > 3:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return [10 * x for x in piece]

    fitting = FittingBatchSize(8)
    assert fitting.run(generate, list(range(11))) == [10 * x for x in range(11)]
    assert calls[:3] == [8, 4, 2] and fitting.describe() == {"start": 8, "chosen": 2, "halvings": 2}
    assert [len(b) for b in fitting.split(list(range(5)))] == [2, 2, 1]
    assert is_out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 1 GB"))
    assert not is_out_of_memory(ValueError("invalid_input: image 1"))

    def broken(piece: list[int]) -> list[int]:
        raise ValueError("a bug, not memory")

    with pytest.raises(ValueError):
        FittingBatchSize(4).run(broken, [1, 2])


def test_batch_size_auto_on_hf_records_the_size_that_fit(
    harness, data_dir: Path, tiny_llava: Path, tmp_path: Path
) -> None:
    auto = ("--batch_size", "auto", "--max_batch_size", "2", "--output_path", tmp_path)
    hf = hf_run("mmneedle_m1_n2_k1_pos", data_dir, checkpoint=tiny_llava)
    run = harness(*hf, "--limit", "3", "--gen_kwargs", "max_gen_toks=2", *auto)
    assert run.code == 0, run.err
    config = results_file(tmp_path / checkpoint_folder(tiny_llava))["config"]
    assert config["batch_size"] == "auto" and config["max_batch_size"] == 2 and config["batch_sizes"] == [2]
    assert config["backend_stats"]["auto_batch"] == {"start": 2, "chosen": 2, "halvings": 0}


def test_simple_evaluate_returns_what_the_cli_writes(data_dir: Path, tmp_path: Path) -> None:
    results = simple_evaluate(
        tasks=["mmneedle_m1_n2_k1_pos", "mmneedle_m1_n2_k1_neg"],
        model="random",
        data_dir=data_dir,
        limit=2,
        output_path=tmp_path,
        no_progress=True,
        seed=3,
    )
    assert results == json.loads(json.dumps(results_file(tmp_path / "random")))
    assert results["config"]["argv"][:3] == ["harness", "--tasks", "mmneedle_m1_n2_k1_pos,mmneedle_m1_n2_k1_neg"]
    assert results["config"]["seed"] == 3 and results["config"]["limit"] == 2
    again = simple_evaluate(
        tasks="mmneedle_m1_n2_k1_pos",
        model="constant",
        model_args={"answer": "1, 1, 1"},
        data_dir=data_dir,
        limit=2,
        no_progress=True,
    )
    assert again["results"]["mmneedle_m1_n2_k1_pos"]["existence_acc,none"] == 1.0
    with pytest.raises(UserError, match="mmneedle_m1_n2_k1_pso"):
        simple_evaluate(tasks="mmneedle_m1_n2_k1_pso", model="random", data_dir=data_dir, no_progress=True)
    with pytest.raises(UserError, match="batch_size"):
        simple_evaluate(tasks="mmneedle_m1_n2_k1_pos", model="random", batch_size="big")


def test_simple_evaluate_returns_the_samples_with_or_without_an_output_path(data_dir: Path, tmp_path: Path) -> None:
    """`log_samples=True` returns each task's sample records under `samples`, as lm-eval's does; without an
    `output_path` too (issue 76, item 6), where nothing is left behind."""
    task = "mmneedle_m1_n2_k1_pos"
    common = {
        "tasks": task,
        "model": "random",
        "data_dir": data_dir,
        "limit": 2,
        "no_progress": True,
        "log_samples": True,
    }
    kept = simple_evaluate(**common, output_path=tmp_path / "kept")
    (log,) = (tmp_path / "kept").rglob(f"samples_{task}_*.jsonl")
    assert kept["samples"] == {task: [json.loads(line) for line in log.read_text().splitlines()]}
    assert len(kept["samples"][task]) == 2
    temporary = Path(tempfile.gettempdir())
    before = set(temporary.glob("harness-samples-*"))
    alone = simple_evaluate(**common)
    assert [s["doc_id"] for s in alone["samples"][task]] == [s["doc_id"] for s in kept["samples"][task]]
    assert set(temporary.glob("harness-samples-*")) == before  # read back and removed
    assert "samples" not in simple_evaluate(**{**common, "log_samples": None})


def test_importing_the_api_loads_nothing_heavy() -> None:
    code = (
        "import sys, harness; assert callable(harness.simple_evaluate) and callable(harness.evaluate); "
        "print(sorted(m for m in ('harness.run.execute', 'harness.run.plan', 'datasets', 'torch', 'harness.running.runner') if m in sys.modules))"
    )
    before = subprocess.run(
        [sys.executable, "-c", "import sys, harness; print('harness.run.execute' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert before.stdout.strip() == "False"
    after = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert after.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--cache_requests", "true"], "harness: --cache_requests: requests are built from the verified build as the "),
        (
            ["--cache_requests", "delete"],
            "harness: --cache_requests: requests are built from the verified build as the ",
        ),
        (["--check_integrity"], "harness: --check_integrity: every run checks its data itself: each file against "),
        (["--fewshot_as_multiturn"], "harness: --fewshot_as_multiturn: the tasks here are zero-shot, as their papers "),
    ],
)
def test_lm_eval_flags_with_nothing_to_do_here_run_and_say_what_is_done_instead(
    harness, toy_dir: Path, toy_tasks: Path, flags: list[str], said: str
) -> None:
    """Issue 44: these gave argparse's usage dump."""
    run = harness(*run_args("toy_colors", "random", include_path=toy_tasks, data_dir=toy_dir), *flags)
    assert run.code == 0, run.err
    assert [line for line in run.err.splitlines() if line.startswith(said)], run.err


def test_show_config_prints_each_tasks_config_and_samples_is_one_line(harness, toy_dir: Path, toy_tasks: Path) -> None:
    common = run_args("toy_colors,toy_pairs", "random", include_path=toy_tasks, data_dir=toy_dir)
    run = harness(*common, "--show_config")
    assert run.code == 0, run.err
    shown = run.out.split("--- toy_colors ---\n")[1]
    assert shown.startswith("task: toy_colors\n") and "\n--- toy_pairs ---\ntask: toy_pairs\n" in shown
    refused = harness(*common, "--samples", '{"toy_colors": [0, 3]}')
    assert refused.code == 2 and refused.err.strip().splitlines() == [
        "harness: error: --samples: documents chosen by index are not supported here; --limit N evaluates the first "
        "N documents of each task (and the journal keeps every answer: a later, larger run asks only for the new ones)"
    ]


def test_num_beams_1_is_greedy_decoding_the_default_and_a_beam_search_is_refused(
    harness, toy_dir: Path, toy_tasks: Path
) -> None:
    """Issue 89: `--gen_kwargs num_beams=1`, lm-eval's and lmms-eval's spelling of greedy decoding, was refused as an
    unknown setting; it is the default here, so the run is the one without it."""
    common = run_args("toy_colors", "random", include_path=toy_tasks, data_dir=toy_dir)
    greedy = harness(*common, "--gen_kwargs", "num_beams=1,max_gen_toks=8")
    assert greedy.code == 0, greedy.err
    beams = harness(*common, "--gen_kwargs", "num_beams=4")
    assert beams.code == 2 and beams.err.strip().splitlines()[-1] == (  # the last: a toys' copy says overrides first
        "harness: error: --gen_kwargs num_beams=4: beam search is not run; decoding is greedy (num_beams=1, the "
        "default) or sampled (do_sample=true)"
    )


@pytest.mark.slow  # a tiny LLaVA's run in a process of its own
def test_an_hf_run_imports_no_scikit_learn_and_no_datasets(
    tiny_llava_336: Path, data_dir: Path, tmp_path: Path
) -> None:
    """Issue 89, item 5: where scikit-learn is installed (lm-eval brings it), transformers' generation imported it
    (about 1 s of a run's start) for assisted decoding, which no run here uses; a task may still import it. And a
    verified build is read with pyarrow alone: no `datasets` (~0.8 s), nor the pandas it and pyarrow's conversions of
    Python values bring, where MMNeedle's `process_docs` picks the rows (it takes them as a pyarrow Table)."""
    import importlib.util

    if importlib.util.find_spec("sklearn") is None:
        pytest.skip("scikit-learn is not installed: nothing to keep out")
    argv = [*map(str, hf_run("mmneedle_m1_n2_k1_pos", data_dir, checkpoint=tiny_llava_336)), "--limit", "1"]
    argv += ["--gen_kwargs", "max_gen_toks=2", "--output_path", str(tmp_path), "--no_progress"]
    code = (
        "import sys; from harness.run.cli import main; code = main(sys.argv[1:]); "
        "imported = [m for m in ('datasets', 'pandas') if m in sys.modules]; "
        "import transformers.generation.candidate_generator as g; import sklearn; "
        "print(code, hasattr(g, 'roc_curve'), 'sklearn.metrics' in sys.modules, imported)"
    )
    run = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True)
    assert run.stdout.splitlines()[-1] == "0 False False []", run.stderr[-2000:]
