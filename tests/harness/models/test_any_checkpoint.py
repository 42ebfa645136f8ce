"""Any checkpoint the installed transformers can load runs with `--model hf`, no family code needed (issue 72, items 1
and 3): for every image-text-to-text `model_type` of transformers, a tiny random checkpoint is built
(`tests.support.checkpoint_factory`) and run end to end through the command line, its prompt the checkpoint's own
`apply_chat_template`, its image tokens the model's image features. Its count before sending is measured against the
input ids sent, for one image of a size the count's probe does not use and for three (issue 89, item 4): the screen
counts as the run does, a count it says is exact is the input ids sent, and docs/models.md's line for the type is
the one written from what was measured (`tests.support.models_table`), as is the table's count of types run end to
end."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.api import TOO_MANY_IMAGES
from tests.support.checkpoint_factory import CannotBuild, build, image_text_types
from tests.support.forward_pass import checkpoint_pass
from tests.support.models_table import (
    FAILS_HERE,
    ONE,
    PAGE,
    SEVERAL,
    counted,
    measure,
    ran,
    request,
    row,
    summary,
    table,
)


def documented() -> dict[str, str]:
    """docs/models.md's table: model_type -> its line."""
    return table(PAGE.read_text(encoding="utf-8"))


def test_the_table_lists_every_type_of_the_installed_transformers_and_counts_those_that_run() -> None:
    lines = documented()
    assert [t for t in lines if t != "model_type"] == image_text_types()
    lines.pop("model_type")
    assert summary(list(lines.values())) in PAGE.read_text(encoding="utf-8")


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
        assert documented()[model_type] == row(model_type, str(err))
        return
    run = harness(
        *("--tasks", "toy_colors,toy_pairs", "--model", "hf", "--include_path", toy_tasks, "--data_dir", toy_dir),
        *("--model_args", f"pretrained={folder},device=cpu,dtype=float32,image_threads=1", "--limit", "2"),
        *("--output_path", tmp_path / "out", "--log_samples", "--gen_kwargs", "max_gen_toks=2"),
    )
    from transformers import AutoProcessor

    from harness.models.backends.hf import screen_model

    processor = AutoProcessor.from_pretrained(folder)
    taken = screen_model(
        {"pretrained": str(folder)}
    ).facts.max_images  # one a prompt: BLIP-2's (its processor's queries)
    (logs,) = (tmp_path / "out").iterdir()
    bos = processor.tokenizer.bos_token or ""
    for task in ("toy_colors", "toy_pairs"):
        (log,) = logs.glob(f"samples_{task}_*.jsonl")
        samples = [json.loads(line) for line in log.read_text().splitlines()]
        if task in FAILS_HERE.get(model_type, ("",))[0].split():
            assert all(FAILS_HERE[model_type][1] in str(s["error"]) for s in samples), [s["error"] for s in samples]
            continue
        # a row of more images than the model takes is refused, as the run's screen says
        refused = [s for s in samples if taken is not None and s["doc"]["prompt"].count("<image>") > taken]
        assert all(s["status"] == "too_many_images" for s in refused), [s["status"] for s in refused]
        samples = [s for s in samples if s not in refused]
        assert len(samples) + len(refused) == 2 and all(s["error"] is None for s in samples), samples
        for sample in samples:
            chat = chat_of(sample["doc"]["prompt"])
            template = processor.chat_template or processor.tokenizer.chat_template  # IDEFICS' is its tokenizer's
            expected = processor.apply_chat_template(
                chat, chat_template=template, add_generation_prompt=True, tokenize=False
            )
            # the template's BOS is left to the tokenizer where it adds its own (`PromptStyle.bos`)
            assert sample["arguments"]["gen_args_0"]["arg_0"] in (expected, expected.removeprefix(bos))
    assert run.code == (1 if model_type in FAILS_HERE else 0), run.err
    # One image of a size the probe does not use, three of other sizes: the screen counts as the run does, a count it
    # says is exact is the input ids sent, the model's image features fill its image tokens, and the type's line
    # says what was measured.
    how, measured = measure(folder)
    for one in measured:
        assert one.screened == one.run.counted, one
        if one.screened_exact and one.off != TOO_MANY_IMAGES:
            assert one.screened == one.run.prompt_tokens, one
        # IDEFICS' cross-attention has no image tokens to fill
        if one.run.error is None and hasattr(model_class(model_type), "get_image_features"):
            assert one.run.image_tokens == one.run.image_features > 0, one
    assert documented()[model_type] == row(model_type, ran(model_type, folder, measured), counted(how, measured))


@pytest.mark.slow  # a checkpoint built and run
def test_molmo2s_bos_is_counted_once_where_its_chat_template_writes_it(tmp_path: Path) -> None:
    """Issue 89's reproduction: Molmo2's processor puts its BOS before a prompt that does not start with it, so a
    measured image counted it once an image; with a chat template that writes the BOS itself, the count was one token
    an image over (1,217 against 1,216 with one image, 4,931 against 4,921 with ten)."""
    folder = build("molmo2", tmp_path / "molmo2")
    template = folder / "chat_template.jinja"
    template.write_text("{{ bos_token }}" + template.read_text(encoding="utf-8"), encoding="utf-8")
    for sizes in (ONE, SEVERAL):
        sent = checkpoint_pass(folder, request(sizes))
        assert sent.error is None and sent.exact and sent.counted == sent.prompt_tokens, sent
