#!/usr/bin/env python
"""A checkpoint's chat template rendered as a run renders it, once a request (`ProcessorCount.render`, each render
within the bounds of `harness.models.facts.bounded_render`): the tiny LLaVA's processor, in one process, on requests
of MMNeedle's shape (10 images and its question, some hundred bytes) and of a long-context row's (one image and 400 KB
of text). Per shape: the first render (which sets up what bounds it) and the median of the next --renders, wall time.

Usage: .venv/bin/python bench/template_render.py [--renders 2000]
(run from the repository root; PYTHONPATH=<a checkout> times that checkout's harness)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.model_requests import encode_image, make_request  # noqa: E402
from tests.support.tiny_llava import build_tiny_llava  # noqa: E402

QUESTION = "Given 10 images indexed from 1 to 10, each divided into 2*2 subimages, identify the subimage that matches "


def shapes() -> dict[str, list[str | bytes]]:
    image = encode_image((200, 30, 30), (56, 56), "PNG")
    return {
        "10 images, 300 B of text": [*[image] * 10, QUESTION + "the caption: a red star."],
        "1 image, 400 KB of text": [image, "a long document. " * 24_000],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--renders", type=int, default=2000)
    args = parser.parse_args()
    from harness.models.shared.hf_counting import ProcessorCount

    with tempfile.TemporaryDirectory() as work:
        count = ProcessorCount.load(str(build_tiny_llava(Path(work))), offline=True)
        for name, parts in shapes().items():
            requests = [make_request(f"s{i}", parts, doc_id=i) for i in range(args.renders + 1)]
            times = []
            for request in requests:
                started = time.perf_counter()
                count.render(request)
                times.append(time.perf_counter() - started)
            first, rest = times[0], statistics.median(times[1:])
            print(f"{name}: first {first * 1e3:.2f} ms, then median {rest * 1e6:.0f} us ({args.renders} renders)")


if __name__ == "__main__":
    main()
