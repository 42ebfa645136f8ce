"""No image is decoded before the batch that sends it (issue 19: a 1M row holds ~5,000 images; decoding them while
reading, screening or building requests would hold every row's pixels at once). A decoding backend, the `hf` one with
a tiny LLaVA, runs through the harness command while every PIL decode is set against the batch being sent. And each
image is decoded once per request that sends it (issue 33: the integrity check before the response cache and the
processor each decoded it)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.support.decode_trace import traced
from tests.support.hf_runs import hf_run

pytestmark = pytest.mark.slow  # a tiny LLaVA generates through the harness command


@pytest.mark.parametrize(
    ("storage", "image_threads"), [("embedded", 1), ("shared", 1), ("embedded", 3), ("embedded", None)]
)
def test_no_image_is_decoded_before_the_batch_that_sends_it(
    storage,
    image_threads,
    tmp_path: Path,
    toy_dir: Path,
    toy_shared_dir: Path,
    toy_tasks: Path,
    tiny_llava: Path,
    harness,
) -> None:
    from harness.models.backends.hf.model import HFModel

    threads = () if image_threads is None else (f"image_threads={image_threads}",)  # None: the default, one a core
    data_dir = toy_dir if storage == "embedded" else toy_shared_dir
    with traced(HFModel) as trace:
        run = harness(
            *hf_run("toy_colors,toy_pairs", data_dir, *threads, checkpoint=tiny_llava),
            "--batch_size",
            "2",
            "--include_path",
            toy_tasks,
            "--output_path",
            tmp_path,
        )
    assert run.code == 0, run.err
    assert [len(images) for _, images in trace.batches] == [2, 2, 2, 3, 4, 4]  # 6 colours rows, then 6 pairs rows
    assert trace.misplaced() == []
    # Every image sent was decoded in its batch, and once per request that holds it (issue 33): its bytes are checked
    # against its hash before the response cache, and decoded only for the processor.
    for index, held in enumerate(trace.held):
        assert Counter(sha for _, i, sha in trace.decodes if i == index) == held
    assert trace.extra_decodes() == []
