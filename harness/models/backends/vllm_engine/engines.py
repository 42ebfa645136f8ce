"""One `vllm.LLM` in this process: images decoded on worker threads, one `LLM.chat` call per chunk, and
a chunk the engine rejects for a request-level reason bisected so only the culprits fail."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, cast

from harness.models.backends.vllm_engine.engine_log import EngineOutput
from harness.models.backends.vllm_engine.requests import (
    build_conversation,
    engine_prompt,
    engine_refused,
    output_result,
)
from harness.models.backends.vllm_engine.start import check_main_guard, engine_died, start_method, started
from harness.models.shared.engine_calls import Result, call_bisecting, check_loading, decode_each, load_factory

# What transformers' `generate` still applies from a checkpoint's generation_config.json under greedy decoding
# (temperature, top_p and top_k are the sampler's, which greedy ignores): the official HF wrappers' runs had it.
GREEDY_DECODING = ("repetition_penalty",)


def checkpoint_decoding(llm: object, generation_config: str | None) -> dict[str, Any]:
    """The checkpoint's own decoding settings that greedy decoding keeps (a repetition penalty: Qwen2-VL's 1.05), read
    from vLLM's defaults where the engine loaded the checkpoint's generation_config (`generation_config="auto"`);
    explicit `SamplingParams` would otherwise drop them. Its eos tokens vLLM adds to every request itself."""
    getter = getattr(llm, "get_default_sampling_params", None)
    if generation_config in (None, "vllm") or not callable(getter):
        return {}
    defaults = getter()
    return {
        name: getattr(defaults, name) for name in GREEDY_DECODING if getattr(defaults, name, None) not in (None, 1.0)
    }


def token_ids(llm: object, tokens: tuple[str, ...]) -> list[int]:
    """The engine tokenizer's id of each special token (`eos_tokens`); a ValueError naming one it does not hold."""
    tokenizer = getattr(llm, "get_tokenizer")()  # noqa: B009 - vLLM's LLM, or a stand-in with the same method
    ids = []
    for token in tokens:
        found = tokenizer.convert_tokens_to_ids(token)
        if not isinstance(found, int) or found == getattr(tokenizer, "unk_token_id", None):
            raise ValueError(f"eos_tokens: {token!r} is not one token of the checkpoint's tokenizer")
        ids.append(found)
    return ids


class LocalEngine:
    """One `vllm.LLM` in this process. `llm_factory`/`sampling_factory` are "module:attr" specs."""

    def __init__(
        self,
        kwargs: dict[str, Any],
        *,
        llm_factory: str = "vllm:LLM",
        sampling_factory: str = "vllm:SamplingParams",
        decode_workers: int = 4,
        eos_tokens: tuple[str, ...] = (),
        start_timeout: float | None = None,
        past_window: bool = False,
        engine_log: str | None = None,
    ) -> None:
        if past_window and (kwargs.get("max_model_len") or 0) > 0:  # (-1, `auto`: never past the window)
            # A limit given past the window vLLM derives from the config, on purpose (`past_window`): the papers ran
            # inputs past the training window (MMLongBench's official `vllm serve` line sets the same).
            os.environ.setdefault("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")
        check_loading(kwargs, kwargs.get("model"), kwargs.get("tokenizer"))
        # how its processes start, recorded with the engine's arguments
        self.start_method: dict[str, object] = {**start_method(), "start_timeout_s": start_timeout}
        if self.start_method["method"] != "fork":
            check_main_guard()
        self.output = EngineOutput(Path(engine_log) if engine_log else None)
        factory = load_factory(llm_factory)
        self.llm: Any
        self.llm, self.watch = started(lambda: factory(**kwargs), start_timeout, self.output)
        try:
            self.make_sampling = load_factory(sampling_factory)
            self.decode_workers = decode_workers
            config = getattr(getattr(self.llm, "llm_engine", None), "model_config", None)
            # the engine's own (an `auto` limit fitted to memory), else the one given
            reported = [getattr(config, "max_model_len", None), kwargs.get("max_model_len")]
            self.max_model_len: int | None = next((n for n in reported if isinstance(n, int) and n > 0), None)
            # What the encoder cache holds of one image (`image_limit`): a request with a larger one is refused whole.
            held = getattr(
                getattr(getattr(self.llm, "llm_engine", None), "input_processor", None), "mm_encoder_cache_size", 0
            )
            self.encoder_cache: int | None = held if isinstance(held, int) and held > 0 else None
            self.sampling_defaults = checkpoint_decoding(self.llm, kwargs.get("generation_config"))
            # the tokenizer the engine loaded (`tokenizer=`, or the checkpoint's): each answer is decoded from its ids
            # by it (`requests.output_result`); an engine stand-in without one gives its own text
            getter = getattr(self.llm, "get_tokenizer", None)
            self.tokenizer = getter() if callable(getter) else None
            if eos_tokens:
                self.sampling_defaults.update(stop_token_ids=token_ids(self.llm, eos_tokens), ignore_eos=True)
        except BaseException:  # (an eos token the tokenizer lacks): the started engine's processes end with it
            self.close()
            raise

    def run(self, payloads: Sequence[dict[str, Any]], options: dict[str, Any]) -> list[dict[str, Any]]:
        """Generate for payloads that share `options` (chat flags); one result dict per payload. Payloads the
        backend rendered (`prompt`) go to `LLM.generate` as they are, the others to `LLM.chat` as conversations."""
        results: list[Result | None] = [None] * len(payloads)
        conversations: list[Any] = [None] * len(payloads)
        rendered = bool(payloads) and all(p.get("prompt") is not None for p in payloads)

        def convert(i: int) -> None:
            payload = payloads[i]
            conversations[i] = (
                engine_prompt(payload, options.get("mm_processor_kwargs")) if rendered else build_conversation(payload)
            )

        decode_each(len(payloads), convert, self.decode_workers, results)
        params: list[Any] = [None] * len(payloads)
        for i in range(len(payloads)):
            if results[i] is None:
                try:
                    params[i] = self.make_sampling(**{**self.sampling_defaults, **payloads[i]["sampling"]})
                except (ValueError, TypeError) as err:  # vLLM validates settings here
                    results[i] = {"error": f"invalid_input: sampling parameters: {err}"}

        def send(indices: list[int]) -> Sequence[Any]:
            prompts, sampling = [conversations[i] for i in indices], [params[i] for i in indices]
            if rendered:
                return self.llm.generate(prompts, sampling_params=sampling, use_tqdm=options["use_tqdm"])
            return self.llm.chat(prompts, sampling_params=sampling, **options)

        ready = [i for i in range(len(payloads)) if results[i] is None]
        try:
            with self.watch.call(self.output):
                answer = partial(output_result, tokenizer=self.tokenizer)
                call_bisecting(ready, send, answer, results, engine="vLLM", over_length=engine_refused)
        except Exception as err:
            died = engine_died(err, self.output)
            if died is None:
                raise
            raise died from err
        return cast(list[dict[str, Any]], results)  # every index filled: each call fills its own or splits them

    def close(self) -> None:
        llm, self.llm = self.llm, None
        self.watch.close()
        # vLLM 0.33's offline LLM has no shutdown(); its engine-core client does (it stops the
        # engine processes and frees their GPU memory).
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        shutdown = getattr(core, "shutdown", None)
        if callable(shutdown):
            with self.output.captured():  # its shutdown's lines with the rest of its log
                shutdown()
        del llm
        self.output.close()
