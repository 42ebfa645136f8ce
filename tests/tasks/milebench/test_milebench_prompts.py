"""The last touches of MileBench's official inference code (MileBench/MileBench @9583e1f): the LLaVA worker puts two
adjacent image markers on lines of their own (CLEVR-Change), and `MileBenchDataset` re-decodes every context piece
through the model's tokenizer, which with a SentencePiece tokenizer drops a piece's leading space. Checked on the
hook, through the truncation, and through the runner with `random` and `hf` (a tiny LLaVA whose tokenizer is a
SentencePiece BPE trained in memory); `vllm` in tests/harness/models/test_vllm_backend.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from builders.milebench.build import build_milebench
from harness.inputs.truncation import Budget
from tasks.milebench import official_prompt
from tasks.milebench.truncation import truncate_left
from tests.support.hf_runs import hf_run
from tests.support.release_rows import release_rows

if TYPE_CHECKING:  # transformers costs seconds to import: only the tests that use it pay, not collection
    from transformers import PreTrainedTokenizerFast

INSTRUCTION = "Say what changed."


@pytest.fixture(scope="module")
def clevr_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stand-in's CLEVR-Change, whose contexts are "{image#1}{image#2} Describe the change:" (two images, or
    three: one more than places stands first, so three markers in a row)."""
    root = tmp_path_factory.mktemp("milebench_clevr")
    build_milebench(source="fixture", out_dir=root, configs=["clevr_change", "clevr_change_combined"])
    return root


@pytest.fixture(scope="module")
def sp_tokenizer(sentencepiece) -> PreTrainedTokenizerFast:
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=sentencepiece(), bos_token="<s>", eos_token="</s>")


def decode_encode(tokenizer):
    return lambda text: tokenizer.decode(tokenizer(text, add_special_tokens=False).input_ids)


def row(context: str, mode: str = "interleaved") -> dict:
    return {
        "id": "r",
        "mode": mode,
        "instruction": INSTRUCTION,
        "context": context,
        "prompt": (f"<image>\n{INSTRUCTION}\n{context}" if mode == "combined" else f"{INSTRUCTION}\n{context}"),
    }


# ------------------------------------------------------------------------------------------ the worker's breaks


@pytest.mark.parametrize(
    ("prompt", "sent"),
    [
        ("Q\n<image><image> Describe", "Q\n<image>\n<image>\n Describe"),
        ("Q\n<image><image><image> D", "Q\n<image>\n<image>\n<image> D"),  # str.replace: non-overlapping pairs
        ("Q\n<image><image><image><image>", "Q\n<image>\n<image>\n<image>\n<image>\n"),
        ("Q\n<image> a <image> b", "Q\n<image> a <image> b"),  # not adjacent: untouched
        ("<image>\nQ\n<Image 1> <Image 2> D", "<image>\nQ\n<Image 1> <Image 2> D"),
    ],
)
def test_adjacent_images_go_on_lines_of_their_own(prompt: str, sent: str) -> None:
    assert official_prompt.worker_line_breaks(prompt) == sent


def test_the_truncation_keeps_the_breaks_of_the_images_it_keeps() -> None:
    doc = {
        **row("<image><image> Describe the change:"),
        "context_tokens": [0, 0, 5],
        "instruction_tokens": 4,
        "num_images": 2,
    }
    both = truncate_left(doc, Budget(4 + 5 + 20, (10, 10), None))
    assert both.prompt == f"{INSTRUCTION}\n<image>\n<image>\n Describe the change:" and both.images == (0, 1)
    one = truncate_left(doc, Budget(4 + 5 + 15, (10, 10), None))  # the official walk then sends one marker
    assert one.prompt == f"{INSTRUCTION}\n<image> Describe the change:" and one.images == (1,)


def test_clevr_change_reaches_the_model_with_its_line_breaks(harness, clevr_dir: Path, tmp_path: Path) -> None:
    run = harness(
        "--tasks",
        "milebench_clevr_change,milebench_clevr_change_combined",
        "--model",
        "random",
        "--data_dir",
        clevr_dir,
        "--output_path",
        tmp_path,
        "--log_samples",
    )
    assert run.code == 0, run.err
    (log,) = (tmp_path / "random").glob("samples_milebench_clevr_change_2*.jsonl")
    sent = [json.loads(line)["arguments"]["gen_args_0"]["arg_0"] for line in log.read_text().splitlines()]
    rows = release_rows(clevr_dir, "milebench", "clevr_change")
    assert sorted({r["num_images"] for r in rows}) == [2, 3]
    breaks = {2: "\n<image>\n<image>\n", 3: "\n<image>\n<image>\n<image>"}
    assert sent == [r["instruction"] + breaks[r["num_images"]] + " Describe the change:" for r in rows]
    (combined,) = (tmp_path / "random").glob("samples_milebench_clevr_change_combined_*.jsonl")
    combined_rows = release_rows(clevr_dir, "milebench", "clevr_change_combined")
    assert [json.loads(line)["arguments"]["gen_args_0"]["arg_0"] for line in combined.read_text().splitlines()] == list(
        combined_rows["prompt"]
    )  # one grid: nothing to break
    journal = run.samples("random", "milebench_clevr_change")
    assert all("text_round_trip" not in s for s in journal)  # no tokenizer at hand: sent as it is


# ------------------------------------------------------------------------------------------ the re-decoding


