"""The official code's chat-completions calls for one row, reimplemented from their source and sent through OpenAI's
own SDK to a loopback server (`chat_server.ChatServer`), so a test compares field by field what the `openai` backend
sends with what the official code sent: MMNeedle's GPT-4o call (`needle.py`, Wang-ML-Lab/multimodal-needle-in-a-haystack)
and MMLongBench's `vlm_model/openai_model.py` (EdinburghNLP/MMLongBench at 26197d2), for GPT-4o and Claude 3.7."""

from __future__ import annotations

import base64
import copy
import hashlib
import io
import re
from collections.abc import Callable
from typing import Any

from PIL import Image

from tests.support.chat_server import ChatServer


def needle_azure_call(server: ChatServer, images: list[bytes], instruction: str) -> None:
    """`needle.py:39-48` (the Azure client of api-version 2024-05-01-preview, deployment `gpt-4o`) and `:105-147` (the
    call the paper's GPT-4o ran): each image file's bytes base64-encoded (`:262-268`) as a JPEG data URL at detail high,
    then the instruction as one text part; `max_tokens=300` and nothing else."""
    from openai import AzureOpenAI

    client = AzureOpenAI(
        api_key="test-key", api_version="2024-05-01-preview", base_url=f"{server.base_url}/openai/deployments/gpt-4o"
    )
    content: list[dict[str, object]] = [
        {
            "type": "image_url",
            "image_url": {"url": f"data:image/jpeg;base64,{base64.b64encode(data).decode('utf-8')}", "detail": "high"},
        }
        for data in images
    ]
    content.append({"type": "text", "text": instruction})
    client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "user", "content": content}],  # type: ignore[list-item, misc]
        max_tokens=300,
    )


def openai_model_call(
    server: ChatServer,
    model_name: str,
    text: str,
    images: list[bytes],
    gen_max: int,
    *,
    image_detail: str = "auto",
    url_of: Callable[[bytes], str] | None = None,
) -> None:
    """`openai_model.py:106-167` for one row, sent through OpenAI's SDK to `server`: `prepare_inputs` (`:106-128`: with
    `url_of`, run_api.sh's Hub `--image_file_root`, each image named by its URL, `:112-115`; else a local file decoded,
    made RGB and sent as a PNG data URL, `:117-124`), `format_chat` (`:80-104`: the prompt cut by `re.split`, empty
    texts kept, `detail` on every image) and `generate` (`:138-146`: max_tokens, temperature 0.0 as do_sample is
    False, top_p 1.0). The sleeps and `call_api`'s retries change nothing sent."""
    from openai import OpenAI

    client = OpenAI(api_key="test-key", base_url=server.base_url)
    if url_of is not None:
        image_list = [url_of(data) for data in images]
    else:
        image_list = [f"data:image/png;base64,{_png_base64(data)}" for data in images]
    content: list[dict[str, object]] = []
    image_idx = 0
    for c in re.split(r"(<image>)", text):
        if c == "<image>":
            content.append({"type": "image_url", "image_url": {"url": image_list[image_idx], "detail": image_detail}})
            image_idx += 1
        else:
            content.append({"type": "text", "text": c})
    assert image_idx == len(image_list)
    client.chat.completions.create(
        model=model_name,
        messages=[{"role": "user", "content": content}],  # type: ignore[list-item, misc]
        max_tokens=gen_max,
        temperature=0.0,
        top_p=1.0,
    )


def _png_base64(data: bytes) -> str:
    """`Image.open(image).convert('RGB')` (`openai_model.py:117`), then `encode_image_base64` (`model_utils.py:55-59`)."""
    out = io.BytesIO()
    Image.open(io.BytesIO(data)).convert("RGB").save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode("utf-8")


HUB_IMAGES = "https://huggingface.co/datasets/ZhaoweiWang/image_collection/resolve/main"  # run_api.sh:122


def hub_url(data: bytes) -> str:
    """An image's URL in the authors' Hub collection, as run_api.sh's `--image_file_root` names it (here by the sha256 of
    its bytes: the file the provider fetched)."""
    return f"{HUB_IMAGES}/{hashlib.sha256(data).hexdigest()}"


def named_bytes(body: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions body with each image URL replaced by the sha256 of the bytes it names: a data URL's own, or
    the Hub file's (`hub_url`)."""
    body = copy.deepcopy(body)
    for message in body["messages"]:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part["type"] == "image_url":
                url = part["image_url"]["url"]
                if url.startswith(HUB_IMAGES):
                    part["image_url"]["url"] = url.rsplit("/", 1)[1]
                else:
                    part["image_url"]["url"] = hashlib.sha256(base64.b64decode(url.split(",", 1)[1])).hexdigest()
    return body
