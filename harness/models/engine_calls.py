"""What the offline engines (`vllm`, `sglang`) do alike around one engine call: build the engine from a "module:attr"
spec (the stand-in's in tests), decode a chunk's images on worker threads (an image that does not decode fails its
sample only), and call the engine on the chunk, bisecting a call it rejects for a request's fault so that only the
culprits fail; the chat template given as a file or as text."""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

log = logging.getLogger(__name__)

Result = dict[str, object]  # one request's result: the output's fields, or {"error": ...}
Output = TypeVar("Output")


def load_factory(spec: str) -> Callable[..., object]:
    """The engine (or sampling) class a "module:attr" spec names, imported when an engine is built."""
    module, _, attr = spec.partition(":")
    factory: Callable[..., object] = getattr(importlib.import_module(module), attr)
    return factory


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
    is_request_error: Callable[[BaseException], bool],
) -> None:
    """Fill `results[i]` for each of `indices` from one engine call (`send`); a call the engine rejects for a request's
    fault (`is_request_error`) is split in two and each half sent again, so only the culprit is `engine_rejected`;
    any other failure is the engine's, re-raised."""
    if not indices:
        return
    try:
        outputs = send(indices)
    except Exception as err:
        if not is_request_error(err):
            raise
        if len(indices) == 1:
            results[indices[0]] = {"error": f"engine_rejected: {type(err).__name__}: {err}"}
            return
        log.warning("%s: the engine rejected a call of %d requests (%s); bisecting", engine, len(indices), err)
        middle = len(indices) // 2
        for half in (indices[:middle], indices[middle:]):
            call_bisecting(half, send, result, results, engine=engine, is_request_error=is_request_error)
        return
    if len(outputs) != len(indices):
        raise RuntimeError(f"{engine} returned {len(outputs)} outputs for {len(indices)} requests")
    for i, output in zip(indices, outputs, strict=True):
        results[i] = result(output)


def template_text(given: str | None) -> str | None:
    """The template given in --model_args (a file or the text itself); None: the model's own."""
    if given is not None and os.path.isfile(given):
        with open(given, encoding="utf-8") as f:
            return f.read()
    return given
