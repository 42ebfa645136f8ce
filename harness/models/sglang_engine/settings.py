"""The sglang backend's `--model_args`: its own settings (`SGLangSettings`), and every other argument read as a field of
SGLang's own declarations (`harness.models.engine_args`): `ServerArgs` (what `sglang.Engine(**kwargs)` takes) or
`SamplingParams` (what each request's `sampling_params` holds), each typed by its field, an unknown one refused
naming the nearest, and the few that would say what the backend says itself refused with the reason."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.models.args import MINIMUM, at_least, check_minimum, settings_from_args
from harness.models.engine_args import declared_fields, split_engine_args
from harness.models.families import style_named
from harness.models.scheduling.prefix_order import check_order

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
class SGLangSettings:
    pretrained: str
    max_images: int | None = at_least(1)  # the model's image cap per prompt: a request with more is too_many_images
    max_pixels: int | None = at_least(1)  # the image processor's pixel limits (SGLang's mm_process_config "image")
    min_pixels: int | None = at_least(1)
    chat_template: str | None = None  # a Jinja file or string the prompt is rendered with; default: the model's own
    # Tokens the chat template may add, counted only where the processor cannot be loaded (`engine_count`).
    length_margin: int = 64
    chunk_size: int = at_least(1, 1024)  # requests per engine call (the runner saves after each)
    chunk_tokens: int = at_least(1, 2_000_000)  # prompt tokens per engine call (bounds the decoded images held)
    decode_workers: int = at_least(1, 4)  # threads decoding images before an engine call
    # Requests sharing a prompt prefix run together so RadixAttention serves their prefill; "length": long first.
    request_order: str = "cache"
    # How the chat is built from a request, as a model's official wrapper built it (`harness.models.prompt_style`).
    prompt_style: str = "default"
    # The engine's own arguments, typed by SGLang's declarations (`model_settings`): never `--model_args` names.
    server_args: Mapping[str, object] = field(default_factory=dict)
    sampling: Mapping[str, object] = field(default_factory=dict)  # SamplingParams fields every request is given

    def __post_init__(self) -> None:
        check_order(self.request_order, BACKEND)
        style_named(self.prompt_style)
        for f in dataclasses.fields(self):  # settings made in code get the checks `--model_args` get
            if MINIMUM in f.metadata:
                check_minimum(getattr(self, f.name), f.metadata[MINIMUM], f.name, BACKEND)
        image = _image_settings(self.server_args)
        for name in ("max_pixels", "min_pixels"):
            if getattr(self, name) is not None and name in image:
                raise ValueError(f"sglang backend: {name} is given twice (and in mm_process_config); give it once")

    # What `harness.models.engine_count` reads, from the engine's own arguments where they are SGLang's.
    @property
    def revision(self) -> str | None:
        revision = self.server_args.get("revision")
        return revision if isinstance(revision, str) else None

    @property
    def trust_remote_code(self) -> bool:
        return self.server_args.get("trust_remote_code") is True

    @property
    def tokenizer(self) -> str | None:
        return None  # tokenizer_path is refused: the checkpoint's own, always

    @property
    def context_length(self) -> int | None:
        length = self.server_args.get("context_length")
        return length if isinstance(length, int) else None

    def processor_kwargs(self) -> dict[str, object]:
        """The image processor's settings: `mm_process_config`'s "image", with `min_pixels`/`max_pixels`."""
        kwargs = _image_settings(self.server_args)
        for name in ("min_pixels", "max_pixels"):
            if getattr(self, name) is not None:
                kwargs[name] = getattr(self, name)
        return kwargs


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


def model_settings(args: Mapping[str, str]) -> SGLangSettings:
    """`--model_args` as the backend takes them: its own, `ServerArgs` fields and `SamplingParams` fields (a name both
    declare is the server's: `stream_interval`). Raises `ValueError` in one line (a value is never shown)."""
    server, sampling = _declarations()
    named: dict[str, str] = {}
    for key, value in args.items():
        name = ARG_ALIASES.get(key, key)
        if name in named:
            raise ValueError(f"sglang backend: model argument {name!r} given twice (as {key!r})")
        named[name] = value
    per_request = set(declared_fields(sampling)) - set(declared_fields(server))
    mine, server_args = split_engine_args(named, [*OWN, *per_request], server, BACKEND, refused=SERVER_REFUSED)
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
