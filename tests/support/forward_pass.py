"""One forward pass of a request through the `hf` backend on a tiny model of a family, counting what the model's
own check compares: the image tokens in the text the processor made, and the image features the pixels made.

`tiny_checkpoint(family)` writes a family's tiny checkpoint once per process (`tests.support.forward_families`: its
real processor class with its published chat template and image-processor settings, around a tiny tokenizer; its
config class shrunk to a layer or two; saved with `save_pretrained`, so the backend loads it as it loads a user's).
`forward_pass(family, request)` loads the backend on it (`HFModel`, kept per family and model arguments) and sends
the request as a run sends it: its images decoded and scaled, its prompt rendered in the prompt style, the
processor given the request's processor settings as the backend applies them, then `generate` for one token, whose
prefill is the forward pass. The model's own check raises where tokens and features differ; the counts are returned
besides, so a caller asserts them, and the backend's count before sending beside the input ids it sent.

    from tests.support.forward_pass import forward_pass
    result = forward_pass("idefics2", request, prompt_style="idefics")
    assert result.image_tokens == result.image_features
"""

from __future__ import annotations

import atexit
import functools
import inspect
import json
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.api import Request, Response
from tests.support.forward_families import BY_NAME, ForwardFamily

_CHECKPOINTS: dict[tuple[str, str], Path] = {}
_MODELS: dict[tuple[str, str, tuple[tuple[str, str], ...]], Any] = {}
_ROOT: list[Path] = []


@dataclass(frozen=True)
class ForwardPass:
    image_tokens: int  # image placeholder ids in the input ids the processor made
    image_features: int  # feature vectors the model made of the pixels (what fills those places)
    prompt_tokens: int  # input ids sent (no padding: one request)
    counted: int  # the backend's count of the request before sending it (its screen)
    exact: bool  # whether that count is the processor's own (else a family estimate)
    answer: str | None  # the one token generated
    error: str | None  # the backend's error for the request, if it gave one


def _root() -> Path:
    if not _ROOT:
        _ROOT.append(Path(tempfile.mkdtemp(prefix="forward-pass-")))
        atexit.register(
            shutil.rmtree, _ROOT[0], ignore_errors=True
        )  # ~22 MB of checkpoints a process, else left in /tmp
    return _ROOT[0]


def _with_settings(processor: Any, settings: dict[str, Any]) -> Any:
    if settings:
        image_processor = processor.image_processor
        processor.image_processor = type(image_processor).from_dict(image_processor.to_dict(), **settings)
    return processor


def tiny_checkpoint(name: str, head_dim: int | None = None, heads: int = 1, **checkpoint_settings: Any) -> Path:
    """The family's tiny checkpoint folder (written once per process); `checkpoint_settings` over its image
    processor's published ones (a fine-tune that publishes other settings: Mantis's do_image_splitting); `head_dim`:
    its language model's attention in `heads` heads of that size (`with_head_dim`)."""
    family = _family(name)
    settings = {**family.checkpoint_settings, **checkpoint_settings}
    key = (name, repr(sorted(settings.items())) + f"/{head_dim}x{heads}")
    if key not in _CHECKPOINTS:
        import torch
        from transformers import AutoModelForImageTextToText

        assert family.make_processor is not None and family.make_config is not None
        processor = _with_settings(family.make_processor(), settings)
        tokenizer = processor.tokenizer
        torch.manual_seed(0)
        config = family.make_config(tokenizer)
        if head_dim is not None:
            with_head_dim(config.get_text_config(), head_dim, heads)
        model = AutoModelForImageTextToText.from_config(config).eval()
        for attribute in ("bos_token_id", "eos_token_id", "pad_token_id"):
            setattr(model.generation_config, attribute, getattr(tokenizer, attribute))
        folder = _root() / f"{name}-{len(_CHECKPOINTS)}"
        model.save_pretrained(folder)
        processor.save_pretrained(folder)
        if family.model_args.get("processor") == "image_only":
            _record_own_arguments(processor, folder)
        _CHECKPOINTS[key] = folder
    return _CHECKPOINTS[key]


