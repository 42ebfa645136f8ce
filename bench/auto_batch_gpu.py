"""`--batch_size auto` on a GPU: a batch that runs out of CUDA memory is halved until one fits (`harness.models.shared.scheduling.auto_batch`).

A tiny random LLaVA with LLaVA-1.5's image shape (576 tokens an image) and eager attention (its attention matrix grows
with batch x length^2) gets 64 requests of 8 images each (about 4.6K prompt tokens), with the process's share of GPU
memory capped so that 64 do not fit. It prints the size that fit, the halvings, the peak memory, the time, and
whether the answers equal those of batches of one (greedy decoding: they must).

    PYTHONPATH=. python bench/auto_batch_gpu.py [--memory_fraction 0.1] [--requests 64]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import tempfile
import time
from pathlib import Path

from PIL import Image

from harness.api import GenerationSettings, ImageRef, Request
from harness.inputs.prompts import messages_from_prompt

IMAGES_PER_REQUEST = 8


def image_bytes(i: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 64), ((37 * i) % 256, (91 * i) % 256, (53 * i) % 256)).save(out, format="PNG")
    return out.getvalue()


def requests(count: int) -> list[Request]:
    out = []
    for n in range(count):
        data = [image_bytes(n * IMAGES_PER_REQUEST + k) for k in range(IMAGES_PER_REQUEST)]
        refs = [ImageRef(hashlib.sha256(d).hexdigest(), load=lambda d=d: d, width=64, height=64) for d in data]
        messages = messages_from_prompt("<image>" * IMAGES_PER_REQUEST + f"Which image is red? {n}", refs)
        out.append(
            Request("bench", n, str(n), messages, GenerationSettings(max_gen_toks=4), 10, (576,) * IMAGES_PER_REQUEST)
        )
    return out


def answers(model, batch: list[Request]) -> list[str | None]:
    replies = [r for piece in model.batches(batch) for r in model.generate(piece)]
    failed = [r.error for r in replies if r.error]
    if failed:  # an answer that is an error would make "same answers" hold vacuously
        raise SystemExit(f"{len(failed)} of {len(replies)} requests failed: {failed[0]}")
    return [r.text for r in replies]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memory_fraction", type=float, default=0.1)
    parser.add_argument("--requests", type=int, default=64)
    args = parser.parse_args()

    import torch

    from harness.models.backends.hf.model import HFModel
    from tests.support.tiny_llava import build_tiny_llava

    if not torch.cuda.is_available():
        raise SystemExit("bench/auto_batch_gpu.py needs a CUDA GPU (a CPU has no device memory to run out of)")
    checkpoint = build_tiny_llava(Path(tempfile.mkdtemp()) / "tiny-llava-336", image_size=336)
    torch.cuda.set_per_process_memory_fraction(args.memory_fraction)
    budget = args.memory_fraction * torch.cuda.get_device_properties(0).total_memory / 2**30
    batch = requests(args.requests)
    model_args = {"pretrained": str(checkpoint), "attn_implementation": "eager", "device": "cuda"}
    model_args["context_length"] = "8192"  # the tiny checkpoint's config says 4096; a request is ~4.6K tokens

    model = HFModel.from_args(model_args, batch_size=args.requests)
    model.fit_batch_size(args.requests)
    torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    fitted = answers(model, batch)
    seconds = time.perf_counter() - started
    peak = torch.cuda.max_memory_allocated() / 2**30
    print(
        f"{torch.cuda.get_device_name(0)}, memory capped at {budget:.1f} GiB; {args.requests} requests x "
        f"{IMAGES_PER_REQUEST} images ({model.prompt_tokens(batch[0])} prompt tokens each)"
    )
    print(f"--batch_size auto: {model.statistics()['auto_batch']}; {seconds:.1f} s; peak {peak:.1f} GiB")
    model.close()

    single = HFModel.from_args(model_args, batch_size=1)
    started = time.perf_counter()
    one_by_one = answers(single, batch)
    print(f"--batch_size 1: {time.perf_counter() - started:.1f} s; same answers: {fitted == one_by_one}")


if __name__ == "__main__":
    main()
