"""The vllm backend's `--model_args`: the project's own settings (`VLLMSettings`: the checkpoint, the image cap,
chunking, order, prompt style, counting) and vLLM's, which are any field of the installed vLLM's `EngineArgs`, read
from that dataclass when the run starts and converted by each field's own type (`harness.models.shared.engine_args`: JSON
for a mapping or a list). A key that is neither is refused in one line naming the nearest; an engine field the
project sets itself is refused with the reason (`REFUSED`). Sampling defaults (`sampling_params`, where the run's
`--gen_kwargs` keys beyond the generation settings go) are `SamplingParams` fields, read the same way.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import re
import sys
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import cast

from harness.models.facts.args import at_least, check_minimum, settings_from_args
from harness.models.shared.engine_args import (
    EngineSettings,
    declared_fields,
    field_value,
    nearest,
    one_option_at_a_time,
    split_engine_args,
)

log = logging.getLogger(__name__)

ARG_ALIASES = {
    "model": "pretrained",
    "context_length": "max_model_len",
    "tp": "tensor_parallel_size",
}  # dp: data_parallel_size, the replicas' (`harness.models.backends.replicas`)
# `limit_mm_per_prompt=N`, a bare count (the form this backend once took), is `max_images=N`; a JSON object is
# vLLM's own (`limit_mm_per_prompt` in `engine_kwargs`).
LIMIT = "limit_mm_per_prompt"

# Engine fields the backend sets otherwise than vLLM does, unless given.
ENGINE_DEFAULTS: dict[str, object] = {
    # Neutral decoding: "auto" would load the checkpoint's generation_config.json (its eos tokens, and the decoding
    # greedy keeps, a repetition penalty, as transformers' generate applies them: `engines.checkpoint_decoding`).
    "generation_config": "vllm",
    # The share of GPU memory the backend has always given the engine (vLLM 0.33's own default is 0.92): a run keeps
    # the KV cache it had.
    "gpu_memory_utilization": 0.9,
}

# Engine fields the project decides itself, refused with the reason.
REFUSED = {
    "data_parallel_size": (
        "replicas are the harness's: data_parallel_size=D runs D engines as Ray actors (harness.models.backends.replicas), "
        "since vLLM's LLM(data_parallel_size>1) refuses single-process use"
    ),
    "skip_tokenizer_init": "answers are read as text and prompts are sent as text: the engine needs its tokenizer",
}

# `max_model_len=auto` (or -1) as vLLM's command line reads it: the longest context that fits the GPU's memory.
AUTO_FIT = -1

# SamplingParams fields each request sets from its generation settings (`requests.sampling_kwargs`), refused as
# sampling defaults with what to write instead; the generation settings' own names are refused the same way.
SAMPLING_REFUSED = {
    "max_tokens": "the answer's length is the generation setting max_gen_toks: write --gen_kwargs max_gen_toks=N",
    "stop": "stop strings are the generation setting until: write --gen_kwargs until=TEXT",
    "n": "one answer is scored per request: n is always 1",
    "detokenize": "answers are read as text",
    # an answer is the text the tokenizer decodes from its ids, as on every backend with the ids (`answer_text`)
    "skip_special_tokens": "an answer is decoded without special tokens, as the hf backend decodes it",
    "spaces_between_special_tokens": "an answer is decoded without special tokens, as the hf backend decodes it",
    "include_stop_str_in_output": "an answer ends before its stop string, as the hf backend cuts it",
    "output_kind": "each answer is read whole, once it is finished",
}

# Engine fields that place, size or schedule the work, so that an answer is the same whatever they are: they stay out
# of `identity()` (the response cache's key and the results' record of the model). Every other engine field given at
# a value other than vLLM's declared default is in it (kv_cache_dtype, quantization, ...): a field this list does not
# name (one a later vLLM adds) keys the cache, so an answer is never reused across a change that may alter it.
ANSWER_NEUTRAL = frozenset(
    {
        "max_model_len",  # what fits is screened before sending (over_length); a sent prompt's answer is the same
        "limit_mm_per_prompt",  # how many images a prompt may hold (too_many_images) and what profiling reserves
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "distributed_executor_backend",
        "enable_expert_parallel",
        "mm_encoder_tp_mode",
        "gpu_memory_utilization",
        "kv_cache_memory_bytes",
        "num_gpu_blocks_override",
        "max_num_seqs",
        "max_num_batched_tokens",
        "enable_chunked_prefill",
        "enable_prefix_caching",
        "mm_processor_cache_gb",
        "mm_processor_cache_type",
        "skip_mm_profiling",
        "async_scheduling",
        "enforce_eager",
        "disable_log_stats",
        "trust_remote_code",  # whether the checkpoint's code may run: it runs the same code or refuses
        "seed",  # every request carries its own seed (`requests.sampling_kwargs`)
    }
)
# What `identity()` has always held of the engine, given or not.
IDENTITY_FIELDS = ("revision", "tokenizer", "dtype", "generation_config", "hf_overrides")


@cache
def engine_args_class() -> type | None:
    """The installed vLLM's `EngineArgs`, or None where vLLM is not installed (a `--screen_only` without it)."""
    try:
        from vllm.engine.arg_utils import EngineArgs
    except ImportError:
        return None
    return EngineArgs


