"""Any checkpoint the installed transformers can load runs with `--model hf`, no family code needed (issue 72, items 1
and 3): for every image-text-to-text `model_type` of transformers, a tiny random checkpoint is built
(`tests.support.checkpoint_factory`) and run end to end through the command line, its prompt the checkpoint's own
`apply_chat_template`, its image tokens the model's image features, its count before sending the input ids sent where
the count says it is exact. A type that cannot be built here is listed in docs/models.md with the reason, and the
test checks that the reason still holds; the table's count of types run end to end is the test's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.api import Request
from tests.support.checkpoint_factory import (
    RUNS,
    CannotBuild,
    build,
    counting,
    docs_row,
    image_text_types,
    published_refusal,
)
from tests.support.forward_pass import checkpoint_pass
from tests.support.model_requests import encode_image, make_request

DOCS = Path(__file__).resolve().parents[3] / "docs" / "models.md"
# Types that build but whose run fails here, each on one task, with the error the samples record: the test checks
# that it still does (docs/models.md lists them so); the day one runs, this fails and the row is turned into a run.
FAILS_HERE = {
    # the hf backend gives the processor each prompt's images as a list, which GOT-OCR2 takes for a multi-page scan
    "got_ocr2": (
        "toy_colors toy_pairs",
        "ValueError: Nested images are only supported with `multi_page` set to `True`.",
    ),
    # Florence-2's and Kosmos-2.5's processors put one image's tokens before each prompt, whatever its images: the hf
    # backend sends toy_pairs' two images in one prompt to these one-image models, which has more features than tokens
    "florence2": ("toy_pairs", "ValueError: Image features and image tokens do not match, tokens: 50, features: 100"),
    "kosmos-2.5": (
        "toy_pairs",
        "RuntimeError: shape mismatch: value tensor of shape [4096, 64] cannot be broadcast to indexing result of "
        "shape [2048, 64]",
    ),
}


def fails_here(model_type: str) -> str:
    task, error = FAILS_HERE[model_type]
    return f"builds; its run fails on {' and '.join(task.split())}: {error}"


def documented() -> dict[str, str]:
    """docs/models.md's table: model_type -> its line."""
    rows = re.findall(r"^\| (\S+) \| .*\|$", DOCS.read_text(encoding="utf-8"), flags=re.MULTILINE)
    lines = [line for line in DOCS.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    return {row: next(line for line in lines if line.startswith(f"| {row} |")) for row in rows}


def test_the_table_lists_every_type_of_the_installed_transformers_and_counts_those_that_run() -> None:
    table = documented()
    types = image_text_types()
    assert [t for t in table if t != "model_type"] == types
    runs = sum(f"| {RUNS}" in line for line in table.values())
    assert f"**{runs} of {len(types)}** image-text-to-text types run end to end" in DOCS.read_text(encoding="utf-8")


def model_class(model_type: str) -> type:
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    return getattr(transformers, MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES[model_type])


def chat_of(prompt: str) -> list[dict[str, object]]:
    """The chat the default prompt style sends for a toy row's prompt, cut as the wrappers cut it
    (`re.split(r"(<image>)", ...)`: an empty text before an image that starts the prompt)."""
    parts = [
        {"type": "image"} if t == "<image>" else {"type": "text", "text": t} for t in re.split(r"(<image>)", prompt)
    ]
    return [{"role": "user", "content": parts}]


@pytest.mark.slow  # a checkpoint built, then `harness` through its CLI
@pytest.mark.parametrize("model_type", image_text_types())
def test_every_image_text_type_runs_end_to_end_or_says_why_not(
    model_type: str, tmp_path: Path, harness, toy_dir: Path, toy_tasks: Path
) -> None:
    try:
        folder = build(model_type, tmp_path / model_type)
    except CannotBuild as err:
        assert documented()[model_type] == docs_row(model_type, str(err))
        return
    result = fails_here(model_type) if model_type in FAILS_HERE else published_refusal(model_type, folder) or RUNS
    assert documented()[model_type] == docs_row(model_type, result, counting(folder))
    run = harness(
        *("--tasks", "toy_colors,toy_pairs", "--model", "hf", "--include_path", toy_tasks, "--data_dir", toy_dir),
        *("--model_args", f"pretrained={folder},device=cpu,dtype=float32,image_threads=1", "--limit", "2"),
        *("--output_path", tmp_path / "out", "--log_samples", "--gen_kwargs", "max_gen_toks=2"),
    )
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(folder)
    (logs,) = (tmp_path / "out").iterdir()
    bos = processor.tokenizer.bos_token or ""
    for task in ("toy_colors", "toy_pairs"):
        (log,) = logs.glob(f"samples_{task}_*.jsonl")
        samples = [json.loads(line) for line in log.read_text().splitlines()]
        if task in FAILS_HERE.get(model_type, ("",))[0].split():
            assert all(FAILS_HERE[model_type][1] in str(s["error"]) for s in samples), [s["error"] for s in samples]
            continue
        assert len(samples) == 2 and [s["error"] for s in samples] == [None, None], [s["error"] for s in samples]
        for sample in samples:
            chat = chat_of(sample["doc"]["prompt"])
            template = processor.chat_template or processor.tokenizer.chat_template  # IDEFICS' is its tokenizer's
            expected = processor.apply_chat_template(
                chat, chat_template=template, add_generation_prompt=True, tokenize=False
            )
            # the template's BOS is left to the tokenizer where it adds its own (`PromptStyle.bos`)
            assert sample["arguments"]["gen_args_0"]["arg_0"] in (expected, expected.removeprefix(bos))
    assert run.code == (1 if model_type in FAILS_HERE else 0), run.err
    if model_type in FAILS_HERE:
        return
    # One request of two images of other sizes: the model's image features fill its image tokens, and a count that
    # says it is exact is the input ids sent.
    images = [encode_image((200, 30, 30), (300, 200), "PNG"), encode_image((9, 9, 9), (64, 48), "PNG")]
    request: Request = make_request("s", ["Compare ", images[0], " and ", images[1], "."])
    result = checkpoint_pass(folder, request)
    assert result.error is None, result
    if hasattr(model_class(model_type), "get_image_features"):  # IDEFICS' cross-attention has no image tokens to fill
        assert result.image_tokens == result.image_features > 0, result
    if result.exact:
        assert result.counted == result.prompt_tokens, result
