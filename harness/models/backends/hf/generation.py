"""What the `hf` backend's two paths share: `model.HFModel`, a vision-language model with its processor, and
`text_only.TextOnlyModel`, a text LLM with its tokenizer (`text_only=true`): batching, a padded batch decoded greedily
(or sampled, if the task asks) with its stop strings and finish reasons, the identity the results and the response
cache record, and closing.

Batches: `--batch_size B` requests each, in the runner's long-first order; or, with
`--max_batch_tokens N`, by the rows' precomputed token counts (`harness.models.shared.scheduling.batching`): a batch never holds
more than N tokens counting padding (requests x its longest prompt + max_gen_toks), at most B requests
(the CLI's default B is 64 then), long-first; a request over N alone runs in a batch of its own.
`--batch_size auto`: batches start at `--max_batch_size` (64) requests and halve on out-of-memory
(`harness.models.shared.scheduling.auto_batch`); the size that fit is recorded in the results."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from harness.api import GenerationSettings, Model, ModelFacts, Request, Response
from harness.models.backends.hf.settings import HFSettings, context_limit, images_taken, window_passed
from harness.models.facts.args import settings_from_args
from harness.models.facts.checkpoint import missing_timm, require_checkpoint
from harness.models.facts.prompt_style import PromptStyle
from harness.models.shared.answer_text import answer_text, generated_tokens
from harness.models.shared.library_gc import libraries_imported
from harness.models.shared.scheduling.auto_batch import FittingBatchSize
from harness.models.shared.scheduling.batching import token_budget_batches
from harness.sent import Sent, token_ids_sha256

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


class PromptCount(Protocol):
    """What renders and counts a path's prompts (`hf_counting.ProcessorCount`, `text_only.TextOnlyCount`)."""

    style: PromptStyle
    tokenizer: Any
    chat_template: str
    context_length: int | None  # the checkpoint's own

    @property
    def token_rule(self) -> str: ...
    def prompt_tokens(self, request: Request) -> int: ...
    def decode_encode(self, text: str) -> str: ...
    def sent(self, request: Request, prompt: str | None = None) -> Sent: ...


def generation_without_sklearn() -> None:
    """transformers' generation imported with scikit-learn out of sight: where sklearn is installed (lm-eval and
    sentence-transformers bring it) `transformers.generation.candidate_generator` imports `sklearn.metrics` at once
    (about 1.1 s), for assisted decoding's confidence threshold, which no run here uses. Hidden only while that module
    imports (`find_spec` finds no module `sys.modules` holds as None); a task that imports sklearn later gets it."""
    if "transformers.generation.candidate_generator" in sys.modules or "sklearn" in sys.modules:
        return
    sys.modules["sklearn"] = None  # type: ignore[assignment]
    try:
        import transformers.generation.candidate_generator  # noqa: F401
    finally:
        del sys.modules["sklearn"]


def import_libraries(load_weights: bool) -> None:
    """torch, and with the weights transformers' generation (`generation_without_sklearn`) and its model classes."""
    import torch  # noqa: F401

    if load_weights:
        generation_without_sklearn()
        import transformers.models.auto.modeling_auto  # noqa: F401