@cache
def cli_parser() -> argparse.ArgumentParser | None:
    """vLLM's own command line for its engine (`EngineArgs.add_cli_args`, as `vllm serve` builds it), or None where
    vLLM is not installed. Where vLLM finds no device (its CUDA wheel on a machine without a GPU: a `--screen_only`,
    the tests) the parser is built with vLLM's CPU platform in place, then the platform is put back: only a default
    (the device's) asks for one, and no value is read by a default."""
    if engine_args_class() is None:
        return None
    from vllm.engine.arg_utils import EngineArgs
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    try:
        parser = EngineArgs.add_cli_args(FlexibleArgumentParser(exit_on_error=False))
    except RuntimeError:  # "Failed to infer device type"
        import vllm.platforms as platforms
        from vllm.platforms.cpu import CpuPlatform

        platforms.current_platform = CpuPlatform()  # a module attribute over the module's lazy one, then removed
        try:
            parser = EngineArgs.add_cli_args(FlexibleArgumentParser(exit_on_error=False))
        finally:
            del platforms.current_platform
    return one_option_at_a_time(cast("argparse.ArgumentParser", parser))


@cache
def sampling_params_class() -> type | None:
    try:
        from vllm import SamplingParams
    except ImportError:
        return None
    return SamplingParams


@dataclass(frozen=True)
class VLLMSettings(EngineSettings):
    backend = "vllm"
    gpu_args = ("tensor_parallel_size", "pipeline_parallel_size")
    chat_template_content_format: str = "auto"  # `LLM.chat`'s
    # The special tokens generation stops on, in place of the checkpoint's eos ids (space-separated: "<|im_end|>"):
    # vLLM's `stop_token_ids` with `ignore_eos`, as InternVL's `model.chat` sets `eos_token_id` to its conversation
    # template's separator alone (`modeling_internvl_chat.py`'s `chat`). Resolved with the engine's own tokenizer.
    eos_tokens: str | None = None
    # SamplingParams fields as a JSON object, given to every request over the checkpoint's own decoding: the run's
    # `--gen_kwargs` keys beyond the generation settings arrive here (`BackendSpec.engine_sampling`).
    sampling_params: str | None = None
    use_tqdm: bool = True  # vLLM's own progress bars (`--no_progress` sets it false)
    # The engine's processes' log (`engine_log.EngineOutput`): the run's folder's `engine_model.log` where it has one
    # (`BackendSpec.engine_log_arg`), else a temporary file removed at the end unless a line named it.
    engine_log: str | None = None
    # Seconds the engine has to start (load the weights, profile, warm up) before the run stops in one line saying
    # where it waited: a 70 B model read from a slow disk, then compiled, is inside it.
    start_timeout: float = at_least(1, 1800.0)
    # A max_model_len past the checkpoint's window (its max_position_embeddings) is run as given (vLLM's
    # VLLM_ALLOW_LONG_MAX_MODEL_LEN=1), each row longer than the window recorded `past_window`; without it the
    # engine holds the window at most, and a longer row is over_length, as on `hf`.
    past_window: bool = False
    # The engine's own arguments, by EngineArgs field name, each of its field's type (`vllm_settings` converts them).
    engine: Mapping[str, object] = field(default_factory=dict)
    sampling: Mapping[str, object] = field(init=False, repr=False, compare=False)  # `sampling_params`, typed

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.eos_tokens is not None and not self.eos_tokens.split():
            raise ValueError("vllm backend: eos_tokens names no token (space-separated special tokens: <|im_end|>)")
        check_engine_names(self.engine)
        for name in ("max_model_len", "tensor_parallel_size", "pipeline_parallel_size"):  # the ones read here
            if not (name == "max_model_len" and self.engine.get(name) == AUTO_FIT):
                check_minimum(self.engine.get(name), 1, name, "vllm")
        object.__setattr__(self, "sampling", sampling_defaults(self.sampling_params))

    # The engine fields the backend reads itself (counting, screening, replicas), vLLM's default where not given.
    def engine_arg(self, name: str, default: object = None) -> object:
        return self.engine.get(name, ENGINE_DEFAULTS.get(name, default))

    def given_processor(self) -> Mapping[str, object]:
        given = self.engine.get("mm_processor_kwargs")  # the engine's `mm_processor_kwargs`
        return given if isinstance(given, Mapping) else {}

    @property
    def max_model_len(self) -> int | None:
        """The context length given; None where vLLM sets it (from the model config, or `auto`: what fits the GPU's
        memory, known once the engine is built, which reports it)."""
        value = self.engine_arg("max_model_len")
        return value if isinstance(value, int) and value != AUTO_FIT else None

    @property
    def seed(self) -> int:
        value = self.engine_arg("seed", 0)
        return value if isinstance(value, int) else 0

    def engine_identity(self) -> dict[str, object]:
        """What the engine's arguments put in `identity()`: what it has always held (`IDENTITY_FIELDS`, the processor
        settings), and every other field given that may change an answer (see `ANSWER_NEUTRAL`), only where given
        at a value other than vLLM's declared default, so a run with the arguments it had keeps its identity."""
        out: dict[str, object] = {name: self.engine_arg(name) for name in IDENTITY_FIELDS}
        out["dtype"] = out["dtype"] or "auto"
        out["hf_overrides"] = out["hf_overrides"] or None
        out["mm_processor_kwargs"] = self.processor_kwargs() or None
        defaults = declared_defaults()
        for name, value in sorted(self.engine.items()):
            if name not in out and name not in ANSWER_NEUTRAL and value != defaults.get(name, _UNSET):
                out[name] = value
        if self.sampling:
            out["sampling_params"] = dict(self.sampling)
        return out


