"""An engine's own arguments, read from the engine's own declaration when the run starts: vLLM's `EngineArgs` (a
dataclass), SGLang's `ServerArgs` and vLLM's `SamplingParams` (msgspec structs). Every field of the installed
version passes through, converted by that field's declared type; a key that is no field is refused in one line
naming the nearest. Nothing here lists an engine's fields: a new engine release brings its new fields with it.

A `--model_args` value is a string. Where the engine has a command line (`vllm serve`, `sglang.launch_server`), a
field's value is read by that command line's own option (`cli_value`): its type, choices and number of values, so
that `max_model_len=32k`, `kv_cache_memory_bytes=2G`, `attention_backend=FLASH_ATTN` (vLLM) and
`grammar_backend=none` (SGLang, which keeps it a string) mean what they mean there. Otherwise it is read as the
field's type reads it (`8` for an int, `true` for a bool, `fp8`
for a literal choice) and, where that fails, as JSON (`{"image": 4}` for a mapping, `[1, 2]` for a list), both
validated by pydantic against the declared type. A type pydantic cannot build a validator for (a callable, a class)
takes the value as JSON where it parses and as the string otherwise, for the engine's own checks to judge.

`EngineSettings`: what both engine backends' settings hold beside the engine's arguments, and what counting reads of
those (`harness.models.shared.engine_count`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import io
import json
import math
import operator
import sys
import types
import typing
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import cache
from typing import ClassVar, cast

import pydantic

from harness.models.facts.args import MINIMUM, at_least, check_minimum
from harness.models.families import style_named
from harness.models.shared.scheduling.prefix_order import check_order


def _resolved(annotation: object, owner: type) -> object:
    """A field's type, a postponed annotation (a string) evaluated in its class's module; where a name in it cannot
    be found (vLLM imports some only for type checkers) the string stays, and the value is taken as it reads."""
    if not isinstance(annotation, str):
        return annotation
    namespace = {**vars(typing), **vars(sys.modules[owner.__module__])}
    try:
        return eval(annotation, namespace)  # noqa: S307 - the installed engine's own annotation, not user input
    except Exception:
        return annotation


def _bare(annotation: object) -> object:
    """The type without `Annotated` extras (SGLang's help texts and CLI metadata); a string or integer field whose
    metadata lists its `choices` (SGLang's `Arg(choices=[...])`, which its command line enforces and its offline
    `Engine(**kwargs)` does not) becomes the `Literal` of those choices, so a value outside them is refused here."""
    choices: tuple[object, ...] = ()
    while typing.get_origin(annotation) is typing.Annotated:
        annotation, *extras = typing.get_args(annotation)
        for extra in extras:
            listed = getattr(extra, "choices", None)
            if isinstance(listed, list | tuple) and listed:
                choices = tuple(listed)
    if not choices:
        return annotation
    options = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) else ()
    optional = type(None) in options
    kinds = {t for t in options if t is not type(None)} if options else {annotation}
    if len(kinds) != 1 or not kinds <= {str, int} or not all(type(c) in kinds for c in choices):
        return annotation  # choices of a list, or of a type already narrowed: the declared type says it
    literal = typing.Literal.__getitem__(choices)
    return operator.or_(literal, None) if optional else literal  # `Literal[...] | None`, built at run time


@cache
def declared_fields(declaration: type) -> dict[str, object]:
    """Each field a dataclass or msgspec struct takes when built, by name, with its type; private fields (`_name`)
    are the engine's own bookkeeping and are left out."""
    if dataclasses.is_dataclass(declaration):
        pairs = [(f.name, f.type) for f in dataclasses.fields(declaration) if f.init]
    else:
        import msgspec

        pairs = [(f.name, f.type) for f in msgspec.structs.fields(declaration)]
    return {name: _bare(_resolved(kind, declaration)) for name, kind in pairs if not name.startswith("_")}


@cache
def _validator(annotation: object) -> pydantic.TypeAdapter[object] | None:
    if isinstance(annotation, str):
        return None
    try:
        return pydantic.TypeAdapter(cast("type[object]", annotation))  # a type read at run time
    except Exception:  # no validator for it (a callable, `type[...]`): the engine's own checks judge the value
        return None


def _accepts_none(annotation: object) -> bool:
    options = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) else ()
    return annotation is None or type(None) in options


def field_value(text: str, annotation: object) -> object:
    """`text` (one `--model_args` value) as a field of type `annotation` takes it; `ValueError` saying what the
    field expected where it is not one."""
    if text.strip().lower() in ("none", "null") and _accepts_none(annotation):
        return None
    try:
        parsed: object = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth: the text as given
        parsed = text
    validator = _validator(annotation)
    if validator is None:
        return parsed
    # A JSON object or list is read as one first (`stop=["x"]` is a list, not the string), anything else as the text
    # first (`seed=7` an int where the type is one, `tokenizer=007` a name where it is a string).
    readings = [parsed, text] if isinstance(parsed, dict | list) else [text, parsed] if parsed != text else [text]
    errors: list[Exception] = []
    for reading in readings:
        try:
            return validator.validate_python(reading)
        except Exception as err:  # pydantic's, or the engine's own check in building a field's class (vLLM's
            errors.append(err)  # VLLMValidationError from StructuredOutputsParams.__post_init__)
    raise ValueError(_first_error(errors[0])) from None


