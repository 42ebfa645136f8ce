"""One `sglang.Engine` in this process: images decoded on worker threads, one `Engine.generate` call per chunk of
rendered prompts, and a chunk the engine rejects for a request-level reason bisected so only the culprits fail."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, cast

from harness.models.checkpoint import check_checkpoint_files
from harness.models.engine_calls import Result, call_bisecting, decode_each, load_factory
from harness.models.remote_code import before_loading
from harness.models.sglang_engine.requests import EngineItem, generate_batch, is_request_error, output_result


class Engine(Protocol):
    """What the backend calls of `sglang.Engine` (sglang/srt/entrypoints/engine.py)."""

    def generate(
        self, *, prompt: list[str], image_data: list[list[object]], sampling_params: list[dict[str, object]]
    ) -> list[object]: ...
    def shutdown(self) -> None: ...


class LocalEngine:
    """One `sglang.Engine(**kwargs)` (`engine_factory`: a "module:attr" spec, the stand-in's in tests)."""

    def __init__(self, kwargs: dict[str, object], *, engine_factory: str = "sglang:Engine", decode_workers: int = 4):
        trust = kwargs.get("trust_remote_code") is True
        checkpoint, revision = str(kwargs["model_path"]), kwargs.get("revision")
        revision = revision if isinstance(revision, str) else None
        check_checkpoint_files(checkpoint, revision)  # no FIFO or device where SGLang reads
        before_loading(checkpoint, revision, trust)  # said (or refused) before SGLang runs it
        self.engine: Engine | None = cast(Engine, load_factory(engine_factory)(**kwargs))
        self.decode_workers = decode_workers
        manager = getattr(self.engine, "tokenizer_manager", None)
        length = getattr(manager, "context_len", None) or kwargs.get("context_length")
        self.context_length = length if isinstance(length, int) else None

    def run(self, items: Sequence[EngineItem]) -> list[dict[str, object]]:
        """Generate for `items`; one result dict each, in order."""
        engine = self.engine
        if engine is None:
            raise RuntimeError("the sglang engine is closed")
        results: list[Result | None] = [None] * len(items)
        decoded: list[list[object]] = [[] for _ in items]

        def decode(i: int) -> None:
            decoded[i] = [image.pil() for image in items[i].images]  # read and decoded here, RGB

        def send(indices: list[int]) -> Sequence[object]:
            return engine.generate(**generate_batch([items[i] for i in indices], [decoded[i] for i in indices]))

        decode_each(len(items), decode, self.decode_workers, results)
        ready = [i for i in range(len(items)) if results[i] is None]
        call_bisecting(ready, send, output_result, results, engine="SGLang", is_request_error=is_request_error)
        return cast(list[dict[str, object]], results)  # every index filled: each call fills its own or splits them

    def close(self) -> None:
        engine, self.engine = self.engine, None
        if engine is not None:
            engine.shutdown()  # stops the scheduler and detokenizer processes and frees their GPU memory
