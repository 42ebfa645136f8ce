"""Fixtures for the backend, batching, cache, sharding and merge tests (a pytest plugin of `tests/conftest.py`):
tiny encoded images made with Pillow, the loopback servers (chat completions, with or without OpenAI's Batch API;
Gemini's; Anthropic's), a small MMNeedle build."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from tests.support.anthropic_server import AnthropicServer
from tests.support.chat_server import ChatServer
from tests.support.gemini_server import GeminiServer
from tests.support.model_requests import encode_image
from tests.support.openai_batches import OpenAIBatchDesk


@pytest.fixture(scope="session")
def jpeg_red() -> bytes:
    return encode_image((200, 30, 30), (16, 12), "JPEG")


@pytest.fixture(scope="session")
def png_blue() -> bytes:
    return encode_image((20, 40, 220), (10, 14), "PNG")


@pytest.fixture(scope="session")
def jpeg_green() -> bytes:
    return encode_image((30, 180, 60), (20, 20), "JPEG")


ServerT = TypeVar("ServerT", ChatServer, GeminiServer, AnthropicServer)


def serving(server: ServerT) -> Iterator[ServerT]:
    """A loopback server's fixture body: `server` started, yielded, and stopped after the test."""
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    yield from serving(ChatServer())


@pytest.fixture
def openai_batch_server() -> Iterator[ChatServer]:
    """The chat server with OpenAI's Batch API (`batches`: its `OpenAIBatchDesk`), for the `--batch` tests."""
    yield from serving(ChatServer(batches=OpenAIBatchDesk()))


@pytest.fixture
def batch_journal(tmp_path: Path) -> Path:
    """Where a `--batch` test's model keeps its batch journal (`batch_journal=`; not there yet)."""
    return tmp_path / "batches_model.jsonl"


MMNEEDLE_LIMIT = 3  # positives and negatives per config in `mmneedle_dir`


@pytest.fixture(scope="session")
def mmneedle_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A `--data_dir` with a synthetic MMNeedle build (m1_n2_k1, m10_n1_k1) by the real builder."""
    import datasets

    from builders.mmneedle import build_mmneedle

    previous = datasets.config.HF_DATASETS_CACHE
    datasets.config.HF_DATASETS_CACHE = tmp_path_factory.mktemp("hf_datasets_cache")  # not ~/.cache
    root = tmp_path_factory.mktemp("data")
    build_mmneedle(
        source="synthetic", out_dir=root, configs=["m1_n2_k1", "m10_n1_k1"], limit=MMNEEDLE_LIMIT, seed=0, num_proc=1
    )
    yield root
    datasets.config.HF_DATASETS_CACHE = previous


@pytest.fixture
def gemini_server() -> Iterator[GeminiServer]:
    yield from serving(GeminiServer())


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicServer]:
    yield from serving(AnthropicServer())


@pytest.fixture
def hf_processor_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, dict]]:
    """What the hf backend gives its processor, call by call, as its generation runs on: (`text=`, the number of
    images, the processor settings)."""
    from harness.models.backends.hf.model import HFModel

    given: list[tuple[str, int, dict]] = []
    real = HFModel._generate

    def recording(self, items, settings, processor_kwargs=None):
        given.extend((text, len(pictures), dict(processor_kwargs or {})) for _, text, pictures in items)
        return real(self, items, settings, processor_kwargs)

    monkeypatch.setattr(HFModel, "_generate", recording)
    return given
