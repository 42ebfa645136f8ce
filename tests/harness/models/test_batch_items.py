"""`--batch`: each API backend refuses, before a batch is built, what its request payload would refuse (an image
that does not decode, a request image setting it cannot take), and checks the rest without encoding the images (its
bodies are built once, at submission): a refused request is `invalid_input`, never sent."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest

from harness.api import ImageRef, Request, Response
from harness.models.registry import get_model_class
from harness.models.shared.api_client.calls import ApiModel
from tests.support.model_requests import encode_image, make_request

NOWHERE = "http://127.0.0.1:1"  # nothing is sent: a batch item is built, not submitted
MODELS = {"openai": "test-vlm", "gemini": "gemini-test", "anthropic": "claude-test"}


def model(backend: str, **args: str) -> ApiModel:
    made = get_model_class(backend).from_args({"model": MODELS[backend], "base_url": NOWHERE, "api_key": "k", **args})
    assert isinstance(made, ApiModel)
    return made


def broken_png() -> ImageRef:
    data = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64  # a PNG's signature, then nothing an image is made of
    return ImageRef(hashlib.sha256(data).hexdigest(), lambda: data, 8, 8)


def request_with(image: ImageRef | bytes) -> Request:
    return make_request("s1", ["Which colour?", image])


@pytest.mark.parametrize("backend", ["openai", "gemini", "anthropic"])
def test_a_request_whose_image_decodes_is_a_batch_item(backend: str) -> None:
    args = {"image_format": "png"} if backend != "anthropic" else {}
    item = model(backend, **args)._batch_item(request_with(encode_image((200, 10, 10), (16, 16), "JPEG")))
    assert isinstance(item, dict) and item["request"], item


@pytest.mark.parametrize("backend", ["openai", "gemini", "anthropic"])
@pytest.mark.parametrize("image_format", ["original", "png"])
def test_an_image_that_does_not_decode_is_invalid_input_before_the_batch(backend: str, image_format: str) -> None:
    args = {"image_format": image_format} if backend != "anthropic" else {}
    item = model(backend, **args)._batch_item(request_with(broken_png()))
    assert isinstance(item, Response) and item.text is None
    assert (item.error or "").startswith("invalid_input: image ") and "does not decode" in (item.error or "")


def test_an_image_setting_the_openai_backend_cannot_take_is_invalid_input_before_the_batch() -> None:
    request = replace(
        request_with(encode_image((0, 0, 200), (16, 16), "PNG")), processor_kwargs=(("image_format", "gif"),)
    )
    item = model("openai")._batch_item(request)
    assert isinstance(item, Response) and "invalid_input: " in (item.error or "") and "gif" in (item.error or "")
    unknown = replace(request, processor_kwargs=(("max_pixels", 100),))
    item = model("openai")._batch_item(unknown)
    assert isinstance(item, Response) and "max_pixels" in (item.error or "")