class HFGeneration(Model):
    """A path's model, tokenizer, settings and prompt count (`count`), set by its `__init__`; what the model is told
    of a prompt is the count's."""

    torch: ModuleType
    settings: HFSettings
    pretrained: str
    revision: str | None
    dtype: str
    chat_template_sha256: str
    max_batch_tokens: int | None
    fitting: FittingBatchSize | None  # --batch_size auto
    tokenizer: PreTrainedTokenizerBase
    # None without weights: a Ray pool's driver, which counts and batches (`without_weights`). Any: transformers
    # annotates `to` and `generate` of the auto class's models for other callers (`to(device)` reads as an error).
    model: Any

    count: PromptCount

    @property
    def token_rule(self) -> str:
        return self.count.token_rule

    def prompt_tokens(self, request: Request) -> int:
        """The prompt as this model is sent it (the count's: the chat rendered and tokenized, each image as the
        processor expands it, the text-only path's fit)."""
        return self.count.prompt_tokens(request)

    def text_round_trip(self) -> Callable[[str], str]:
        return self.count.decode_encode

    def render(self, request: Request) -> Sent:
        """What `generate` gives the model for `request` (the count's `sent`)."""
        return self.count.sent(request)

    # `--model_args` a path's `from_args` adds to those given (the text-only path's `text_only=true`)
    path_args: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def from_args(
        cls,
        args: dict[str, str],
        *,
        batch_size: int = 1,
        max_batch_tokens: int | None = None,
        load_weights: bool = True,
    ) -> Model:
        if "pretrained" not in args:
            raise ValueError("hf needs a checkpoint: --model_args pretrained=ORG/NAME or a local folder")
        settings = settings_from_args(HFSettings, {**args, **cls.path_args}, "hf")
        require_checkpoint(settings.pretrained, settings.revision)  # in seconds, before from_pretrained's retries
        path = cls.path_for(settings)
        with libraries_imported():  # before the model exists: none of it is frozen with them (`library_gc`)
            import_libraries(load_weights)
        return path(settings, batch_size=batch_size, max_batch_tokens=max_batch_tokens, load_weights=load_weights)

    @classmethod
    def path_for(cls, settings: HFSettings) -> type[HFGeneration]:
        """The class that runs `settings` (`model.HFModel` hands `text_only=true` to the text-only path)."""
        return cls

    def __init__(
        self,
        settings: HFSettings,
        *,
        batch_size: int = 1,
        max_batch_tokens: int | None = None,
        load_weights: bool = True,
    ) -> None:
        """What either path sets before it loads anything: torch's threads, the settings, the device (one that this
        torch cannot place weights on is refused here, before the processor or the weights load); then what the path
        loads (`_load`)."""
        import torch

        if load_weights and (problem := placement_problem(settings, torch)):
            raise ValueError(problem)
        if settings.threads:
            torch.set_num_threads(settings.threads)
        self.torch = torch
        self.settings = settings
        self.pretrained = settings.pretrained
        self.revision = settings.revision
        self.max_batch_tokens = max_batch_tokens
        self.fitting = None
        here = torch.accelerator.current_accelerator(check_available=True)
        self.device = settings.device if settings.device not in (None, "auto") else (here.type if here else "cpu")
        if load_weights and (problem := missing_timm(settings.pretrained, settings.revision)):
            raise ValueError(problem)
        self._load(settings, batch_size, load_weights)

    def _load(self, settings: HFSettings, batch_size: int, load_weights: bool) -> None:
        """The path's count and (with `load_weights`) weights, then `_loaded`."""
        raise NotImplementedError

    def _loaded(self, batch_size: int, **facts: Any) -> None:
        """Once `count` and `model` are set: the weights (None: a Ray pool's driver) in eval mode on the device, the
        count's tokenizer padding on the left (its EOS as padding where it has none), the chat template's hash and the
        dtype, as the identity records them; the facts the runner reads (`facts`: the path's own besides)."""
        model, settings = self.model, self.settings
        if model is not None:
            model.eval()
            if not settings.device_map:
                model.to(self.device)
        tokenizer = self.tokenizer = self.count.tokenizer
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.chat_template_sha256 = hashlib.sha256(self.count.chat_template.encode()).hexdigest()
        self.dtype = str(model.dtype).replace("torch.", "") if model is not None else settings.dtype
        self._facts = ModelFacts(
            context_length=context_limit(settings, self.count.context_length),
            window=window_passed(settings, self.count.context_length),
            max_images=images_taken(settings, self.count),
            batch_size=batch_size,
            chat_template=self.count.chat_template,
            request_order=settings.request_order,
            **facts,
        )

    # ----------------------------------------------------------------------------- batching
    def request_cost(self, request: Request) -> int:
        """Tokens a request takes in a padded batch: its prompt (vision tokens counted under this
        model's pixel cap, as the runner screens them) plus what it may generate."""
        return self.prompt_tokens(request) + request.settings.max_gen_toks

    def batches(self, requests: Sequence[Request]) -> Iterator[list[Request]]:
        batches = (
            super().batches(requests)
            if not self.max_batch_tokens
            else token_budget_batches(
                requests,
                max_batch_tokens=self.max_batch_tokens,
                max_batch_size=self.facts.batch_size,
                cost=self.request_cost,
                sort_long_first=self.facts.request_order == "length",
            )
        )  # else the runner's cache order
        if self.fitting is None:
            return batches
        fitting = self.fitting
        return (piece for batch in batches for piece in fitting.split(batch))

    def fit_batch_size(self, start: int) -> str | None:
        self.fitting = FittingBatchSize(start)
        self._facts = replace(self._facts, batch_size=start)
        return None

    def statistics(self) -> dict[str, object]:
        return {"auto_batch": self.fitting.describe()} if self.fitting else {}

    def _decode(self, inputs: Any, settings: GenerationSettings) -> list[Response]:
        torch = self.torch
        inputs = inputs.to(self.model.device)
        if "pixel_values" in inputs and inputs["pixel_values"].is_floating_point():
            inputs["pixel_values"] = inputs["pixel_values"].to(self.model.dtype)
        kwargs: dict[str, Any] = {"max_new_tokens": settings.max_gen_toks, "pad_token_id": self.tokenizer.pad_token_id}
        if settings.sampled:
            kwargs.update(do_sample=True, temperature=settings.temperature, top_p=settings.top_p)
            if settings.seed is not None:
                torch.manual_seed(settings.seed)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            output = self.model.generate(**inputs, **kwargs)
        sequences = getattr(output, "sequences", output)  # a model whose generate answers an output (DiffusionGemma's)
        new_tokens = sequences[:, inputs["input_ids"].shape[1] :]
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        prompt_lengths = inputs["attention_mask"].sum(dim=1).tolist()
        prompts = [  # each row's ids without its padding, as the model was given them
            token_ids_sha256([i for i, kept in zip(ids, mask, strict=True) if kept])
            for ids, mask in zip(inputs["input_ids"].tolist(), inputs["attention_mask"].tolist(), strict=True)
        ]
        responses = []
        for row, prompt_length, prompt in zip(new_tokens.tolist(), prompt_lengths, prompts, strict=True):
            end = next((k for k, token in enumerate(row) if token in eos_ids), None)
            ids = row if end is None else row[:end]
            text, stop = answer_text(self.tokenizer, ids, settings.until)  # as every backend with the ids decodes
            stopped = end is not None or stop is not None
            finish = "stop" if stopped or len(ids) < settings.max_gen_toks else "length"
            responses.append(
                Response(
                    text,
                    finish_reason=finish,
                    usage={
                        "prompt_tokens": int(prompt_length),
                        "completion_tokens": generated_tokens(self.tokenizer, ids, settings.until, end is not None),
                    },
                    prompt_ids_sha256=prompt,
                )
            )
        return responses

    # ------------------------------------------------------------------------------ identity
    def identity(self) -> dict[str, Any]:
        config = self.model.config
        identity: dict[str, Any] = {
            "model": "hf",
            "pretrained": self.pretrained,
            "revision": self.revision,
            "commit": getattr(config, "_commit_hash", None),
            "dtype": self.dtype,
            "max_pixels": self.facts.max_pixels,
            "trust_remote_code": self.settings.trust_remote_code,
            "chat_template_sha256": self.chat_template_sha256,
            "prompt_style": self.count.style.describe(),  # how the path builds the chat
            "context_length": self.facts.context_length,
            "max_images": self.facts.max_images,
        }
        local = Path(self.pretrained)
        if local.is_dir():
            # A local checkpoint has no commit: fingerprint its config and weight files instead.
            files = sorted((p.name, p.stat().st_size) for p in local.iterdir() if p.suffix in (".safetensors", ".bin"))
            config_text = (local / "config.json").read_text() if (local / "config.json").is_file() else ""
            identity["local_files_sha256"] = hashlib.sha256(json.dumps([files, config_text]).encode()).hexdigest()
        return identity

    def close(self) -> None:
        del self.model
        if self.torch.cuda.is_available():
            self.torch.cuda.empty_cache()


