"""A stand-in for `vllm.LLM` with the same `chat` call shape, for the parts of the `vllm` backend that
surround the engine (screening, chunking, bisection, replica processes). The real engine needs a GPU
and is exercised by scripts/gpu_check.sh; vLLM's own classes are used where they import (see
test_vllm_backend.py).

Its answer describes what it received: `"<pid>|<CUDA_VISIBLE_DEVICES>|<message summaries>"`, where
an image is `img:<uuid[:8]>:<w>x<h>`. A conversation whose text contains REJECT makes the whole call
raise `ValueError`, as vLLM's validation does; DIE ends the process, HANG blocks for 30 s; a model named "explode" fails
to load. (A replica killed once and restarted: the real engine's, tests/harness/models/vllm_cpu.)
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import time
from types import SimpleNamespace
from typing import Any

CALLS: list[dict[str, Any]] = []  # in-process record of every chat call
FITTED = 3000  # the context length an `auto` engine reports, as if that much fitted the memory


class FakeLLM:
    def __init__(self, **kwargs: Any) -> None:
        if kwargs["model"] == "explode":
            raise RuntimeError("cannot load model 'explode'")
        self.kwargs = kwargs
        self.shutdowns = 0
        core = SimpleNamespace(shutdown=self._shutdown)
        # as vLLM: `max_model_len=-1` (`auto`) is fitted to memory and the fitted value synced to the front end's config
        given = kwargs.get("max_model_len", 4096)
        config = SimpleNamespace(max_model_len=FITTED if given == -1 else given)
        # vLLM's encoder cache holds at least max_num_batched_tokens of one image (`image_limit`): the stand-in's that.
        processor = SimpleNamespace(mm_encoder_cache_size=kwargs.get("max_num_batched_tokens", 0))
        self.llm_engine = SimpleNamespace(model_config=config, engine_core=core, input_processor=processor)

    def _shutdown(self) -> None:
        self.shutdowns += 1

    def chat(
        self,
        conversations,
        sampling_params,
        *,
        use_tqdm,
        chat_template_content_format,
        add_generation_prompt,
        continue_final_message,
    ):
        assert len(conversations) == len(sampling_params)
        CALLS.append(
            {
                "kwargs": self.kwargs,
                "conversations": conversations,
                "sampling": sampling_params,
                "add_generation_prompt": add_generation_prompt,
                "continue_final_message": continue_final_message,
            }
        )
        outputs = []
        for conversation, params in zip(conversations, sampling_params, strict=True):
            pieces = []
            for message in conversation:
                for part in message["content"]:
                    if part["type"] == "text":
                        if "REJECT" in part["text"]:
                            raise ValueError(
                                "The decoder prompt (length 99999) is longer than the maximum model length"
                            )
                        if "DIE" in part["text"]:
                            os._exit(3)  # a replica process that crashes (e.g. a CUDA fault)
                        if "HANG" in part["text"]:
                            time.sleep(30)  # a replica that stops answering
                        pieces.append(f"{message['role']}:{part['text']}")
                    else:
                        image = part["image_pil"]
                        pieces.append(f"img:{part['uuid'][:8]}:{image.size[0]}x{image.size[1]}")
            text = f"{os.getpid()}|{os.environ.get('CUDA_VISIBLE_DEVICES')}|" + ";".join(pieces)
            max_tokens = params.max_tokens if hasattr(params, "max_tokens") else params["max_tokens"]
            completion = SimpleNamespace(text=text, token_ids=list(range(min(3, max_tokens))), finish_reason="stop")
            outputs.append(
                SimpleNamespace(outputs=[completion], prompt_token_ids=[1] * (7 + len(pieces)), num_cached_tokens=0)
            )
        return outputs

    def generate(self, prompts, sampling_params, *, use_tqdm):
        """`LLM.generate` on rendered prompts: the answer names the prompt's last words and each image's size;
        the prompt length is its whitespace-separated words (vLLM would tokenize it)."""
        assert len(prompts) == len(sampling_params)
        CALLS.append({"kwargs": self.kwargs, "prompts": prompts, "sampling": sampling_params, "use_tqdm": use_tqdm})
        outputs = []
        for prompt, params in zip(prompts, sampling_params, strict=True):
            if "REJECT" in prompt["prompt"]:
                raise ValueError("The decoder prompt (length 99999) is longer than the maximum model length")
            images = (prompt.get("multi_modal_data") or {}).get("image", [])
            text = f"{os.getpid()}|{prompt['prompt'].split()[-1]}|" + ";".join(
                f"img:{i.size[0]}x{i.size[1]}" for i in images
            )
            max_tokens = params.max_tokens if hasattr(params, "max_tokens") else params["max_tokens"]
            completion = SimpleNamespace(text=text, token_ids=list(range(min(3, max_tokens))), finish_reason="stop")
            outputs.append(
                SimpleNamespace(
                    outputs=[completion], prompt_token_ids=[1] * len(prompt["prompt"].split()), num_cached_tokens=0
                )
            )
        return outputs


def image_uuids_sent() -> list[str]:
    """The `uuid` of every image part of every conversation the engine was given, in order."""
    return [
        part["uuid"]
        for call in CALLS
        for conv in call["conversations"]
        for message in conv
        for part in message["content"]
        if part["type"] == "image_pil"
    ]


def sampling_dict(**kwargs: Any) -> dict[str, Any]:
    """Stands in for `vllm.SamplingParams` where vLLM is not installed."""
    return dict(kwargs)


# --- helpers for the tests of the vllm backend ----------------------------------------------------------

HAVE_VLLM = importlib.util.find_spec("vllm") is not None
FAKE_LLM = f"{__name__}:FakeLLM"
# With vLLM importable, the engine stand-in receives vLLM's own SamplingParams.
FAKE_SAMPLING = "vllm:SamplingParams" if HAVE_VLLM else f"{__name__}:sampling_dict"


def param(params, name: str):
    return getattr(params, name) if HAVE_VLLM else params[name]


def settings(**kw):
    """`VLLMSettings` from typed values, as a test writes them: the backend's own by name, the rest the engine's."""
    import dataclasses

    from harness.models.backends.vllm_engine.settings import VLLMSettings

    values = {"pretrained": "tiny/qwen-vl", "max_model_len": 2048, "use_tqdm": False, **kw}
    own = {f.name for f in dataclasses.fields(VLLMSettings) if f.init}
    engine = {k: v for k, v in values.items() if k not in own}
    return VLLMSettings(**{k: v for k, v in values.items() if k in own}, engine=engine)


def sized_ref(width: int, height: int, tag: str = ""):
    from harness.api import ImageRef

    return ImageRef(hashlib.sha256(f"{width}x{height}{tag}".encode()).hexdigest(), lambda: b"", width, height)


def fake_model(**kw):
    """A vllm backend over `FakeLLM`."""
    from harness.models.backends.vllm_engine.backend import VLLMModel

    return VLLMModel(settings(**kw), llm_factory=FAKE_LLM, sampling_factory=FAKE_SAMPLING)


def fake_replica(backend: str, args: dict[str, str], batch_size: int, max_batch_tokens: int | None):
    """How a Ray replica builds its backend (`harness.models.backends.replicas.actor.Build`): the vllm backend over `FakeLLM`,
    from the run's model arguments as `VLLMModel.from_args` reads them."""
    from harness.models.backends.vllm_engine.backend import VLLMModel
    from harness.models.backends.vllm_engine.settings import vllm_settings

    assert backend == "vllm"
    defaults = {"pretrained": "tiny/qwen-vl", "max_model_len": "2048", "use_tqdm": "false"}
    return VLLMModel(
        vllm_settings({**defaults, **args}),
        llm_factory=FAKE_LLM,
        sampling_factory=FAKE_SAMPLING,
    )