_UNSET = object()


@cache
def declared_defaults() -> dict[str, object]:
    """Each EngineArgs field's own default, where it declares one."""
    declaration = engine_args_class()
    if declaration is None:
        return {}
    out: dict[str, object] = {}
    for f in dataclasses.fields(declaration):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            try:
                out[f.name] = f.default_factory()
            except Exception:  # a factory that needs more than the class: no default to compare with
                continue
    return out


def check_engine_names(engine: Mapping[str, object]) -> None:
    """Each name a field of the installed EngineArgs, none of those the project decides itself (settings made in
    code get the checks `--model_args` get); nothing to check against where vLLM is not installed."""
    declaration = engine_args_class()
    for name in engine:
        if name in REFUSED:
            raise ValueError(f"vllm backend: model argument {name}: {REFUSED[name]}")
        if declaration is not None and name not in declared_fields(declaration):
            raise ValueError(
                f"vllm backend: {name!r} is not a field of vllm.engine.arg_utils.EngineArgs"
                f"{nearest(name, declared_fields(declaration))}"
            )


def sampling_defaults(text: str | None) -> dict[str, object]:
    """`sampling_params` (a JSON object of SamplingParams fields) typed by SamplingParams' own declaration."""
    if text is None:
        return {}
    try:
        given = json.loads(text)
    except ValueError as err:
        raise ValueError(f"vllm backend: model argument sampling_params: not a JSON object ({err})") from None
    if not isinstance(given, dict):
        raise ValueError(
            "vllm backend: model argument sampling_params: expected a JSON object of SamplingParams fields"
        )
    return sampling_fields(given)


def sampling_fields(given: Mapping[str, object]) -> dict[str, object]:
    """SamplingParams fields by name (a value a string as `--gen_kwargs` reads it, or a JSON value), each typed by its
    field; a name that is none, or that a request's generation settings set, refused in one line."""
    from harness.api import GenerationSettings

    declaration = sampling_params_class()
    texts = {name: value if isinstance(value, str) else json.dumps(value) for name, value in given.items()}
    if declaration is None:  # no vLLM here (a screen): its engine checks them
        return {name: field_value(text, "untyped") for name, text in texts.items()}
    generation = {f.name for f in dataclasses.fields(GenerationSettings)}
    refused = {**{n: f"a generation setting here: write --gen_kwargs {n}=..." for n in generation}, **SAMPLING_REFUSED}
    _, typed = split_engine_args(texts, (), declaration, "vllm", refused=refused, what="sampling parameter")
    return typed


# What vLLM's own attribute docstrings (`get_attr_docs`, its command line's help) say of a field whose value it imports:
# CompilationConfig's `inductor_passes` and `backend`, ParallelConfig's `worker_cls`, ModelConfig's `logits_processors`,
# the KV and EC connectors' `*_module_path`, ...
NAMES_CODE = re.compile(r"qualified (class )?names?|module path|full name of the \w+ class", re.IGNORECASE)
DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")  # a module's or an object's qualified name


