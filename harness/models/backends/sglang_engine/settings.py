"""The sglang backend's `--model_args`: its own settings (`SGLangSettings`), and every other argument read as a field of
SGLang's own declarations (`harness.models.shared.engine_args`): `ServerArgs` (what `sglang.Engine(**kwargs)` takes), read by
SGLang's own command line (`ServerArgs.add_cli_args`: `grammar_backend=none` stays the string its CLI keeps, which
SGLang reads as "no grammar backend"), or `SamplingParams` (what each request's `sampling_params` holds), typed by its
field, an unknown one refused
naming the nearest, and the few that would say what the backend says itself refused with the reason."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache

from harness.models.facts.args import settings_from_args
from harness.models.shared.engine_args import EngineSettings, declared_fields, one_option_at_a_time, split_engine_args

BACKEND = "sglang"
ARG_ALIASES = {"model": "pretrained", "model_path": "pretrained"}  # lmms-eval's `model=`, SGLang's own name

# ServerArgs fields the backend sets itself, and why a value of the user's would break what it says.
SERVER_REFUSED = {
    "allow_auto_truncate": "prompts are never cut here: one that does not fit is recorded over_length, unless the "
    "task declares its paper's truncation rule",
    "skip_tokenizer_init": "the backend sends each prompt as text, rendered by the checkpoint's chat template, for "
    "SGLang to tokenize",
    "tokenizer_path": "each prompt is rendered and counted by the checkpoint's own processor (pretrained=), which "
    "SGLang loads too; a checkpoint with another tokenizer is another pretrained=",
}
_GEN = "a task's generation setting here: write --gen_kwargs {}=..."
# SamplingParams fields each request's generation settings fill (`requests.sampling_params`).
SAMPLING_REFUSED = {
    "max_new_tokens": _GEN.format("max_gen_toks"),
    "temperature": _GEN.format("temperature"),
    "top_p": _GEN.format("top_p"),
    "stop": _GEN.format("until"),
    "sampling_seed": _GEN.format("seed"),
    "n": "one answer a request: a task that samples several runs its repeats as requests",
}


@dataclass(frozen=True)
class SGLangSettings(EngineSettings):
    backend = BACKEND
    gpu_args = ("tp_size", "pp_size", "dp_size")  # SGLang's own data parallel too: a replica holds its whole engine
    # The engine's own arguments, typed by SGLang's declarations (`model_settings`): never `--model_args` names.
    server_args: Mapping[str, object] = field(default_factory=dict)
    sampling: Mapping[str, object] = field(default_factory=dict)  # SamplingParams fields every request is given

    def __post_init__(self) -> None:
        super().__post_init__()
        image = _image_settings(self.server_args)
        for name in ("max_pixels", "min_pixels"):
            if getattr(self, name) is not None and name in image:
                raise ValueError(f"sglang backend: {name} is given twice (and in mm_process_config); give it once")

    def engine_arg(self, name: str, default: object = None) -> object:
        return self.server_args.get(name, default)

    def given_processor(self) -> Mapping[str, object]:
        return _image_settings(self.server_args)

    @property
    def tokenizer(self) -> str | None:
        return None  # tokenizer_path is refused: the checkpoint's own, always

    @property
    def context_length(self) -> int | None:
        length = self.server_args.get("context_length")
        return length if isinstance(length, int) else None


def _image_settings(server_args: Mapping[str, object]) -> dict[str, object]:
    """`mm_process_config`'s "image" settings, which SGLang hands to the hf image processor."""
    config = server_args.get("mm_process_config")
    image = config.get("image") if isinstance(config, dict) else None
    if image is not None and not isinstance(image, dict):
        raise ValueError("sglang backend: mm_process_config's image settings must be a JSON object")
    return dict(image or {})


OWN = frozenset(f.name for f in dataclasses.fields(SGLangSettings) if f.name not in ("server_args", "sampling"))


def _declarations() -> tuple[type, type]:
    """SGLang's `ServerArgs` and `SamplingParams`, which say what the backend's other arguments are."""
    try:
        from sglang.srt.sampling.sampling_params import SamplingParams
        from sglang.srt.server_args import ServerArgs
    except ImportError as err:
        raise ImportError(
            f"the sglang backend reads its arguments from SGLang's own declarations, which do not import "
            f"({type(err).__name__}: {err}): pip install -e '.[sglang]'"
        ) from None
    return ServerArgs, SamplingParams


@cache
def cli_parser() -> argparse.ArgumentParser:
    """SGLang's own command line for its server (`ServerArgs.add_cli_args`, as `sglang.launch_server` builds it)."""
    server, _ = _declarations()
    parser = argparse.ArgumentParser(exit_on_error=False)
    server.add_cli_args(parser)  # type: ignore[attr-defined]
    return one_option_at_a_time(parser)


def model_settings(args: Mapping[str, str]) -> SGLangSettings:
    """`--model_args` as the backend takes them: its own, `ServerArgs` fields and `SamplingParams` fields (a name both
    declare is the server's: `stream_interval`). Raises `ValueError` in one line (a value is never shown)."""
    server, sampling = _declarations()
    named = SGLangSettings.own_names(args, ARG_ALIASES)
    per_request = set(declared_fields(sampling)) - set(declared_fields(server))
    mine, server_args = split_engine_args(
        named, [*OWN, *per_request], server, BACKEND, refused=SERVER_REFUSED, cli=cli_parser()
    )
    requested = {key: mine.pop(key) for key in [k for k in mine if k in per_request]}
    _, sampling_args = split_engine_args(requested, (), sampling, BACKEND, refused=SAMPLING_REFUSED)
    own = settings_from_args(SGLangSettings, mine, BACKEND)
    return dataclasses.replace(own, server_args=server_args, sampling=sampling_args)


def engine_kwargs(settings: SGLangSettings, processor: Mapping[str, object] | None = None) -> dict[str, object]:
    """Keyword arguments of `sglang.Engine(...)`: the checkpoint, every ServerArgs field given, and the image
    processor's settings in `mm_process_config` (SGLang hands its "image" to the hf image processor), `processor`
    (the run's requests' own) over the backend's."""
    kwargs: dict[str, object] = {"model_path": settings.pretrained, **settings.server_args}
    image = {**settings.processor_kwargs(), **(processor or {})}
    if image:
        config = kwargs.get("mm_process_config")
        kwargs["mm_process_config"] = {**(config if isinstance(config, dict) else {}), "image": image}
    return kwargs
