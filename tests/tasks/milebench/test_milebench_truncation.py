"""MileBench's left truncation: the hook walks the context from the end as the official `MileBenchDataset` does
(instruction and question always kept, the first piece or image that does not fit ends the walk), and the runner
applies it where a request does not fit the model, counting with the model's own processor, records per sample
what was dropped, and shows the same decisions under `--screen_only`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builders.milebench.build import build_milebench
from harness.inputs.truncation import Budget
from tasks.milebench.truncation import truncate_left
from tests.support.hf_runs import hf_run
from tests.support.release_rows import release_rows

INSTRUCTION = "Answer from the images."


def doc(piece_tokens: list[int], mode: str = "interleaved", instruction_tokens: int = 10) -> dict:
    """A row with text pieces p0, p1, ... (the last one the question) between its images."""
    pieces = [f"p{k}" + "x" * (tokens * 4) for k, tokens in enumerate(piece_tokens)]
    if mode == "combined":
        return {
            "id": "t",
            "mode": mode,
            "instruction": INSTRUCTION,
            "context": pieces[0],
            "context_tokens": piece_tokens,
            "instruction_tokens": instruction_tokens,
            "num_images": 1,
        }
    return {
        "id": "t",
        "mode": mode,
        "instruction": INSTRUCTION,
        "context": "<image>".join(pieces),
        "context_tokens": piece_tokens,
        "instruction_tokens": instruction_tokens,
        "num_images": len(pieces) - 1,
    }


def test_without_a_limit_everything_is_kept() -> None:
    row = doc([5, 5, 5, 20])
    cut = truncate_left(row, Budget(None, (10, 10, 10), None))
    assert cut is not None and cut.prompt == f"{INSTRUCTION}\n{row['context']}" and cut.images == (0, 1, 2)
    assert cut.text_tokens == 45 and cut.record == {"context_tokens_dropped": 0, "question_cut": False}


def test_the_walk_keeps_the_end_and_stops_at_the_first_image_that_does_not_fit() -> None:
    row = doc([5, 5, 5, 20])
    # 35 for the context: p3 (20) + image 2 (10) + p2 (5) = 35; image 1 would make 45.
    cut = truncate_left(row, Budget(45, (10, 10, 10), None))
    pieces = row["context"].split("<image>")
    assert cut.prompt == f"{INSTRUCTION}\n{pieces[2]}<image>{pieces[3]}" and cut.images == (2,)
    assert cut.text_tokens == 10 + 25 and cut.record["context_tokens_dropped"] == 10


def test_the_walk_stops_at_the_first_piece_that_does_not_fit_even_if_earlier_ones_would() -> None:
    row = doc([1, 50, 1, 5])
    cut = truncate_left(row, Budget(10 + 5 + 10 + 1 + 10, (10, 10, 10), None))
    pieces = row["context"].split("<image>")
    # p3, image 2, p2, image 1 fit; p1 (50) does not, so p0 (1 token) is dropped too; an image opens the context.
    assert cut.prompt == f"{INSTRUCTION}\n<image>{pieces[2]}<image>{pieces[3]}" and cut.images == (1, 2)


def test_a_question_longer_than_the_budget_keeps_its_tail_and_no_image() -> None:
    row = doc([5, 100])
    cut = truncate_left(row, Budget(10 + 40, (10,), None))
    question = row["context"].split("<image>")[1]
    assert cut.images == () and cut.record["question_cut"] is True
    kept = cut.prompt.removeprefix(f"{INSTRUCTION}\n")
    assert question.endswith(kept) and 0.3 * len(question) < len(kept) < 0.5 * len(question)
    assert truncate_left(row, Budget(9, (10,), None)) is None  # not even the instruction fits


def test_the_combined_grid_is_charged_first_and_always_kept() -> None:
    row = doc([60], mode="combined")
    whole = truncate_left(row, Budget(10 + 30 + 60, (30,), None))
    assert whole.prompt == f"<image>\n{INSTRUCTION}\n{row['context']}" and whole.images == (0,)
    cut = truncate_left(row, Budget(10 + 30 + 20, (30,), None))
    assert cut.images == (0,) and cut.record["question_cut"] and cut.prompt.startswith(f"<image>\n{INSTRUCTION}\n")
    assert truncate_left(row, Budget(10 + 29, (30,), None)) is None


def test_an_image_cap_stops_the_walk() -> None:
    row = doc([1, 1, 1, 1])
    cut = truncate_left(row, Budget(None, (5, 5, 5), 1))
    assert cut.images == (2,) and cut.prompt.count("<image>") == 1


@pytest.mark.parametrize("tokens", range(12, 66, 3))
def test_every_budget_keeps_instruction_and_question_and_fits(tokens: int) -> None:
    row = doc([3, 4, 2, 6, 8])
    costs = (5, 6, 7, 4)
    cut = truncate_left(row, Budget(tokens, costs, None))
    question = row["context"].split("<image>")[-1]
    assert cut.prompt.startswith(f"{INSTRUCTION}\n") and cut.prompt.endswith(question[-3:])
    if tokens >= 18:
        assert cut.prompt.endswith(question) and not cut.record["question_cut"]
    assert cut.text_tokens + sum(costs[i] for i in cut.images) <= tokens
    assert cut.prompt.count("<image>") == len(cut.images) and list(cut.images) == sorted(cut.images)
    assert cut.images == tuple(range(4 - len(cut.images), 4))  # always the last images
    assert cut.record["context_tokens_dropped"] == 23 - (cut.text_tokens - 10)


# ------------------------------------------------------------------------------------------ in the runner


@pytest.fixture(scope="module")
def needle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("milebench_needle")
    build_milebench(source="fixture", out_dir=root, configs=["image_needle", "tqa"])
    return root


@pytest.mark.slow  # a tiny LLaVA runs
def test_a_576_token_image_model_gets_the_many_row_cut_to_its_context(
    tmp_path: Path, needle_dir: Path, tiny_llava_336: Path, harness
) -> None:
    """LLaVA-1.5's shape (576 tokens per image, counted by its processor) at 4,096 tokens: the 32-image row cannot
    be sent whole; the runner cuts it from the left, the model's own count fits, and the record says how much."""
    needle = hf_run("milebench_image_needle", needle_dir, "context_length=4096", checkpoint=tiny_llava_336)
    args = (*needle, "--gen_kwargs", "max_gen_toks=4", "--output_path", tmp_path, "--log_samples")
    run = harness(*args)
    assert run.code == 0, run.err
    name = str(tiny_llava_336).replace("/", "__")
    samples = {s["sample_id"]: s for s in run.samples(name, "milebench_image_needle")}
    assert [s["status"] for s in samples.values()] == ["ok", "ok", "ok"]
    assert "truncation" not in samples["ImageNeedleInAHaystack/0"]
    cut = samples["ImageNeedleInAHaystack/2"]["truncation"]
    assert cut["rule"] == "!function truncation.truncate_left" and cut["prompt_tokens_before"] > 32 * 576
    assert cut["prompt_tokens_after"] + 4 <= 4096 and cut["images_kept"] + cut["images_dropped"] == 32
    assert 2 <= cut["images_kept"] <= 6 and cut["context_tokens_dropped"] > 0 and not cut["question_cut"]
    assert samples["ImageNeedleInAHaystack/2"]["token_count"] == cut["prompt_tokens_after"]
    results = run.results(name)
    assert results["sample_counts"]["milebench_image_needle"]["n_truncated"] == 1
    (log,) = (tmp_path / name).glob("samples_milebench_image_needle_*.jsonl")
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    prompt = logged[2]["arguments"]["gen_args_0"]["arg_0"]
    row = release_rows(needle_dir, "milebench", "image_needle")[2]
    # The prompt as sent (`harness.sent`): the tiny LLaVA's chat template around the cut turn.
    assert prompt.startswith("user: " + row["instruction"] + "\n") and prompt.endswith(row["question"] + "\nassistant:")
    assert row["question"].rstrip().endswith("number?")
    assert prompt.count("<image>") == cut["images_kept"] and json.loads(logged[2]["truncation"]) == cut
    # The same command resumes every sample from the journal: the cut is the same request each time.
    again = harness(*args)
    assert again.code == 0 and "3 samples resumed from the journal, 0 generated now" in again.err


