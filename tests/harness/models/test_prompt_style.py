"""Prompt styles: the chat each official wrapper built (content shape, image places, system message, prefill, BOS),
rendered through the code the backends count and send with (`ProcessorCount.render`)."""

from __future__ import annotations

import importlib

import pytest
from tokenizers import processors

from harness.api import GenerationSettings, ImagePart, ImageRef, Message, Request, TextPart
from harness.models.families import FAMILIES, style_named, styles
from harness.models.families.internvl import INTERNVL2_5_SYSTEM
from harness.models.shared.hf_counting import ProcessorCount
from tests.support.tiny_llava import CHAT_TEMPLATE, tiny_tokenizer


def request(prefix: str = "Answer:") -> Request:
    image = ImageRef("a" * 64, lambda: b"", 28, 28)
    parts = (TextPart("Look: "), ImagePart(image), TextPart(" then "), ImagePart(image), TextPart(" Question?"))
    return Request(
        task="mmlongbench_vrag_infoseek_8k",
        doc_id=0,
        sample_id="s",
        messages=(Message("user", parts),),
        settings=GenerationSettings(),
        text_tokens=5,
        image_tokens=(4, 4),
        assistant_prefix=prefix,
    )


def count(style: str, template: str | None = None, adds_bos: bool = False) -> ProcessorCount:
    tokenizer = tiny_tokenizer()
    if adds_bos:  # as a Llama or Gemma tokenizer: BOS before every text it tokenizes with its defaults
        bos = (tokenizer.bos_token, tokenizer.bos_token_id)
        tokenizer._tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[bos])
    return ProcessorCount(tokenizer, None, name="tiny", chat_template=template, style=style_named(style))


# A string-only template, as Phi-3.5-vision's: it concatenates message['content'].
STRING_TEMPLATE = (
    "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] + '<|end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)


def test_phi_sends_one_string_with_its_images_inline_and_continues_the_prefix() -> None:
    prompt = count("phi", STRING_TEMPLATE).render(request())
    assert prompt == "<|user|>\nLook: <|image_1|> then <|image_2|> Question?<|end|>\n<|assistant|>\nAnswer:"
    with pytest.raises(TypeError):  # a list of parts, as every style sent before, cannot render
        count("default", STRING_TEMPLATE).render(request())


def test_internvl_sends_its_system_message_and_no_prefill() -> None:
    counted = count("internvl2_5")  # its own template: model.chat's conversation
    assert counted.render(request()) == (
        f"<|im_start|>system\n{INTERNVL2_5_SYSTEM}<|im_end|>\n<|im_start|>user\nLook: <image> then <image> Question?"
        "<|im_end|>\n<|im_start|>assistant\n"
    )


def test_a_template_bos_is_the_only_bos_where_the_wrapper_tokenized_in_the_template() -> None:
    """Gemma 3's wrapper tokenizes inside `apply_chat_template`, which adds no second BOS; a wrapper that renders
    text and hands it to the processor (Idefics3's) gets the tokenizer's BOS on top of the template's."""
    template = "{{ bos_token }}" + CHAT_TEMPLATE
    gemma, idefics = count("gemma3", template, adds_bos=True), count("idefics", template, adds_bos=True)
    bos = gemma.tokenizer.bos_token_id
    once = gemma.tokenizer(gemma.render(request())).input_ids
    twice = idefics.tokenizer(idefics.render(request())).input_ids
    assert once.count(bos) == 1 and once[0] == bos
    assert twice[:2] == [bos, bos]


def test_pixtral_text_goes_under_content_and_every_style_is_described() -> None:
    chat = style_named("pixtral").chat(request().messages, "Answer:", "[IMG]")
    assert chat[0]["content"][0] == {"type": "text", "content": "Look: "}
    assert chat[-1] == {"role": "assistant", "content": "Answer:"}
    assert style_named("ovis2").chat(request().messages, "Answer:", "<image>") == [
        {"role": "user", "content": "Look: <image> then <image> Question?"}
    ]
    for style in styles().values():
        assert style.describe()["name"] == style.name
    # Each style is its family's, which says what official code it follows (the source, in its module's words).
    for module in FAMILIES.values():
        family = importlib.import_module(module)
        if family.FAMILY.styles:
            assert family.__doc__ and ("official" in family.__doc__ or "conv_templates" in family.__doc__), module
    with pytest.raises(ValueError, match="prompt_style='nope': expected one of"):
        style_named("nope")


def test_minicpm_v_s_string_joins_its_pieces_and_its_thinking_mode_reaches_the_template() -> None:
    """MiniCPM-V 4.5's `model.chat`: each image `(<image>./</image>)`, the pieces joined by newlines; its thinking style
    renders the template with `enable_thinking=True`, sends no prefix, and the plain one renders it without."""
    template = (
        "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% if enable_thinking %}<think>\n{% endif %}{% endif %}"
    )
    assert style_named("minicpm_v").chat(request().messages, "Answer:", "<image>") == [
        {"role": "user", "content": "Look: \n(<image>./</image>)\n then \n(<image>./</image>)\n Question?"},
        {"role": "assistant", "content": "Answer:"},
    ]
    thinking = count("minicpm_v_thinking", template).render(request())
    plain = count("minicpm_v", template).render(request(prefix=""))
    assert thinking.endswith("<assistant><think>\n") and "Answer:" not in thinking
    assert plain.endswith("<assistant>")