def with_head_dim(text: Any, head_dim: int, heads: int = 1) -> None:
    """A language model's attention as `heads` heads (as many key-value heads) of `head_dim`, its rotary sections
    scaled with it: vLLM's CPU attention takes common head sizes only (`Unsupported CPU attention configuration:
    head_dim=16`); a tensor parallel engine splits the heads, so two processes need two (`heads=2`)."""
    before = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    text.num_attention_heads = heads
    if getattr(text, "num_key_value_heads", None):
        text.num_key_value_heads = heads
    if getattr(text, "head_dim", None) or text.hidden_size != head_dim:
        text.head_dim = head_dim
    rope = getattr(text, "rope_parameters", None)
    if isinstance(rope, dict) and rope.get("mrope_section"):  # a copy: the tiny configs share their rope dicts
        sections = [part * head_dim // before for part in rope["mrope_section"]]
        text.rope_parameters = {**rope, "mrope_section": sections}


def _record_own_arguments(processor: Any, folder: Path) -> None:
    """Write what the published checkpoints' processor_config.json holds and a processor built without its video part
    does not save: the real class's name and its own constructor arguments (`harness.models.shared.hf_image_only`)."""
    real = type(processor).__mro__[1]
    parts = {"self", "image_processor", "tokenizer", "video_processor", "chat_template", "kwargs"}
    path = folder / "processor_config.json"
    recorded = json.loads(path.read_text())
    recorded["processor_class"] = real.__name__
    for name in set(inspect.signature(real.__init__).parameters) - parts:
        if hasattr(processor, name):
            recorded[name] = getattr(processor, name)
    path.write_text(json.dumps(recorded, indent=2))


def _family(name: str) -> ForwardFamily:
    family = BY_NAME[name]
    if not family.runs:
        raise ValueError(f"{name} cannot run here: {family.reason}")
    return family


def backend(name: str, checkpoint: Path | None = None, **model_args: str) -> Any:
    """The `hf` backend on the family's tiny checkpoint, on the CPU (one per family, checkpoint and arguments)."""
    from harness.models.backends.hf.model import HFModel

    family = _family(name)
    folder = checkpoint or tiny_checkpoint(name)
    args = {**family.model_args, **model_args}
    key = (name, str(folder), tuple(sorted(args.items())))
    if key not in _MODELS:
        _MODELS[key] = HFModel.from_args(
            {"pretrained": str(folder), "device": "cpu", "dtype": "float32", "image_threads": "1", **args}
        )
    return _MODELS[key]


def forward_pass(name: str, request: Request, checkpoint: Path | None = None, **model_args: str) -> ForwardPass:
    """`request` (as the runner builds it: an alias's input policy applied, its processor settings in
    `processor_kwargs`) through the `hf` backend on the family's tiny model; `model_args`: the alias's `--model_args`
    that shape the prompt (`prompt_style`), or any other the backend takes."""
    model = backend(name, checkpoint, **model_args)
    config = model.model.config
    image_token = getattr(config, "image_token_id", None)
    return passed(model, request, config.image_token_index if image_token is None else image_token)


# The `--model_args` a checkpoint folder is run with (`checkpoint_backend`), and screened with
CHECKPOINT_ARGS = {"device": "cpu", "dtype": "float32", "image_threads": "1"}


def checkpoint_backend(folder: Path) -> Any:
    """The `hf` backend on any checkpoint folder (`tests.support.checkpoint_factory`'s), loaded once per process."""
    from harness.models.backends.hf.model import HFModel

    key = ("", str(folder), ())
    if key not in _MODELS:
        _MODELS[key] = HFModel.from_args({"pretrained": str(folder), **CHECKPOINT_ARGS})
    return _MODELS[key]


def checkpoint_pass(folder: Path, request: Request, *, caught: bool = False) -> ForwardPass:
    """`request` through the `hf` backend on any checkpoint folder (`checkpoint_backend`), its image tokens those of
    its processor's image token; `caught`: the model's error in the result (`passed`)."""
    model = checkpoint_backend(folder)
    config = model.model.config  # the token its features fill (Gemma 3's soft token, not the mark it expands)
    token = next(
        (getattr(config, n) for n in ("image_token_id", "image_token_index") if getattr(config, n, None)), None
    )
    return passed(model, request, model.count._image_token_id if token is None else token, caught=caught)


def _rows(value: Any) -> int:
    """The feature vectors in a tensor (its rows, over its last axis) or a list / tuple of them (ints skipped)."""
    if isinstance(value, list | tuple):
        return sum(_rows(v) for v in value)
    shape = getattr(value, "shape", None)
    return value.numel() // shape[-1] if shape else 0


def _feature_count(out: Any) -> int:
    """The features an image-feature output fills the image tokens with: its pooled output, else its last hidden
    state (Llama 4's tower), else the first of its deepstack features (Granite 4 Vision's `(llm_layer, tensors)`
    pairs, each layer's as many as the tokens), else the tensors it returns."""
    for name in ("pooler_output", "last_hidden_state"):
        if getattr(out, name, None) is not None:
            return _rows(getattr(out, name))
    deepstack = getattr(out, "deepstack_features", None)
    if deepstack:
        return _rows(deepstack[0])
    return _rows(out)


def passed(model: Any, request: Request, image_token: int, *, caught: bool = False) -> ForwardPass:
    """One request through a loaded `hf` backend, recording the input ids sent and the image features made;
    `caught`: an error the model raises on them is the result's `error`, beside the input ids it was sent."""
    features: list[int] = []
    sent: list[Any] = []
    depth = [0]
    # every module of the model with a get_image_features (the top model's, its base model's, T5Gemma 2's encoder's,
    # which its own forward calls): the outermost call's features counted, those it calls within not again; IDEFICS'
    # cross-attention has no image tokens to fill, hence no such method: nothing counted
    owners = [m for m in model.model.modules() if callable(getattr(m, "get_image_features", None))]

    def counting(own_features: Any) -> Any:
        @functools.wraps(own_features)  # generate reads its signature to encode the pixels before prefill
        def counted_features(*args: Any, **kwargs: Any) -> Any:
            depth[0] += 1
            try:
                out = own_features(*args, **kwargs)
            finally:
                depth[0] -= 1
            if depth[0] == 0:
                features.append(_feature_count(out))
            return out

        return counted_features

    own_generate = model.model.generate

    def recorded_generate(*args: Any, **kwargs: Any) -> Any:
        sent.append(kwargs["input_ids"])
        answer = own_generate(*args, **kwargs)
        if not features and owners and kwargs.get("pixel_values") is not None:
            # a generate that makes the features itself (BLIP-2's): its get_image_features of the pixels sent
            features.append(_feature_count(owners[0].get_image_features(pixel_values=kwargs["pixel_values"])))
        return answer

    for owner in owners:
        owner.get_image_features = counting(owner.get_image_features)
    model.model.generate = recorded_generate
    try:
        one_token = replace(request, settings=replace(request.settings, max_gen_toks=1, until=()))
        (response,) = model.generate([one_token])
    except Exception as err:
        if not caught:
            raise
        response = Response(None, error=f"{type(err).__name__}: {str(err).splitlines()[0]}")
    finally:
        for owner in owners:
            del owner.get_image_features
        del model.model.generate
    ids = sent[0][0] if sent else None
    return ForwardPass(
        image_tokens=int((ids == image_token).sum()) if ids is not None else 0,
        image_features=features[-1] if features else 0,
        prompt_tokens=int(ids.numel()) if ids is not None else 0,
        counted=model.prompt_tokens(request),
        exact=model.count.exact(request),
        answer=response.text,
        error=response.error,
    )