def test_the_sentencepiece_round_trip_drops_a_pieces_leading_space(sp_tokenizer) -> None:
    rt = decode_encode(sp_tokenizer)
    assert rt(" Describe the change:") == "Describe the change:"
    assert rt("\nChoice list: \nA. one") == "\nChoice list: \nA. one" and rt("") == ""


def test_each_context_piece_is_re_decoded_before_the_worker_breaks_the_line(sp_tokenizer) -> None:
    rt = decode_encode(sp_tokenizer)
    doc = row("<image><image> Describe the change:")
    whole = official_prompt.doc_to_text(doc)
    assert whole == f"{INSTRUCTION}\n<image>\n<image>\n Describe the change:"
    # The piece " Describe the change:" loses its space; the newline the worker adds afterwards stays.
    assert official_prompt.round_trip(doc, whole, rt) == f"{INSTRUCTION}\n<image>\n<image>\nDescribe the change:"
    # The instruction is joined as it is; every piece of an interleaved context is re-decoded on its own.
    spaced = {**row(" a <image> b <image> c"), "instruction": " Keep  this."}
    spaced["prompt"] = f"{spaced['instruction']}\n{spaced['context']}"
    assert official_prompt.round_trip(spaced, spaced["prompt"], rt) == " Keep  this.\na <image>b <image>c"
    combined = row("<Image 1> <Image 2>  Describe the change:", mode="combined")
    assert official_prompt.round_trip(combined, combined["prompt"], rt) == combined["prompt"]


def test_a_truncated_prompt_re_decodes_the_pieces_it_kept(sp_tokenizer) -> None:
    rt = decode_encode(sp_tokenizer)
    doc = {
        **row(" a <image> b <image><image> Describe the change:"),
        "context_tokens": [2, 2, 0, 5],
        "instruction_tokens": 4,
        "num_images": 3,
    }
    two = truncate_left(doc, Budget(4 + 5 + 20, (10, 10, 10), None))
    assert two.prompt == f"{INSTRUCTION}\n<image>\n<image>\n Describe the change:"
    assert official_prompt.round_trip(doc, two.prompt, rt) == f"{INSTRUCTION}\n<image>\n<image>\nDescribe the change:"
    opening = truncate_left(doc, Budget(4 + 5 + 30 + 2, (10, 10, 10), None))  # an image before the first piece
    assert opening.prompt == f"{INSTRUCTION}\n<image> b <image>\n<image>\n Describe the change:"
    assert (
        official_prompt.round_trip(doc, opening.prompt, rt)
        == f"{INSTRUCTION}\n<image>b <image>\n<image>\nDescribe the change:"
    )
    tail = truncate_left(doc, Budget(4 + 3, (10, 10, 10), None))  # the question alone, cut
    assert (
        tail.record["question_cut"]
        and official_prompt.round_trip(doc, tail.prompt, rt)
        == f"{INSTRUCTION}\n{rt(tail.prompt.removeprefix(INSTRUCTION + chr(10)))}"
    )
    with pytest.raises(ValueError, match="the prompt is not one this task makes from the row"):
        official_prompt.round_trip(doc, f"{INSTRUCTION}\n<image> something else", rt)


def _expected(row: dict, tokenizer) -> str:
    """The official prompt for a model with `tokenizer`: each context piece re-decoded, joined around its images,
    the instruction first, then the worker's line breaks (written out for the two CLEVR-Change shapes)."""
    rt = decode_encode(tokenizer)
    question = rt(" Describe the change:")
    markers = "<image>\n<image>\n<image>" if row["num_images"] == 3 else "<image>\n<image>\n"
    return f"{row['instruction']}\n{markers}{question}"


@pytest.mark.slow  # a tiny LLaVA runs
def test_hf_sends_the_re_decoded_prompt_and_records_it(
    harness, clevr_dir: Path, tiny_llava_sp: Path, tmp_path: Path
) -> None:
    clevr = hf_run("milebench_clevr_change,milebench_clevr_change_combined", clevr_dir, checkpoint=tiny_llava_sp)
    args = (*clevr, "--gen_kwargs", "max_gen_toks=2", "--output_path", tmp_path, "--log_samples")
    run = harness(*args)
    assert run.code == 0, run.err
    name = str(tiny_llava_sp).replace("/", "__")
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_llava_sp)
    rows = release_rows(clevr_dir, "milebench", "clevr_change")
    (log,) = (tmp_path / name).glob("samples_milebench_clevr_change_2*.jsonl")
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    # The prompt as sent (`harness.sent`): the re-decoded turn in the tiny LLaVA's chat template.
    assert [line["arguments"]["gen_args_0"]["arg_0"] for line in logged] == [
        f"user: {_expected(r, tokenizer)}\nassistant:" for r in rows
    ]
    for sample, r in zip(
        sorted(run.samples(name, "milebench_clevr_change"), key=lambda s: s["doc_id"]), rows, strict=True
    ):
        before = official_prompt.doc_to_text(r)
        assert sample["status"] == "ok" and sample["text_round_trip"] == {
            "rule": "!function official_prompt.round_trip",
            "changed": True,
            "chars_before": len(before),
            "chars_after": len(_expected(r, tokenizer)),
        }
    assert json.loads(logged[0]["text_round_trip"])["changed"] is True
    combined = run.samples(name, "milebench_clevr_change_combined")
    assert all(s["text_round_trip"]["changed"] is False for s in combined)  # "<Image 1> ..." has no leading space
    # The prompt sent is the request's identity: the same command resumes every sample.
    again = harness(*args)
    assert again.code == 0 and "6 samples resumed from the journal, 0 generated now (2 of 2 tasks)" in again.err
