"""A stand-in for `sglang.Engine` with the same `generate` call shape, for the parts of the `sglang` backend around
the engine (screening, chunking, bisection, the image cache's size, the runner's resume and journal). The real engine
cannot start here: its scheduler runs SGLang's CUDA kernels (sglang-kernel, flashinfer) on a GPU, and importing it needs
torchvision, which has no build for this CPU torch (tests/support/sglang_classes.py). Everything but the engine
process is real: the backend's arguments are read from SGLang's `ServerArgs` and `SamplingParams`, and each request's
`sampling_params` is built into SGLang's own `SamplingParams` and verified as its tokenizer manager does.

Its answer describes what it received: `"<pid>|<the prompt's last word>|img:<w>x<h>;..."`. A prompt holding REJECT
makes the whole call raise `ValueError` (as SGLang's validation of one request fails its batch); a prompt whose count
of the processor's image token (`IMAGE_TOKEN`) is not its number of images fails the same way, as SGLang's processor
cannot pair them; a model named "explode" fails to load."""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

CALLS: list[dict[str, Any]] = []  # every generate call, in this process
ENGINES: list[FakeEngine] = []  # every engine built, with the image cache size it saw
IMAGE_TOKEN = "<image>"  # the tiny LLaVA's (tests/support/tiny_llava.py)


class FakeEngine:
    def __init__(self, **kwargs: Any) -> None:
        if kwargs["model_path"] == "explode":
            raise RuntimeError("cannot load model 'explode'")
        self.kwargs = kwargs
        self.cache_size_mb = os.environ.get("SGLANG_VLM_CACHE_SIZE_MB")
        self.shutdowns = 0
        self.tokenizer_manager = SimpleNamespace(context_len=kwargs.get("context_length", 4096))
        ENGINES.append(self)

    def generate(self, *, prompt: list[str], image_data: list[list[Any]], sampling_params: list[dict[str, Any]]):
        from sglang.srt.sampling.sampling_params import SamplingParams

        assert len(prompt) == len(image_data) == len(sampling_params)
        CALLS.append({"kwargs": self.kwargs, "prompt": prompt, "image_data": image_data, "sampling": sampling_params})
        outputs = []
        for text, images, given in zip(prompt, image_data, sampling_params, strict=True):
            if "REJECT" in text:
                raise ValueError("The input (99999 tokens) is longer than the model's context length (4096 tokens).")
            if text.count(IMAGE_TOKEN) != len(images):
                raise ValueError(f"{text.count(IMAGE_TOKEN)} image tokens for {len(images)} images")
            params = SamplingParams(**given)  # as TokenizerManager builds it, then verifies it
            params.verify(vocab_size=1000)
            answer = f"{os.getpid()}|{text.split()[-1]}|" + ";".join(f"img:{i.size[0]}x{i.size[1]}" for i in images)
            completion = min(3, params.max_new_tokens or 3)
            meta = {
                "finish_reason": {"type": "length", "length": completion},
                "prompt_tokens": len(text.split()),
                "completion_tokens": completion,
                "cached_tokens": 0,
            }
            outputs.append({"text": answer, "output_ids": list(range(completion)), "meta_info": meta})
        return outputs

    def shutdown(self) -> None:
        self.shutdowns += 1


FAKE_ENGINE = f"{__name__}:FakeEngine"


def fake_model(**args: str):
    """An sglang backend over `FakeEngine`, from model arguments as `--model_args` gives them."""
    from harness.models.backends.sglang_engine.backend import SGLangModel
    from harness.models.backends.sglang_engine.settings import model_settings

    return SGLangModel(model_settings({"pretrained": "tiny/qwen-vl", **args}), engine_factory=FAKE_ENGINE)
