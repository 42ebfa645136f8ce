"""The sglang backend runs requests in the cache order by default (`harness.models.shared.scheduling.prefix_order`), across
every task of the run, so that RadixAttention serves the prefill of the rows that share a haystack; `request_order=
length` turns the order off. Either way the same answers reach the same journals. The engine is the stand-in
(tests/support/fake_sglang.py), the prompts the tiny LLaVA's chat template renders."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tests.support import fake_sglang
from tests.support.engine_order_runs import NIAH_CONFIGS, journalled_answers

pytest.importorskip("sglang.srt.server_args", reason="SGLang's classes (make test installs them)")


@pytest.fixture(scope="module")
def mmlb_dir(fixture_builds) -> Path:
    return fixture_builds(mmlongbench=NIAH_CONFIGS)  # the other engine's order test reads the same build


def run(order: str, data: Path, out: Path, checkpoint: Path) -> tuple[list[list[str]], dict[str, list]]:
    """(prompts in the order the engine got them, each as its pieces: text between images, and each image by a hash
    of its pixels; {task: sorted (sample id, response, metrics)})."""
    model = fake_sglang.fake_model(pretrained=str(checkpoint), context_length="65536", request_order=order)
    fake_sglang.CALLS.clear()
    journals = journalled_answers(model, data, out)
    sent = [
        pieces(prompt, images)
        for call in fake_sglang.CALLS
        for prompt, images in zip(call["prompt"], call["image_data"], strict=True)
    ]
    return sent, journals


def pieces(prompt: str, images: list) -> list[str]:
    texts = prompt.split(fake_sglang.IMAGE_TOKEN)
    hashes = [hashlib.sha256(image.tobytes()).hexdigest() for image in images]
    return [piece for text, image in zip(texts, [*hashes, ""], strict=True) for piece in (text, image)]


def shared_prefill(prompts: list[list[str]]) -> int:
    """Pieces each prompt shares from its start with the one sent before it: what a prefix cache can reuse."""
    return sum(len(os.path.commonprefix([a, b])) for a, b in zip(prompts, prompts[1:], strict=False))


def test_the_engine_gets_the_cache_order_and_the_journals_hold_the_same_answers(
    mmlb_dir: Path, tmp_path: Path, tiny_llava: Path
) -> None:
    cache_sent, cache_journals = run("cache", mmlb_dir, tmp_path / "cache", tiny_llava)
    length_sent, length_journals = run("length", mmlb_dir, tmp_path / "length", tiny_llava)
    assert cache_journals == length_journals and all(cache_journals.values())
    assert sorted(cache_sent) == sorted(length_sent) and cache_sent != length_sent
    assert shared_prefill(cache_sent) > shared_prefill(length_sent)  # neighbours share more: the cache serves more
