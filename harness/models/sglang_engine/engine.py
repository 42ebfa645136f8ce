"""One `sglang.Engine` in this process: images decoded on worker threads, one `Engine.generate` call per chunk of
rendered prompts, and a chunk the engine rejects for a request-level reason bisected so only the culprits fail."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, cast

from harness.models.checkpoint import check_checkpoint_files
from harness.models.remote_code import before_loading
from harness.models.sglang_engine.requests import EngineItem, generate_batch, is_request_error, output_result

log = logging.getLogger(__name__)


class Engine(Protocol):
    """What the backend calls of `sglang.Engine` (sglang/srt/entrypoints/engine.py)."""

    def generate(
        self, *, prompt: list[str], image_data: list[list[object]], sampling_params: list[dict[str, object]]
    ) -> list[object]: ...
    def shutdown(self) -> None: ...


def _load(spec: str) -> Callable[..., object]:
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


class LocalEngine:
    """One `sglang.Engine(**kwargs)` (`engine_factory`: a "module:attr" spec, the stand-in's in tests)."""

    def __init__(self, kwargs: dict[str, object], *, engine_factory: str = "sglang:Engine", decode_workers: int = 4):
        trust = kwargs.get("trust_remote_code") is True
        checkpoint, revision = str(kwargs["model_path"]), kwargs.get("revision")
        revision = revision if isinstance(revision, str) else None
        check_checkpoint_files(checkpoint, revision)  # no FIFO or device where SGLang reads
        before_loading(checkpoint, revision, trust)  # said (or refused) before SGLang runs it
        self.engine: Engine | None = cast(Engine, _load(engine_factory)(**kwargs))
        self.decode_workers = decode_workers
        manager = getattr(self.engine, "tokenizer_manager", None)
        length = getattr(manager, "context_len", None) or kwargs.get("context_length")
        self.context_length = length if isinstance(length, int) else None

    def run(self, items: Sequence[EngineItem]) -> list[dict[str, object]]:
        """Generate for `items`; one result dict each, in order."""
        engine = self.engine
        if engine is None:
            raise RuntimeError("the sglang engine is closed")
        results: list[dict[str, object] | None] = [None] * len(items)
        decoded: list[list[object]] = [[] for _ in items]

        def decode(i: int) -> None:
            try:
                decoded[i] = [image.pil() for image in items[i].images]  # read and decoded here, RGB
            except Exception as err:  # an undecodable image fails its sample only
                results[i] = {"error": f"invalid_input: image does not decode: {type(err).__name__}: {err}"}

        with ThreadPoolExecutor(max_workers=self.decode_workers) as pool:
            list(pool.map(decode, range(len(items))))

        def call(indices: list[int]) -> None:
            if not indices:
                return
            try:
                batch = generate_batch([items[i] for i in indices], [decoded[i] for i in indices])
                outputs = engine.generate(**batch)
            except Exception as err:
                if not is_request_error(err):
                    raise
                if len(indices) == 1:
                    results[indices[0]] = {"error": f"engine_rejected: {type(err).__name__}: {err}"}
                    return
                log.warning("sglang: the engine rejected a call of %d requests (%s); bisecting", len(indices), err)
                middle = len(indices) // 2
                call(indices[:middle])
                call(indices[middle:])
                return
            if len(outputs) != len(indices):
                raise RuntimeError(f"SGLang returned {len(outputs)} outputs for {len(indices)} prompts")
            for i, output in zip(indices, outputs, strict=True):
                results[i] = output_result(output)

        call([i for i in range(len(items)) if results[i] is None])
        return cast(list[dict[str, object]], results)  # every index filled: each call fills its own or splits them

    def close(self) -> None:
        engine, self.engine = self.engine, None
        if engine is not None:
            engine.shutdown()  # stops the scheduler and detokenizer processes and frees their GPU memory
