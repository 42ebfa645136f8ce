"""Where the official wrappers stopped generating, and the aliases that run them (issue 51, phase 2 items 1-2).

InternVL2/2.5: MMLongBench's wrapper (`vlm_model/internvl.py:413-431`, 26197d2) passes its own `eos_token_id` to
`model.chat`, which replaces it with its conversation template's separator alone (OpenGVLab/InternVL 2410d1d,
`internvl_chat/internvl/model/internvl_chat/modeling_internvl_chat.py:359,381`); the separators are those of
`internvl_chat/internvl/conversation.py` (Hermes-2 `<|im_end|>` :359, internlm2-chat `<|im_end|>` :374, phi3-chat
`<|end|>` :388, internvl2_5 `<|im_end|>\\n` :400, stripped). Each checkpoint's config names its template.
"""

from __future__ import annotations

import pytest
from jinja2 import Template

from harness.models.aliases import ALIASES, resolve
from harness.models.families import style_named

# The official conversation templates' separators (conversation.py, above), as `model.chat` strips them.
SEPARATOR = {
    "Hermes-2": "<|im_end|>",
    "internlm2-chat": "<|im_end|>",
    "phi3-chat": "<|end|>",
    "internvl2_5": "<|im_end|>",
}
# The template each checkpoint's config.json names (`template`), the harness's alias for it.
TEMPLATE = {
    "internvl2-1b": "Hermes-2",
    "internvl2-2b": "internlm2-chat",
    "internvl2-4b": "phi3-chat",
    "internvl2-8b": "internlm2-chat",
    **{f"internvl2.5-{size}": "internvl2_5" for size in ("1b", "2b", "4b", "8b", "26b")},
}


@pytest.mark.parametrize("name", sorted(TEMPLATE))
def test_each_internvl2_alias_stops_on_its_conversation_template_s_separator_alone(name: str) -> None:
    backend, args, _ = resolve(name, {})
    assert backend == "vllm"
    assert args["eos_tokens"] == SEPARATOR[TEMPLATE[name]]


@pytest.mark.parametrize("name", sorted(TEMPLATE))
def test_the_stop_token_is_what_the_alias_s_bundled_template_ends_an_answer_with(name: str) -> None:
    """The transcribed template and the stop agree: an answer, rendered as a past turn, is followed by the stop."""
    style = style_named(ALIASES[name].args["prompt_style"])
    assert style.template_text is not None
    messages = [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "ANSWER"}]
    text = Template(style.template_text).render(messages=messages, add_generation_prompt=False)
    assert text.split("ANSWER", 1)[1].startswith(ALIASES[name].args["eos_tokens"])


def test_onevision_s_alias_keeps_four_tiles_as_the_official_wrapper_and_its_offline_estimate_follows() -> None:
    """LLaVA-OneVision: MMLongBench's wrapper keeps the pinpoints of at most 4 tiles of 384 px
    (`vlm_model/llava_onevision.py:44-49`, `num_crops = 4` without `--image_resize`); the alias does, a large image
    is sent as a 2x2 grid (its tokens its features), and the family's offline estimate counts the same."""
    from harness.models.backends.hf import screen_model
    from tests.support.forward_pass import forward_pass
    from tests.support.model_requests import encode_image, make_request

    backend, args, _ = resolve("llava-onevision", {})
    assert backend == "hf" and args["max_grid_tiles"] == "4"
    big = make_request("s", ["Look: ", encode_image((9, 9, 9), (1500, 1500), "PNG"), " What?"])
    sent = forward_pass("llava-onevision", big, max_grid_tiles=args["max_grid_tiles"])
    assert sent.image_tokens == sent.image_features == 729 + 54 * 54 + 54  # base + a 2x2 grid's + its newlines
    offline = screen_model(args)  # its checkpoint not on this machine: the family its alias declares
    assert offline.estimate and "the alias that names it" in offline.rule  # the family's rule, not the processor
    assert offline.prompt_tokens(big) - big.text_tokens == sent.image_tokens


@pytest.mark.parametrize("backend", ["vllm", "openai"])
def test_onevision_s_alias_on_another_backend_is_refused_not_run_with_the_whole_grid(backend: str) -> None:
    from harness.errors import UserError

    with pytest.raises(UserError, match="max_grid_tiles=4 .* hf backend only"):
        resolve("llava-onevision", {"backend": backend})