@cache
def code_fields() -> dict[str, frozenset[str]]:
    """EngineArgs fields whose value names code vLLM imports, read from vLLM's declarations: field -> the keys of its
    value that do (a config's fields: compilation_config -> inductor_passes, backend), or {""} where the value itself
    does (worker_cls, which EngineArgs takes from ParallelConfig by name)."""
    import vllm.config
    from vllm.config.utils import get_attr_docs

    engine = declared_fields(cast("type", engine_args_class()))
    out: dict[str, frozenset[str]] = {}
    for config in vars(vllm.config).values():
        if not (isinstance(config, type) and dataclasses.is_dataclass(config)):
            continue
        keys = frozenset(name for name, doc in get_attr_docs(config).items() if NAMES_CODE.search(doc))
        for name, kind in engine.items():
            if keys and (kind is config or config in typing.get_args(kind)):
                out[name] = out.get(name, frozenset()) | keys
        out.update({name: frozenset({""}) for name in keys if name in engine and name not in out})
    return out


def _dotted(value: object) -> list[str]:
    """The qualified names a value holds: itself, a list's items, a mapping's values."""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else [value]
    return [item for item in items if isinstance(item, str) and DOTTED.fullmatch(item)]


def code_named(args: Mapping[str, str]) -> tuple[dict[str, str], dict[str, dict[str, object]]]:
    """`args` with the qualified names a config's value holds taken out (vLLM imports them as it builds the config:
    CompilationConfig's `inductor_passes` while the value is read), and each such value as given, for the engine to
    build at load. Each field that names code is said on stderr first, in one line."""
    fields = code_fields() if engine_args_class() is not None else {}
    kept, given = dict(args), {}
    for name, text in args.items():
        keys = fields.get(name)
        if not keys:
            continue
        whole = "" in keys  # the value itself names code (worker_cls), or some of its keys do (compilation_config)
        try:
            value = json.loads(text) if not whole or text.lstrip().startswith("[") else text
        except (ValueError, RecursionError):  # its own reading says what it expects
            continue
        if whole:
            named = _dotted(value)
        else:
            named = [p for k in sorted(keys & set(value)) for p in _dotted(value[k])] if isinstance(value, dict) else []
            if named and isinstance(value, dict):
                kept[name], given[name] = json.dumps({k: v for k, v in value.items() if k not in keys}), value
        if named:
            print(f"harness: {name} names code vLLM will import: {', '.join(named)}", file=sys.stderr)
    return kept, given


def vllm_settings(args: Mapping[str, str]) -> VLLMSettings:
    """The backend's settings from `--model_args` (strings): its own, by its own parser, and the engine's, by the
    installed `EngineArgs`' types; a `ValueError` names the argument (never its value)."""
    bare_count = {LIMIT: "max_images"} if args.get(LIMIT, "").strip().isdigit() else {}
    renamed = VLLMSettings.own_names(args, {**ARG_ALIASES, **bare_count})
    own = [f.name for f in dataclasses.fields(VLLMSettings) if f.init and f.name != "engine"]
    declaration = engine_args_class()
    if declaration is None:
        mine = {k: v for k, v in renamed.items() if k in own}
        engine = {k: field_value(v, "untyped") for k, v in renamed.items() if k not in own}
        if engine:
            log.warning("vllm: vLLM is not installed here; %s are not checked against its EngineArgs", sorted(engine))
    else:
        read, code_given = code_named(renamed)
        mine, engine = split_engine_args(read, own, declaration, "vllm", refused=REFUSED, cli=cli_parser())
        engine.update(code_given)  # the engine builds them at load, importing what they name
    return settings_from_args(VLLMSettings, {**mine, "engine": engine}, "vllm")


def within_window(settings: VLLMSettings, window: int | None) -> int | None:
    """The max_model_len the engine is built with: the one given, kept to the checkpoint's `window` unless
    `past_window`; None where vLLM sets it (from the config, which never passes the window, or `auto`)."""
    given = settings.max_model_len
    if given is None or window is None or settings.past_window or given <= window:
        return given
    return window


def engine_kwargs(
    settings: VLLMSettings, limit_mm_per_prompt: Mapping[str, object], window: int | None = None
) -> dict[str, object]:
    """Keyword arguments for `vllm.LLM(...)` (one replica; data parallelism is the Ray pool's): the engine fields
    given, over the backend's defaults, with the checkpoint, the run's image limit, the processor settings, and the
    length within the checkpoint's `window` (`within_window`)."""
    kwargs: dict[str, object] = {"model": settings.pretrained, **ENGINE_DEFAULTS, **settings.engine}
    if settings.max_model_len is not None:
        kwargs["max_model_len"] = within_window(settings, window)
    kwargs["limit_mm_per_prompt"] = dict(limit_mm_per_prompt)
    processor = settings.processor_kwargs()
    if processor:
        kwargs["mm_processor_kwargs"] = processor
    if settings.chat_template is not None:  # `LLM`'s own argument (no EngineArgs field): its `chat` renders with it
        kwargs["chat_template"] = settings.chat_template
    return kwargs
