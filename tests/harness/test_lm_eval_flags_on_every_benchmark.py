"""Every lm-eval flag docs/lm-eval.md documents, walked over one task of each benchmark (issue 54): each runs, or says
in one line why it does nothing or what to write instead, on MMNeedle, MMLongBench, MileBench and LoCoVQA alike, never
a traceback. A flag that broke on one benchmark's configs alone (`--show_config` on MMNeedle's, whose metadata the YAML
loader reads into its own mapping type) is what this walk is for.

The builds are the real builders' offline stand-ins, one config each; the model is the random baseline, which every
task answers in its own format."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.paths import PROJECT

# One task of each benchmark, and the config its build holds.
TASKS = {
    "mmneedle": "mmneedle_m1_n2_k1_pos",
    "mmlongbench": "mmlongbench_niah_vh_single_8k",
    "milebench": "milebench_image_needle",
    "locovqa": "locovqa_mmstar_cmp_1",
}
OUT = "{out}"  # a flag's folder argument: the test's own
# Each documented flag as a command line gives it, and the exit code it ends with: 0, or 1 for an upload that cannot
# reach its service (offline here: one line, the results saved first), or 2 for a flag refused in one line.
FLAGS: dict[str, tuple[list[str], int]] = {
    "--batch_size": (["--batch_size", "auto"], 0),
    "--max_batch_size": (["--batch_size", "auto", "--max_batch_size", "32"], 0),
    "--predict_only": (["--predict_only"], 0),
    "--apply_chat_template": (["--apply_chat_template"], 0),
    "--system_instruction": (["--system_instruction", "Answer with the triple only."], 0),
    "--write_out": (["--write_out"], 0),
    "--verbosity": (["--verbosity", "WARNING"], 0),
    "--hf_hub_log_args": (
        ["--hf_hub_log_args", "hub_results_org=ORG,results_repo_name=evals,push_results_to_hub=True"],
        1,
    ),
    "--device": (["--device", "cuda:0"], 0),
    "-o": (["-o", OUT], 0),
    "--output_path": (["--output_path", f"{OUT}/results.json"], 0),
    "--log_samples": (["--log_samples"], 0),
    "--log_samples_suffix": (["--log_samples", "--log_samples_suffix", "walk"], 0),
    "--num_fewshot": (["--num_fewshot", "0"], 0),
    "--trust_remote_code": (["--trust_remote_code"], 0),
    "--use_cache": (["--use_cache", f"{OUT}/cache"], 0),
    "--bootstrap_iters": (["--bootstrap_iters", "100"], 0),
    "--seed": (["--seed", "0,1234,1234,1234"], 0),
    "--show_config": (["--show_config"], 0),
    "--cache_requests": (["--cache_requests", "true"], 0),
    "--check_integrity": (["--check_integrity"], 0),
    "--fewshot_as_multiturn": (["--fewshot_as_multiturn"], 0),
    "--samples": (["--samples", '{"task": [0, 1]}'], 2),
    "--confirm_run_unsafe_code": (["--confirm_run_unsafe_code"], 0),
    "--gen_kwargs": (["--gen_kwargs", "max_gen_toks=16,temperature=0"], 0),
    "--limit": (["--limit", "0.5"], 0),
    # the documented run file: the walk's own flags replace its tasks, data, limit and output; its model_args,
    # gen_kwargs and log_samples apply
    "--config": (["--config", str(PROJECT / "docs" / "run.yaml")], 0),
}
# Documented, and walked by their own tests: they reach W&B (tests/harness/test_no_dead_ends.py, offline mode).
WALKED_ELSEWHERE = {"--wandb_args", "--wandb_config_args"}


@pytest.fixture(scope="module")
def four_builds(tmp_path_factory: pytest.TempPathFactory, fixture_builds) -> Path:
    """One `--data_dir` holding one config of each benchmark, built by the real builders from their stand-ins (the
    fixture releases' builds those of the session, which other modules read too)."""
    from builders.locovqa import build_locovqa
    from builders.mmneedle import build_mmneedle

    root = tmp_path_factory.mktemp("four")
    build_mmneedle(source="synthetic", out_dir=root, configs=["m1_n2_k1"], limit=3, seed=0, num_proc=1)
    fixture_builds(into=root, mmlongbench=["niah_vh_single_8k"], milebench=["image_needle"])
    build_locovqa(["synthetic"], root, ["mmstar_cmp_1"], limit=2, cell_size=16, num_proc=1)
    return root


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, text) of each fenced block of a markdown page."""
    blocks, language, lines = [], None, []
    for line in text.splitlines():
        if line.startswith("```"):
            if language is None:
                language, lines = line[3:].strip(), []
            else:
                blocks.append((language, "\n".join(lines)))
                language = None
        elif language is not None:
            lines.append(line)
    return blocks


def documented_flags() -> set[str]:
    """The flags docs/lm-eval.md names: in its command blocks, and in the first column of its tables of flags."""
    text = (PROJECT / "docs" / "lm-eval.md").read_text(encoding="utf-8")
    flags = set()
    for language, block in code_blocks(text):
        # the block of lm-eval's model names is tests/harness/test_lm_eval_command_lines.py's to run
        if not language and "--model hf-multimodal" not in block:
            flags |= set(re.findall(r"(?<![\w-])(--[a-z_]+|-o)(?=[ =]|$)", block, flags=re.M))
    for cell in re.findall(r"^\| `(-[^`]+)`", text, flags=re.M):
        flags.add(cell.split()[0])
    return flags


def test_every_documented_lm_eval_flag_is_walked() -> None:
    ours = {"--tasks", "--model", "--model_args", "--data_dir"}  # what every walked command line holds
    assert documented_flags() - ours - WALKED_ELSEWHERE <= set(FLAGS), documented_flags() - ours - set(FLAGS)
    assert "--show_config" in documented_flags() and "--confirm_run_unsafe_code" in documented_flags()


@pytest.mark.parametrize("benchmark", sorted(TASKS))
@pytest.mark.parametrize("flag", sorted(FLAGS))
def test_each_documented_flag_runs_on_each_benchmark(
    harness, four_builds: Path, tmp_path: Path, benchmark: str, flag: str
) -> None:
    argv, expected = FLAGS[flag]
    argv = [a.replace(OUT, str(tmp_path)) for a in argv]
    output = [] if flag in ("-o", "--output_path") else ["--output_path", str(tmp_path)]
    limit = [] if flag == "--limit" else ["--limit", "2"]
    task = TASKS[benchmark]
    run = harness("--tasks", task, "--model", "random", "--data_dir", four_builds, *limit, *output, *argv)
    assert "Traceback" not in run.err, run.err
    assert run.code == expected, run.err
    errors = [line for line in run.err.splitlines() if "error:" in line]
    assert len(errors) == (0 if expected == 0 else 1), run.err
    if expected == 2:
        return
    (results,) = (tmp_path / "random").glob("results_*.json")  # written, an upload that failed or not
    written = json.loads(results.read_text())
    assert task in written["results"] and task in written["configs"]
    if flag == "--show_config":
        shown = run.out.split(f"--- {task} ---\n")[1]
        assert shown.startswith(f"task: {task}\n") and "\nmetadata:\n" in shown


def test_show_config_on_every_mmneedle_task_prints_each_config_and_writes_the_results(
    harness, data_dir: Path, tmp_path: Path
) -> None:
    """Issue 54 item 1: a 62-line traceback on every MMNeedle task (its `all_rows: {subset: full}` metadata is the YAML
    loader's own mapping, which `yaml.safe_dump` refused), and with `-o` no results file."""
    tasks = "mmneedle_m1_n2_k1,mmneedle_m10_n1_k2,mmneedle_m1_n2_k5"  # every task of the configs the fixture built
    run = harness("--tasks", tasks, "--model", "random", "--data_dir", data_dir, "-o", tmp_path, "--show_config",
                  "--limit", "2")  # fmt: skip
    assert run.code == 0 and "Traceback" not in run.err, run.err
    (results,) = (tmp_path / "random").glob("results_*.json")
    names = sorted(json.loads(results.read_text())["configs"])
    assert len(names) == 6
    for name in names:
        shown = run.out.split(f"--- {name} ---\n")[1].split("\n--- ")[0]
        assert shown.startswith(f"task: {name}\n") and "  all_rows:\n    subset: full\n" in shown, shown
