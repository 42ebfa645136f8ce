"""The `openai` backend named by a checkpoint on this machine (`vllm serve FOLDER`) counts as a chat-completions server
counts (issue 96, item 4): the chat as sent rendered by the checkpoint's template, its input ids built by the
processor with no special tokens added. Against `vllm serve` itself: tests/harness/models/vllm_cpu."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from harness.models.backends.openai_chat import screen_model
from harness.models.backends.openai_chat.model import OpenAIChatModel
from tests.support.engine_checkpoints import engine_checkpoint
from tests.support.model_requests import encode_image, make_request

LOOPBACK = "http://127.0.0.1:9/v1"  # never reached: counting sends nothing


@pytest.mark.slow  # a tiny checkpoint written, its processor loaded
def test_a_served_checkpoint_is_counted_as_its_server_tokenizes_the_chat_sent() -> None:
    """Idefics3: its template writes a BOS the tokenizer would add again, and renders "User:" for a turn that opens
    with an image (the request's own shape, sent as it is); the run and the screen count the server's input ids."""
    from transformers import AutoProcessor

    folder = engine_checkpoint("idefics3")
    images = [encode_image((0, 0, 255), (64, 48), "PNG"), encode_image((255, 0, 0), (40, 72), "JPEG")]
    request = make_request("s1", [images[0], "Which colour?", images[1], "And this one?"], system="Be brief.")
    processor = AutoProcessor.from_pretrained(folder)
    chat = [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Which colour?"},
                                     {"type": "image"}, {"type": "text", "text": "And this one?"}]},
    ]  # fmt: skip
    text = processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    pixels = [Image.open(io.BytesIO(data)).convert("RGB") for data in images]
    served = processor(text=[text], images=[pixels], add_special_tokens=False)["input_ids"][0]
    screen = screen_model({"model": str(folder)})
    run = OpenAIChatModel.from_args({"model": str(folder), "base_url": LOOPBACK})
    assert screen.prompt_tokens(request) == run.prompt_tokens(request) == len(served)
    assert screen.exact(request)
    assert run.token_rule == screen.token_rule
    assert f"as a server of {folder} counts it" in run.token_rule


def test_a_checkpoint_whose_processor_does_not_load_is_counted_as_before_and_says_why(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "idefics3"}')  # a config, no processor
    request = make_request("s1", ["Which colour?"], text_tokens=3)
    run = OpenAIChatModel.from_args({"model": str(tmp_path), "base_url": LOOPBACK})
    assert run.prompt_tokens(request) == 3  # the rows' figures, as before
    assert f"{tmp_path} is a checkpoint here, but the processor and config" in run.token_rule
    assert f"{tmp_path} is a checkpoint here" in screen_model({"model": str(tmp_path)}).token_rule