def test_screen_only_shows_the_cuts_and_what_cannot_fit(harness, needle_dir: Path) -> None:
    fits = harness(*hf_run("milebench_tqa", needle_dir, "context_length=600"), "--screen_only")
    assert fits.code == 0, fits.err
    (line,) = [line for line in fits.out.splitlines() if line.startswith("| milebench_tqa |")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    rows = release_rows(needle_dir, "milebench", "tqa")
    longer = sum(1 for r in rows if r["text_tokens"] + sum(r["image_tokens"]) > 600 - 512)
    assert cells[1:6] == ["3", "3", "0", "0", "0"] and cells[8] == str(longer) and longer >= 1  # sent, the long cut
    # 512 new tokens leave 5 for the prompt: not even the instruction fits, so it stays over length.
    tight = harness(*hf_run("milebench_tqa", needle_dir, "context_length=517"), "--screen_only")
    (line,) = [line for line in tight.out.splitlines() if line.startswith("| milebench_tqa |")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[1:4] == ["3", "0", "3"] and cells[8] == "0"


def test_a_row_without_the_figures_the_rule_reads_fails_alone(
    tmp_path: Path, tiny_llava: Path, harness, edit_build
) -> None:
    """A row whose `context_tokens` do not match its context is recorded `invalid_input`, naming the row; the other
    rows are cut and answered."""
    build_milebench(source="fixture", out_dir=tmp_path / "data", configs=["tqa"])
    edit_build(tmp_path / "data" / "milebench", "tqa", context_tokens=lambda values: [[1], *values[1:]])
    run = harness(
        *hf_run("milebench_tqa", tmp_path / "data", "context_length=120", checkpoint=tiny_llava),
        "--gen_kwargs",
        "max_gen_toks=4",
        "--output_path",
        tmp_path / "out",
        "--allow_failures",
    )
    assert run.code == 0, run.err
    samples = run.samples(str(tiny_llava).replace("/", "__"), "milebench_tqa")
    assert samples[0]["status"] == "invalid_input"
    assert "row TQA/0: truncation: row 'TQA/0': 1 context_tokens for 3 text pieces" in samples[0]["error"]
    assert [s["status"] for s in samples[1:]] == ["ok", "ok"] and all(s["truncation"] for s in samples[1:])