def _first_error(err: Exception) -> str:
    """The first problem pydantic found, where; or an engine's own check's rule (its message up to the values it
    shows after a colon, which may hold a key)."""
    if not isinstance(err, pydantic.ValidationError):
        rule = str(err).split(": ", 1)[0].strip().split("\n", 1)[0]
        return f"{type(err).__name__}: {rule[:200]}"
    first = err.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{first['msg']}{f' (at {where})' if where else ''}"


def one_option_at_a_time(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """An engine's command line as `cli_value` reads it, one option at a time: none of its options required (SGLang's
    `--model-path` is given here as `pretrained`)."""
    for action in parser._actions:
        action.required = False
    return parser


def cli_options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """An engine's command-line options that take a value, by the field each sets (argparse's `dest`); a switch
    (`--enforce-eager`, `--no-enforce-eager`) takes none, and its field is read as a bool."""
    return {a.dest: a for a in parser._actions if a.option_strings and a.nargs != 0}


def cli_value(parser: argparse.ArgumentParser, action: argparse.Action, text: str, declared: object = None) -> object:
    """`text` as the engine's own command line reads `action`'s option, by that parser: its type (vLLM's
    human-readable sizes and `auto`), its choices, its own action class; several values for an option that takes
    several as a JSON list. A `ValueError` says what the option expects (its choices, its type, else the field's
    `declared` type), never the value (it may be a key)."""
    values = [text]
    if action.nargs in ("+", "*") or (isinstance(action.nargs, int) and action.nargs > 1):
        try:
            listed = json.loads(text)
        except (ValueError, RecursionError):
            listed = None
        if isinstance(listed, list):
            values = [v if isinstance(v, str) else json.dumps(v) for v in listed]
    option = next((o for o in action.option_strings if o.startswith("--")), action.option_strings[0])
    argv = [f"{option}={values[0]}"] if len(values) == 1 else [option, *values]  # `=`: a value may start with "-"
    unset = object()
    namespace = argparse.Namespace(**{a.dest: unset for a in parser._actions})  # no other option's default is read
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # argparse prints its usage before it exits
            _, rest = parser.parse_known_args(argv, namespace)
        value = getattr(namespace, action.dest)
    except (Exception, SystemExit):  # argparse's own, or whatever the engine's option raises: its own check (an
        value, rest = unset, []  # AssertionError from SGLang's --lora-paths), a RecursionError from a deep value
    if value is unset or rest:
        choices = ", ".join(str(c) for c in action.choices or ())
        expected = f"one of {choices}" if choices else _expected(action.type, declared)
        raise ValueError(f"{option} on its command line takes {expected}")
    return value


def _expected(reader: object, declared: object) -> str:
    """What an option reads, in the user's words: a plain type's name, else the field's declared type (an option's
    reader is the engine's own function, `_optional_type` or `parse_dataclass`, whose name says nothing to a user)."""
    if isinstance(reader, type):
        return reader.__name__
    if declared is None:
        return "a value its engine reads"
    union = typing.get_origin(declared) in (typing.Union, types.UnionType)
    kinds = [t for t in typing.get_args(declared) if t is not type(None)] if union else [declared]
    if len(kinds) == 1 and isinstance(kinds[0], type) and dataclasses.is_dataclass(kinds[0]):
        return f"a JSON object of {kinds[0].__name__}'s fields"
    return _shown(declared) if typing.get_origin(declared) is None else str(declared).replace("typing.", "")


def nearest(name: str, known: Collection[str]) -> str:
    """`; did you mean X?` for the known name closest to `name`, or nothing where none is close."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def split_engine_args(
    args: Mapping[str, str],
    own: Collection[str],
    declaration: type,
    backend: str,
    *,
    refused: Mapping[str, str] | None = None,
    what: str = "model argument",
    cli: argparse.ArgumentParser | None = None,
) -> tuple[dict[str, str], dict[str, object]]:
    """`--model_args` split into the backend's own settings (`own`: their names, strings left for the backend's
    settings parser) and the engine's fields (read by the engine's command line `cli` where it has an option for the
    field, else converted by `declaration`'s types). A key that is an engine field the
    backend sets itself is refused with the reason `refused` gives; one that is neither is refused naming the
    nearest of both. `what` names such a key in the messages ("sampling parameter" for SamplingParams' fields).
    Raises `ValueError` (the value is not shown: it may be a key)."""
    engine = declared_fields(declaration)
    options = cli_options(cli) if cli is not None else {}
    mine: dict[str, str] = {}
    passed: dict[str, object] = {}
    for name, text in args.items():
        if name in (refused or {}):
            raise ValueError(f"{backend} backend: {what} {name}: {(refused or {})[name]}")
        if name in own:
            mine[name] = text
        elif name in engine:
            action = options.get(name)
            try:
                passed[name] = (
                    cli_value(cli, action, text, engine[name]) if cli and action else field_value(text, engine[name])
                )
            except ValueError as err:
                if action is not None:
                    raise ValueError(f"{backend} backend: {what} {name}: {err}") from None
                raise ValueError(
                    f"{backend} backend: {what} {name}: {declaration.__name__}.{name} expects "
                    f"{_shown(engine[name])}: {err}"
                ) from None
        else:
            kind = "neither the backend's own nor a field of" if own else "not a field of"
            raise ValueError(
                f"{backend} backend: unknown {what} {name!r}: {kind} {declaration.__module__}.{declaration.__name__}"
                f"{nearest(name, [*own, *engine])}"
            )
    return mine, passed


def _shown(annotation: object) -> str:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", None) or repr(annotation)
    return str(text).replace("typing.", "")


@dataclass(frozen=True)
class EngineSettings:
    """The engine backends' own arguments (`VLLMSettings`, `SGLangSettings` add theirs and the engine's), checked
    when made, and what counting reads of the engine's arguments (`engine_arg`: each backend's own reading)."""

    backend: ClassVar[str]
    gpu_args: ClassVar[tuple[str, ...]]  # the engine's parallel sizes, whose product is one engine's GPUs
    pretrained: str  # the checkpoint
    max_images: int | None = at_least(1)  # the model's image cap per prompt: a request with more is too_many_images
    # The processor's pixel limits (Qwen-VL style), over the engine's processor settings: the runner and the screen
    # count each image under max_pixels too (`ModelFacts.max_pixels`), and every backend here takes the same two names.
    max_pixels: int | None = at_least(1)
    min_pixels: int | None = at_least(1)
    chat_template: str | None = None  # a Jinja file or string the prompt is rendered with; default: the model's own
    chunk_size: int = at_least(1, 1024)  # requests per engine call (the runner saves after each)
    chunk_tokens: int = at_least(1, 2_000_000)  # prompt tokens per engine call (bounds the decoded images: ~1.5 GP)
    # Tokens the chat template may add, counted only where the processor cannot be loaded (`engine_count`).
    length_margin: int = 64
    decode_workers: int = at_least(1, 4)  # threads decoding images before an engine call
    # Requests sharing a prompt prefix run together so the engine's prefix cache (vLLM's, SGLang's RadixAttention)
    # serves their prefill; "length": long first.
    request_order: str = "cache"
    # How the chat is built from a request, as a model's official wrapper built it (`harness.models.facts.prompt_style`).
    prompt_style: str = "default"

    def __post_init__(self) -> None:
        check_order(self.request_order, self.backend)
        style_named(self.prompt_style)
        for f in dataclasses.fields(self):  # settings made in code get the checks `--model_args` get
            if MINIMUM in f.metadata:
                check_minimum(getattr(self, f.name), f.metadata[MINIMUM], f.name, self.backend)

    @classmethod
    def own_names(cls, args: Mapping[str, str], aliases: Mapping[str, str]) -> dict[str, str]:
        """`--model_args` by the names the backend reads (`aliases`: another name for one); one given twice refused."""
        named: dict[str, str] = {}
        for key, value in args.items():
            name = aliases.get(key, key)
            if name in named:
                raise ValueError(f"{cls.backend} backend: model argument {name!r} given twice (as {key!r})")
            named[name] = value
        return named

    def engine_arg(self, name: str, default: object = None) -> object:
        raise NotImplementedError

    def given_processor(self) -> Mapping[str, object]:
        """The image processor's settings given in the engine's own arguments."""
        raise NotImplementedError

    @property
    def revision(self) -> str | None:
        return _text(self.engine_arg("revision"))

    @property
    def tokenizer(self) -> str | None:  # the engine's own tokenizer in place of the checkpoint's
        return _text(self.engine_arg("tokenizer"))

    @property
    def trust_remote_code(self) -> bool:
        return self.engine_arg("trust_remote_code") is True

    @property
    def gpus(self) -> int:
        """One engine's GPUs (what a Ray replica reserves): the product of its parallel sizes."""
        sizes = (self.engine_arg(name, 1) for name in self.gpu_args)
        return math.prod(size if isinstance(size, int) else 1 for size in sizes)

    def processor_kwargs(self) -> dict[str, object]:
        """The engine's processor settings (`given_processor`), with `min_pixels`/`max_pixels` over them."""
        kwargs = dict(self.given_processor())
        for name in ("min_pixels", "max_pixels"):
            if getattr(self, name) is not None:
                kwargs[name] = getattr(self, name)
        return kwargs


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
