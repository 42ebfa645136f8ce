"""The `hf` backend's text-only path (`text_only=true`, issue 51 item 4): a text LLM sent what MMLongBench's official
text-only wrapper sent (`vlm_model/text_only_model.py`): its chat, its images dropped, and the context cut at its end to
the row's length less the answer's tokens, compared with a reimplementation of the wrapper
(`tests/support/official_text_only.py`) on a Qwen2.5-style tokenizer and template built in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.api import GenerationSettings, ImagePart, ImageRef, Message, Request, TextPart
from harness.errors import UserError
from harness.fit_context import FitContext
from harness.inputs.prompts import messages_from_prompt
from harness.models.backends.hf.text_only import TextOnlyCount, yarn_parameters
from tests.support.official_text_only import PASSAGE, SYSTEM, TEXT_RAG_USER, tokenize
from tests.support.tiny_qwen2_text import build_tiny_qwen2_text, tiny_qwen2_tokenizer

WORDS = "harbour copper orchard ember falcon saffron lagoon meadow glacier canyon willow prairie velvet quartz".split()


@pytest.fixture(scope="module")
def count() -> TextOnlyCount:
    from transformers import Qwen2Config

    return TextOnlyCount(tiny_qwen2_tokenizer(), Qwen2Config(max_position_embeddings=32768), name="tiny-qwen2.5")


def sample(passages: int) -> dict[str, str]:
    """A `triviaqa` sample as the official loader builds it (data.py:141-148): passages joined, the entity named."""
    ctxs = [
        {"title": f"Entity {i}", "text": " ".join(WORDS[(i + k) % len(WORDS)] for k in range(12))}
        for i in range(passages)
    ]
    return {"context": "\n\n".join(PASSAGE.format(**c) for c in ctxs), "question": "Where does Entity 3 live?"}


def request_for(fields: dict[str, str], length: int, max_gen_toks: int = 128, context: str | None = None) -> Request:
    """The request a `fit_context` task builds from the row: the filled template, the answer prefix, the context's
    place (`context`: what the task located, where it differs from the prompt's)."""
    prompt = TEXT_RAG_USER.format(**fields)
    located = FitContext.located(prompt, fields["context"], length)
    if context is not None:
        located = FitContext(located.start, located.end, length, FitContext.located(context, context, 1).sha256)
    return Request(
        task="mmlongbench_ablation_triviaqa_8k",
        doc_id=0,
        sample_id="viquae_3#0",
        messages=messages_from_prompt(prompt, []),
        settings=GenerationSettings(max_gen_toks=max_gen_toks),
        text_tokens=0,
        image_tokens=(),
        assistant_prefix=SYSTEM,
        fit_context=located,
    )


@pytest.mark.parametrize(
    ("passages", "length", "cut"),
    [(40, 8192, False), (120, 1024, True), (300, 2048, True), (300, 4096, True), (700, 8192, True)],
)
def test_a_long_context_is_cut_at_its_end_as_the_official_wrapper_cuts_it(
    count: TextOnlyCount, passages: int, length: int, cut: bool
) -> None:
    fields = sample(passages)
    official_prompt, official_ids = tokenize(count.tokenizer, fields, length, 128)
    fitted = count.fitted(request_for(fields, length))
    assert fitted.problem is None and (fitted.cut is not None) == cut
    assert fitted.prompt == official_prompt and fitted.ids == official_ids  # the same text and the same ids
    uncut = count.fitted(request_for(fields, 10**6))
    if len(uncut.ids) > length - 128:  # cut: the context's end went, the instruction and the question stayed
        assert fitted.cut is not None and fitted.cut["tokens_before"] == len(uncut.ids)
        assert fitted.cut["fitted_to"] == length - 128 and len(fitted.ids) < len(uncut.ids)
        assert fitted.prompt.startswith(uncut.prompt[: uncut.prompt.index("Document (Title: Entity 1)")])
        assert fitted.prompt.endswith(
            "\n\nQuestion: Where does Entity 3 live?<|im_end|>\n<|im_start|>assistant\nAnswer:"
        )
    else:
        assert fitted.cut is None and fitted.prompt == uncut.prompt
    assert count.prompt_tokens(request_for(fields, length)) == len(official_ids)  # the count is what is sent


def test_the_prompt_is_the_templates_with_the_answer_continued(count: TextOnlyCount) -> None:
    """The checkpoint's template (Qwen2.5's default system turn), the user turn as one string, "Answer:" continued;
    no special token added by the tokenizer."""
    fitted = count.fitted(request_for(sample(2), 8192))
    assert fitted.prompt.startswith("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud.")
    assert fitted.prompt.endswith("<|im_end|>\n<|im_start|>assistant\nAnswer:")
    assert fitted.ids == count.tokenizer(fitted.prompt, add_special_tokens=False).input_ids


def test_a_context_shorter_than_what_must_go_is_over_length(count: TextOnlyCount) -> None:
    """Where the instruction alone outgrows the length, the wrapper's `offset_mapping[0][-n]` raised IndexError: here
    the sample is over_length, sent uncut to no model."""
    fitted = count.fitted(request_for(sample(1), 128 + 40))
    assert fitted.problem is not None and fitted.problem.startswith("over_length: the context has ")
    with pytest.raises(IndexError):
        tokenize(count.tokenizer, sample(1), 128 + 40, 128)


def test_a_prompt_changed_after_the_task_located_its_context_is_not_cut(count: TextOnlyCount) -> None:
    fields = sample(300)
    fitted = count.fitted(request_for(fields, 2048, context="another context"))
    assert fitted.problem is not None and fitted.problem.startswith("invalid_input: the prompt changed")


def test_images_are_dropped_and_their_placeholders_left_as_text(count: TextOnlyCount) -> None:
    """The wrapper formats the user template as text and loads no image: `<image>` stays in the prompt."""
    image = ImageRef("ab" * 32, lambda: b"", 28, 28)
    request = Request(
        task="t",
        doc_id=0,
        sample_id="s",
        messages=(Message("user", (TextPart("Look: "), ImagePart(image), TextPart(" What is it?"))),),
        settings=GenerationSettings(max_gen_toks=16),
        text_tokens=0,
        image_tokens=(4,),
        assistant_prefix="Answer:",
    )
    sent = count.sent(request)
    assert "<|im_start|>user\nLook: <image> What is it?<|im_end|>" in sent.text and sent.images == ()


def test_yarn_extends_the_checkpoints_positions_keeping_its_theta() -> None:
    """`yarn_factor` is the wrapper's `--use_yarn` (text_only_model.py:116-124: yarn, factor 4 over 32,768)."""
    from transformers import Qwen2Config

    config = Qwen2Config(max_position_embeddings=32768, rope_parameters={"rope_type": "default", "rope_theta": 1e6})
    assert yarn_parameters(config, 4.0) == {
        "rope_type": "yarn",
        "rope_theta": 1e6,
        "factor": 4.0,
        "original_max_position_embeddings": 32768,
    }
    assert TextOnlyCount(tiny_qwen2_tokenizer(), config, name="t", yarn_factor=4.0).context_length == 131072


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"yarn_factor": "4"}, "yarn_factor: a setting of the text-only path"),
        ({"text_only": "true", "prompt_style": "gemma3"}, "another prompt_style"),
        ({"prompt_style": "text_only"}, "for text_only=true alone"),
    ],
)
def test_settings_the_text_only_path_does_not_take_are_refused(args: dict[str, str], words: str) -> None:
    from harness.models.backends.hf.settings import HFSettings
    from harness.models.facts.args import settings_from_args

    with pytest.raises((UserError, ValueError), match=words):
        settings_from_args(HFSettings, {"pretrained": "x", **args}, "hf")


