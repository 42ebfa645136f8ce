"""What the offline engines (`vllm`, `sglang`) do alike around one engine call: screen each request first (one the
engine would refuse aborts the whole call), build the engine from a "module:attr" spec (the stand-in's in tests),
decode a chunk's images on worker threads (an image that does not decode fails its sample only), call the engine on
the chunk, bisecting a call it rejects for a request's fault so that only the culprits fail, and map each result dict
to a `Response`; the chat template given as a file or as text."""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from harness.api import GenerationSettings, Request, Response
from harness.models.facts.checkpoint import check_checkpoint_files
from harness.models.facts.remote_code import before_loading

log = logging.getLogger(__name__)

Result = dict[str, object]  # one request's result: the output's fields, or {"error": ...}
Output = TypeVar("Output")


def greedy_or_sampled(gen: GenerationSettings) -> dict[str, float]:
    """The task's temperature and top_p where it samples; otherwise greedy, as both engines take it (temperature 0)."""
    return {"temperature": gen.temperature, "top_p": gen.top_p} if gen.sampled else {"temperature": 0.0, "top_p": 1.0}


def load_factory(spec: str) -> Callable[..., object]:
    """The engine (or sampling) class a "module:attr" spec names, imported when an engine is built."""
    module, _, attr = spec.partition(":")
    factory: Callable[..., object] = getattr(importlib.import_module(module), attr)
    return factory


def check_loading(kwargs: Mapping[str, object], *checkpoints: object) -> None:
    """Before an engine reads them: each checkpoint checked (no FIFO or device where the engine reads, weights files
    whole) and its code said, or refused, before the engine runs it."""
    revision = kwargs.get("revision")
    revision = revision if isinstance(revision, str) else None
    for checkpoint in dict.fromkeys(str(c) for c in checkpoints if c):
        check_checkpoint_files(checkpoint, revision)
        before_loading(checkpoint, revision, kwargs.get("trust_remote_code") is True)


def load_engine(factory: str, kwargs: Mapping[str, object], *checkpoints: object) -> Any:
    """The engine `factory` builds from `kwargs`, once the checkpoints it reads are checked (`check_loading`)."""
    check_loading(kwargs, *checkpoints)
    return load_factory(factory)(**kwargs)


def decode_each(count: int, decode: Callable[[int], None], workers: int, results: list[Result | None]) -> None:
    """`decode(i)` for each of `count` requests on `workers` threads; an exception leaves request i's result an
    `invalid_input` error (its image does not decode), the rest go on."""

    def one(i: int) -> None:
        try:
            decode(i)
        except Exception as err:
            results[i] = {"error": f"invalid_input: image does not decode: {type(err).__name__}: {err}"}

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, range(count)))


def call_bisecting(
    indices: list[int],
    send: Callable[[list[int]], Sequence[Output]],
    result: Callable[[Output], Result],
    results: list[Result | None],
    *,
    engine: str,
    over_length: Callable[[BaseException], str | None] = lambda err: None,
) -> None:
    """Fill `results[i]` for each of `indices` from one engine call (`send`); a call the engine rejects for a request's
    fault (`is_request_error`) is split in two and each half sent again, so only the culprit is `engine_rejected`, or
    `over_length` where the engine refused it for what the screen screens for (`over_length`: the reason, as the
    screen says it: its length, vLLM's too many images); any other failure is the engine's, re-raised."""
    if not indices:
        return
    try:
        outputs = send(indices)
    except Exception as err:
        if not is_request_error(err):
            raise
        if len(indices) == 1:
            results[indices[0]] = {"error": over_length(err) or f"engine_rejected: {type(err).__name__}: {err}"}
            return
        log.warning("%s: the engine rejected a call of %d requests (%s); bisecting", engine, len(indices), err)
        middle = len(indices) // 2
        for half in (indices[:middle], indices[middle:]):
            call_bisecting(half, send, result, results, engine=engine, over_length=over_length)
        return
    if len(outputs) != len(indices):
        raise RuntimeError(f"{engine} returned {len(outputs)} outputs for {len(indices)} requests")
    for i, output in zip(indices, outputs, strict=True):
        results[i] = result(output)


def is_request_error(err: BaseException) -> bool:
    """An engine exception caused by a request (bisect to find it), not by the engine (re-raised): vLLM's client errors,
    and the ValueError or TypeError either engine raises for a request it refuses (SGLang validates each request as it
    tokenizes the batch, and raises for the whole call); vLLM's server errors are the engine's."""
    names = {c.__name__ for c in type(err).__mro__}
    if "VLLMServerError" in names:
        return False
    return "VLLMClientError" in names or isinstance(err, ValueError | TypeError)


def template_text(given: str | None) -> str | None:
    """The template given in --model_args (a file or the text itself); None: the model's own."""
    if given is not None and os.path.isfile(given):
        with open(given, encoding="utf-8") as f:
            return f.read()
    return given


def screen_request(
    request: Request,
    *,
    prompt_tokens: int,
    context_length: int | None,
    cap: tuple[int | None, str],
    length_name: str = "context_length",
) -> str | None:
    """Why a request must not reach the engine (an error string), or None: more images than `cap` allows (the
    limit, and what sets it), or a prompt (counted as the engine counts it) whose tokens and `max_gen_toks` exceed the
    context (`length_name`: the engine's name for it). vLLM and SGLang refuse such a prompt for the whole call it is
    in (SGLang's `TokenizerManager._validate_one_request`), and a prompt that leaves no room for the answer would be
    cut short."""
    limit, why = cap
    if limit is not None and request.num_images > limit:
        return f"too_many_images: {request.num_images} images > {why}"
    need = prompt_tokens + request.settings.max_gen_toks
    if context_length is not None and need > context_length:
        return (
            f"over_length: {prompt_tokens} prompt tokens + {request.settings.max_gen_toks} to generate > "
            f"{length_name} {context_length}"
        )
    return None


def result_response(result: Mapping[str, object]) -> Response:
    """One result dict (an output's fields, or {"error": ...}) as a `Response`, its token counts as its usage."""
    usage: dict[str, int] = {}
    for key in ("prompt_tokens", "completion_tokens", "cached_tokens"):
        value = result.get(key)
        if isinstance(value, int):
            usage[key] = value
    if "prompt_tokens" in usage and "completion_tokens" in usage:
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    finish, error, text, ids = (result.get(key) for key in ("finish_reason", "error", "text", "prompt_ids_sha256"))
    finish_reason = finish if isinstance(finish, str) else None
    ids_sha = ids if isinstance(ids, str) else None
    if error:
        return Response(
            text=None, error=str(error), finish_reason=finish_reason, usage=usage, prompt_ids_sha256=ids_sha
        )
    text = text if isinstance(text, str) else None
    return Response(text=text, finish_reason=finish_reason, usage=usage, prompt_ids_sha256=ids_sha)
