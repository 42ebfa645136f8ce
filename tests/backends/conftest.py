"""Fixtures for the backend, batching, cache, sharding and merge tests: tiny encoded images made
with Pillow, requests built from them, and a chat-completions server on loopback."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from PIL import Image

from harness.api import GenerationSettings, ImagePart, ImageRef, Message, Request, TextPart

from .chat_server import ChatServer


def encode_image(color: tuple[int, int, int], size: tuple[int, int], fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format=fmt)
    return buffer.getvalue()


def image_ref(data: bytes, loads: list[str] | None = None) -> ImageRef:
    """An ImageRef over encoded bytes; `loads` (if given) records every load, to check laziness."""
    sha = hashlib.sha256(data).hexdigest()

    def load() -> bytes:
        if loads is not None:
            loads.append(sha)
        return data

    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
    return ImageRef(sha, load, width, height)


def make_request(
    sample_id: str,
    parts: Sequence[str | bytes | ImageRef],
    *,
    system: str | None = None,
    settings: GenerationSettings | None = None,
    task: str = "task_a",
    doc_id: int = 0,
    prefix: str = "",
    text_tokens: int | None = None,
    image_tokens: Sequence[int] | None = None,
) -> Request:
    """A one-turn request: `parts` in order, str -> text, bytes/ImageRef -> image."""
    content = []
    for part in parts:
        if isinstance(part, str):
            content.append(TextPart(part))
        else:
            content.append(ImagePart(part if isinstance(part, ImageRef) else image_ref(part)))
    messages = []
    if system is not None:
        messages.append(Message("system", (TextPart(system),)))
    messages.append(Message("user", tuple(content)))
    n_images = sum(isinstance(p, ImagePart) for p in content)
    return Request(
        task=task,
        doc_id=doc_id,
        sample_id=sample_id,
        messages=tuple(messages),
        settings=settings or GenerationSettings(max_gen_toks=16),
        text_tokens=text_tokens if text_tokens is not None else sum(len(p.split()) for p in parts if isinstance(p, str)),
        image_tokens=tuple(image_tokens) if image_tokens is not None else (64,) * n_images,
        assistant_prefix=prefix,
    )


@pytest.fixture(autouse=True)
def hub_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No Hub: a backend that looks a checkpoint up there (the vllm backend's count) fails at once, not after the
    retries an unreachable network costs; child processes inherit it."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="session")
def jpeg_red() -> bytes:
    return encode_image((200, 30, 30), (16, 12), "JPEG")


@pytest.fixture(scope="session")
def png_blue() -> bytes:
    return encode_image((20, 40, 220), (10, 14), "PNG")


@pytest.fixture(scope="session")
def jpeg_green() -> bytes:
    return encode_image((30, 180, 60), (20, 20), "JPEG")


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    server = ChatServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


MMNEEDLE_LIMIT = 3  # positives and negatives per config in `mmneedle_dir`


@pytest.fixture(scope="session")
def mmneedle_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A `--data_dir` with a synthetic MMNeedle build (m1_n2_k1, m10_n1_k1) by the real builder."""
    import datasets

    from builders.mmneedle import build_mmneedle

    previous = datasets.config.HF_DATASETS_CACHE
    datasets.config.HF_DATASETS_CACHE = tmp_path_factory.mktemp("hf_datasets_cache")  # not ~/.cache
    root = tmp_path_factory.mktemp("data")
    build_mmneedle(source="synthetic", out_dir=root, configs=["m1_n2_k1", "m10_n1_k1"], limit=MMNEEDLE_LIMIT,
                   seed=0, num_proc=1)
    yield root
    datasets.config.HF_DATASETS_CACHE = previous