# `device_map`'s own placements (transformers' `from_pretrained`), which name no device
SPREADS = ("auto", "balanced", "balanced_low_0", "sequential")


def placement_problem(settings: HFSettings, torch: ModuleType) -> str | None:
    """Why the weights cannot be placed as `settings` ask on this machine, in one line; None when they can. Each
    device torch names (`cuda`, `cuda:N`, `mps`, `xpu`, `hpu`, `cpu`; `auto`: the accelerator torch finds, else the
    CPU) as `--device`/`device=` or as `device_map`, checked by torch itself: a device this torch's build or this
    machine lacks, or `device_map` without `accelerate`, which transformers places the weights with."""
    import importlib.util

    if settings.device and settings.device != "auto":
        what = f"device {settings.device} (--device, --model_args device=)"
        problem = _device_problem(settings.device, what, "--device ", torch)
        if problem:
            return problem
    if settings.device_map and settings.device_map not in SPREADS:
        problem = _device_problem(settings.device_map, f"device_map={settings.device_map}", "device_map=", torch)
        if problem:
            return problem
    if settings.device_map and importlib.util.find_spec("accelerate") is None:
        return (
            f"device_map={settings.device_map} (as parallelize=True asks) needs accelerate, which transformers "
            "places the weights with: pip install accelerate"
        )
    return None


def _device_problem(spec: str, what: str, flag: str, torch: ModuleType) -> str | None:
    """Why `spec` is no device the weights can go to here: not one torch names, or not one this torch sees; `flag`
    (`--device `, `device_map=`) as the way out names it."""
    here = torch.accelerator.current_accelerator(check_available=True)
    instead = f"use {flag}{here.type if here is not None else 'cpu'}"
    try:
        device = torch.device(spec)
    except (RuntimeError, ValueError) as err:
        named = re.search(r"one of (.+?) device type", str(err))
        kinds = f" (torch's are {named[1]})" if named else ""
        return f"{what}: not a device torch knows{kinds}; {instead}"
    if device.type == "cpu":
        return None
    if here is None or here.type != device.type:
        if device.type == "cuda" and torch.version.cuda is None:
            return f"{what}: this torch ({torch.__version__}) is a CPU build without CUDA; install a CUDA build, or {instead}"
        seen = f"only {here.type} devices" if here is not None else "no accelerator, only the CPU"
        cuda = " (no CUDA GPU is visible)" if device.type == "cuda" else ""
        return f"{what}: this torch ({torch.__version__}) sees {seen} here{cuda}; {instead}"
    count = torch.accelerator.device_count()
    if device.index is not None and device.index >= count:
        return f"{what}: this machine has {count} {device.type} device(s), numbered from 0; {instead}:0"
    return None