def test_the_text_llm_aliases_are_refused_on_vllm() -> None:
    from harness.models.aliases import resolve

    with pytest.raises(UserError, match="text_only=true .* is a setting of the hf backend only"):
        resolve("qwen2.5-7b-instruct", {"backend": "vllm"})


def test_the_model_loads_with_yarn_and_sends_what_it_counted(tmp_path: Path) -> None:
    """A tiny random Qwen2 causal LM, loaded through the `hf` backend with `text_only=true`: YaRN in its config, the
    request it answers rendered as counted, the cut recorded in its statistics."""
    from harness.models.backends.hf.model import HFModel
    from harness.models.backends.hf.text_only import TextOnlyModel

    checkpoint = build_tiny_qwen2_text(tmp_path / "Qwen2.5-7B-Instruct")
    model = HFModel.from_args({"pretrained": str(checkpoint), "text_only": "true", "yarn_factor": "4", "threads": "1"})
    try:
        assert isinstance(model, TextOnlyModel)
        assert model.model.config.rope_parameters["rope_type"] == "yarn"
        assert model.model.config.rope_parameters["factor"] == 4.0
        request = request_for(sample(300), 2048, max_gen_toks=4)
        (response,) = model.generate([request])
        assert response.error is None and response.sent is not None
        assert response.usage["prompt_tokens"] == model.prompt_tokens(request) <= 2048 - 4
        assert response.sent.text == tokenize(model.tokenizer, sample(300), 2048, 4)[0]
        cut = model.count.fitted(request).cut
        assert cut is not None and cut["tokens_after"] == response.usage["prompt_tokens"]
        assert model.statistics()["text_only_fit"] == {
            "requests_cut": 1,
            "tokens_cut": cut["tokens_before"] - cut["tokens_after"],
        }
        assert model.identity()["text_only"] is True and model.identity()["prompt_style"]["name"] == "text_only"
    finally:
        model.close()
