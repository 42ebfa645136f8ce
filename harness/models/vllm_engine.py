"""`vllm` backend: offline `vllm.LLM` (vLLM 0.33), all of a task's requests in few large calls.

    harness --model vllm --model_args pretrained=Qwen/Qwen2.5-VL-7B-Instruct,max_model_len=32768,tensor_parallel_size=2

* The engine is built on the first `generate`, with `limit_mm_per_prompt={"image": L, "video": 0}`
  where L is the largest image count among the requests seen so far (tell it the run's largest count
  with `observe_max_images(n)`, or `observe(requests)`, before the first `generate`, so that L
  covers every task of the run), capped by `max_images`. The limit also sizes vLLM's memory profiling, so it is set from the data, not 999.
* Requests go to `LLM.chat` in chunks (`chunk_size` requests and `chunk_tokens` prompt tokens at most,
  which bounds the decoded images held at once; the runner saves after each chunk), as OpenAI-style
  conversations with `{"type": "image_pil", "image_pil": PIL, "uuid": sha256}` parts in prompt order,
  and explicit `SamplingParams` per request (vLLM's default is `max_tokens=16` plus the model's
  generation_config; `generation_config="vllm"` is also set so nothing model-specific leaks in).
* A prompt longer than the context aborts vLLM's whole batch, so every request is screened first
  (`screen_request`) and recorded as `over_length` without reaching the engine. If the engine still
  rejects a chunk for a request-level reason, the chunk is bisected so only the culprits fail.
* `data_parallel_size=D` runs D independent engine replicas in worker processes, each on its own
  `tensor_parallel_size * pipeline_parallel_size` GPUs, and splits each chunk between them (vLLM's own
  `LLM(data_parallel_size>1)` refuses single-process use). Several nodes: one engine spanning nodes
  with `distributed_executor_backend=ray` (Ray cluster started first), or one harness process per
  node with `--shard i/n` and `harness merge`.

vLLM is imported only when an engine is built, so this module imports without it.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib
import importlib.util
import io
import json
import logging
import multiprocessing
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from builders.core.tokens import MIN_PIXELS, PATCH_FACTOR, smart_resize
from harness.api import BackendFatalError, GenerationSettings, ImagePart, Model, Request, Response, TextPart
from harness.batching import token_budget_batches
from harness.models.openai_chat import settings_from_args
from harness.models.registry import register_model

log = logging.getLogger(__name__)

QWEN_MIN_PIXELS = MIN_PIXELS
QWEN_MAX_PIXELS = 28 * 28 * 1280  # the processor's default cap, used when only min_pixels is given


@dataclass(frozen=True)
class VLLMSettings:
    pretrained: str
    revision: str | None = None
    tokenizer: str | None = None
    max_model_len: int | None = None  # default: what vLLM derives from the model config
    max_images: int | None = None  # the model's image cap per prompt; limit_mm_per_prompt never exceeds it
    max_pixels: int | None = None  # mm_processor_kwargs (Qwen-VL style pixel limits)
    min_pixels: int | None = None
    mm_processor_kwargs: str | None = None  # extra processor kwargs as a JSON object
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    distributed_executor_backend: str | None = None  # "ray" for an engine spanning nodes; "mp"
    gpu_memory_utilization: float = 0.9
    enable_prefix_caching: bool | None = None  # None: vLLM's default (on)
    seed: int = 0
    dtype: str = "auto"
    trust_remote_code: bool = False
    chat_template: str | None = None  # a Jinja file or string; default: the model's own
    chat_template_content_format: str = "auto"
    generation_config: str = "vllm"  # "vllm": neutral defaults; "auto": the model's generation_config.json
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    mm_processor_cache_gb: float | None = None
    enforce_eager: bool = False
    hf_overrides: str | None = None  # JSON object, e.g. YaRN rope scaling for long contexts
    chunk_size: int = 1024  # requests per engine call (the runner saves after each)
    chunk_tokens: int = 2_000_000  # prompt tokens per engine call (~1.5 GP of decoded images)
    length_margin: int = 64  # tokens the chat template and system prompt may add, for screening
    image_overhead: int = 2  # tokens per image beyond its vision tokens (<|vision_start|>, <|vision_end|>)
    decode_workers: int = 4  # threads decoding images before an engine call
    replica_timeout: float = 7200.0  # seconds a data-parallel replica may take for one chunk
    use_tqdm: bool = True

    def __post_init__(self) -> None:
        for name in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "chunk_size",
                     "chunk_tokens", "decode_workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"vllm backend: {name} must be at least 1, got {getattr(self, name)}")
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError(f"vllm backend: gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}")
        if self.max_images is not None and self.max_images < 1:
            raise ValueError(f"vllm backend: max_images must be at least 1, got {self.max_images}")
        for name in ("mm_processor_kwargs", "hf_overrides"):
            value = getattr(self, name)
            if value is not None:
                try:
                    parsed = json.loads(value)
                except json.JSONDecodeError as err:
                    raise ValueError(f"vllm backend: {name} must be a JSON object: {err}") from None
                if not isinstance(parsed, dict):
                    raise ValueError(f"vllm backend: {name} must be a JSON object, got {value!r}")

    def processor_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = json.loads(self.mm_processor_kwargs) if self.mm_processor_kwargs else {}
        if self.min_pixels is not None:
            kwargs["min_pixels"] = self.min_pixels
        if self.max_pixels is not None:
            kwargs["max_pixels"] = self.max_pixels
        return kwargs


ARG_ALIASES = {"model": "pretrained", "context_length": "max_model_len", "limit_mm_per_prompt": "max_images",
               "tp": "tensor_parallel_size", "dp": "data_parallel_size"}


# --- pure parts: engine args, screening, payloads, sampling, output mapping ---------------------------

def engine_kwargs(settings: VLLMSettings, image_limit: int) -> dict[str, Any]:
    """Keyword arguments for `vllm.LLM(...)` (one replica; data parallelism is ours, see module doc)."""
    s = settings
    kwargs: dict[str, Any] = {
        "model": s.pretrained,
        "limit_mm_per_prompt": {"image": max(1, image_limit), "video": 0},
        "tensor_parallel_size": s.tensor_parallel_size,
        "pipeline_parallel_size": s.pipeline_parallel_size,
        "gpu_memory_utilization": s.gpu_memory_utilization,
        "seed": s.seed,
        "dtype": s.dtype,
        "trust_remote_code": s.trust_remote_code,
        "generation_config": s.generation_config,
        "enforce_eager": s.enforce_eager,
    }
    optional = {
        "revision": s.revision,
        "tokenizer": s.tokenizer,
        "max_model_len": s.max_model_len,
        "distributed_executor_backend": s.distributed_executor_backend,
        "enable_prefix_caching": s.enable_prefix_caching,
        "chat_template": s.chat_template,
        "max_num_seqs": s.max_num_seqs,
        "max_num_batched_tokens": s.max_num_batched_tokens,
        "mm_processor_cache_gb": s.mm_processor_cache_gb,
        "hf_overrides": json.loads(s.hf_overrides) if s.hf_overrides else None,
        "mm_processor_kwargs": s.processor_kwargs() or None,
    }
    kwargs.update({k: v for k, v in optional.items() if v is not None})
    return kwargs


def vision_tokens(request: Request, settings: VLLMSettings) -> list[int]:
    """Per-image vision tokens: the row's figures, or, when the run sets pixel limits and the image
    sizes are known, the same 28-px rule applied with those limits (the rows count full resolution)."""
    if settings.max_pixels is None and settings.min_pixels is None:
        return list(request.image_tokens)
    images = request.images
    if len(images) != len(request.image_tokens) or any(i.width is None or i.height is None for i in images):
        return list(request.image_tokens)
    lo = settings.min_pixels if settings.min_pixels is not None else QWEN_MIN_PIXELS
    hi = settings.max_pixels if settings.max_pixels is not None else QWEN_MAX_PIXELS
    out = []
    for image in images:
        h, w = smart_resize(int(image.height), int(image.width), min_pixels=lo, max_pixels=hi)  # type: ignore[arg-type]
        out.append((h // PATCH_FACTOR) * (w // PATCH_FACTOR))
    return out


def estimated_prompt_tokens(request: Request, settings: VLLMSettings) -> int:
    return (request.text_tokens + sum(vision_tokens(request, settings))
            + settings.image_overhead * request.num_images + settings.length_margin)


def screen_request(request: Request, settings: VLLMSettings, *, max_model_len: int, image_limit: int) -> str | None:
    """Why a request must not reach the engine (an error string), or None.

    Rule (conservative): text tokens + vision tokens + `image_overhead` per image + `length_margin`
    for the chat template + `max_gen_toks` must fit in `max_model_len`. vLLM itself rejects a prompt
    of `max_model_len` tokens or more, which would abort the whole call, and a prompt that leaves no
    room for the answer would be cut short silently; the margin absorbs the template's tokens and
    small differences between the builder's text tokenizer and the model's.
    """
    if request.num_images > image_limit:
        cap = settings.max_images
        why = f"the model's cap max_images={cap}" if cap is not None and request.num_images > cap else (
            f"limit_mm_per_prompt={image_limit} of the running engine (pass max_images=N in --model_args to raise it)")
        return f"too_many_images: {request.num_images} images > {why}"
    prompt = estimated_prompt_tokens(request, settings)
    need = prompt + request.settings.max_gen_toks
    if need > max_model_len:
        return (
            f"over_length: ~{prompt} prompt tokens (text {request.text_tokens} + vision {sum(vision_tokens(request, settings))}"
            f" + {settings.image_overhead * request.num_images} image markers + {settings.length_margin} template margin)"
            f" + {request.settings.max_gen_toks} to generate > max_model_len {max_model_len}"
        )
    return None


def sampling_kwargs(gen: GenerationSettings, default_seed: int) -> dict[str, Any]:
    """`SamplingParams` arguments: greedy unless the task samples; always an explicit max_tokens."""
    sampled = gen.do_sample and gen.temperature > 0
    return {
        "n": 1,
        "temperature": gen.temperature if sampled else 0.0,
        "top_p": gen.top_p if sampled else 1.0,
        "max_tokens": gen.max_gen_toks,
        "stop": list(gen.until),
        "seed": gen.seed if gen.seed is not None else default_seed,
        "skip_special_tokens": True,
    }


def request_payload(request: Request, default_seed: int) -> dict[str, Any]:
    """A picklable description of one request (encoded image bytes, not pixels): what an engine
    replica needs, in-process or in a worker process."""
    messages = []
    for message in request.messages:
        parts: list[tuple] = []
        for part in message.content:
            if isinstance(part, TextPart):
                parts.append(("text", part.text))
            elif isinstance(part, ImagePart):
                parts.append(("image", part.image.sha256, part.image.data()))
            else:
                raise TypeError(f"unsupported content part {type(part).__name__}")
        messages.append({"role": message.role, "parts": parts})
    return {
        "messages": messages,
        "prefix": request.assistant_prefix,
        "sampling": sampling_kwargs(request.settings, default_seed),
        "cost": request.token_count,
    }


def decode_image(data: bytes):
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    image.load()
    return image if image.mode == "RGB" else image.convert("RGB")


def build_conversation(payload: dict[str, Any], decode: Callable[[bytes], Any] = decode_image) -> list[dict[str, Any]]:
    """OpenAI-style messages for `LLM.chat`; images as `image_pil` parts keyed by their sha256 (vLLM's
    multimodal caches then skip hashing the pixels). An assistant prefix becomes a final assistant
    message, continued with `continue_final_message=True`."""
    conversation = []
    for message in payload["messages"]:
        content: list[dict[str, Any]] = []
        for part in message["parts"]:
            if part[0] == "text":
                if part[1]:
                    content.append({"type": "text", "text": part[1]})
            else:
                _, sha, data = part
                content.append({"type": "image_pil", "image_pil": decode(data), "uuid": sha})
        conversation.append({"role": message["role"], "content": content})
    if payload["prefix"]:
        conversation.append({"role": "assistant", "content": [{"type": "text", "text": payload["prefix"]}]})
    return conversation


def output_result(output: Any) -> dict[str, Any]:
    """A vLLM `RequestOutput` -> a plain dict (picklable across processes)."""
    completions = getattr(output, "outputs", None) or []
    prompt_ids = getattr(output, "prompt_token_ids", None)
    prompt_tokens = len(prompt_ids) if prompt_ids is not None else None
    cached = getattr(output, "num_cached_tokens", None)
    if not completions:
        return {"error": "engine_error: the engine returned no completion", "prompt_tokens": prompt_tokens}
    first = completions[0]
    finish = getattr(first, "finish_reason", None)
    result = {
        "text": first.text,
        "finish_reason": str(finish) if finish is not None else None,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": len(first.token_ids) if getattr(first, "token_ids", None) is not None else None,
        "cached_tokens": cached,
    }
    if result["finish_reason"] in ("abort", "error"):
        result["error"] = f"engine_error: generation ended with finish_reason={result['finish_reason']}"
    return result


def result_response(result: dict[str, Any]) -> Response:
    usage = {}
    for key in ("prompt_tokens", "completion_tokens", "cached_tokens"):
        if isinstance(result.get(key), int):
            usage[key] = result[key]
    if "prompt_tokens" in usage and "completion_tokens" in usage:
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    if result.get("error"):
        return Response(text=None, error=result["error"], finish_reason=result.get("finish_reason"), usage=usage)
    return Response(text=result["text"], finish_reason=result.get("finish_reason"), usage=usage)


def is_request_error(err: BaseException) -> bool:
    """An engine exception caused by a request (bisect to find it), not by the engine (re-raise)."""
    names = {c.__name__ for c in type(err).__mro__}
    if "VLLMServerError" in names:
        return False
    return "VLLMClientError" in names or isinstance(err, ValueError | TypeError)


def _load(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


# --- engines ---------------------------------------------------------------------------------------

class LocalEngine:
    """One `vllm.LLM` in this process. `llm_factory`/`sampling_factory` are "module:attr" specs."""

    def __init__(self, kwargs: dict[str, Any], *, llm_factory: str = "vllm:LLM",
                 sampling_factory: str = "vllm:SamplingParams", decode_workers: int = 4) -> None:
        self.llm = _load(llm_factory)(**kwargs)
        self.make_sampling = _load(sampling_factory)
        self.decode_workers = decode_workers
        config = getattr(getattr(self.llm, "llm_engine", None), "model_config", None)
        self.max_model_len: int | None = getattr(config, "max_model_len", None) or kwargs.get("max_model_len")

    def run(self, payloads: Sequence[dict[str, Any]], options: dict[str, Any]) -> list[dict[str, Any]]:
        """Generate for payloads that share `options` (chat flags); one result dict per payload."""
        results: list[dict[str, Any] | None] = [None] * len(payloads)
        conversations: list[Any] = [None] * len(payloads)

        def convert(i: int) -> None:
            try:
                conversations[i] = build_conversation(payloads[i])
            except Exception as err:  # an undecodable image fails its sample only
                results[i] = {"error": f"invalid_input: image does not decode: {type(err).__name__}: {err}"}

        with ThreadPoolExecutor(max_workers=self.decode_workers) as pool:
            list(pool.map(convert, range(len(payloads))))
        params: list[Any] = [None] * len(payloads)
        for i in range(len(payloads)):
            if results[i] is None:
                try:
                    params[i] = self.make_sampling(**payloads[i]["sampling"])
                except (ValueError, TypeError) as err:  # vLLM validates settings here
                    results[i] = {"error": f"invalid_input: sampling parameters: {err}"}
        ready = [i for i in range(len(payloads)) if results[i] is None]

        def call(indices: list[int]) -> None:
            if not indices:
                return
            try:
                outputs = self.llm.chat([conversations[i] for i in indices], sampling_params=[params[i] for i in indices],
                                        **options)
            except Exception as err:
                if not is_request_error(err):
                    raise
                if len(indices) == 1:
                    results[indices[0]] = {"error": f"engine_rejected: {type(err).__name__}: {err}"}
                    return
                log.warning("vllm: the engine rejected a call of %d requests (%s); bisecting", len(indices), err)
                middle = len(indices) // 2
                call(indices[:middle])
                call(indices[middle:])
                return
            if len(outputs) != len(indices):
                raise RuntimeError(f"vLLM returned {len(outputs)} outputs for {len(indices)} conversations")
            for i, output in zip(indices, outputs, strict=True):
                results[i] = output_result(output)

        call(ready)
        return results  # type: ignore[return-value]

    def close(self) -> None:
        llm, self.llm = self.llm, None
        # vLLM 0.33's offline LLM has no shutdown(); its engine-core client does (it stops the
        # engine processes and frees their GPU memory).
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        shutdown = getattr(core, "shutdown", None)
        if callable(shutdown):
            shutdown()
        del llm


def replica_devices(rank: int, per_replica: int, visible: str | None) -> str:
    """CUDA_VISIBLE_DEVICES for data-parallel replica `rank` (its own consecutive GPUs)."""
    devices = [d.strip() for d in visible.split(",") if d.strip()] if visible else None
    if devices is None:
        return ",".join(str(d) for d in range(rank * per_replica, (rank + 1) * per_replica))
    mine = devices[rank * per_replica : (rank + 1) * per_replica]
    if len(mine) != per_replica:
        raise ValueError(f"vllm backend: replica {rank} needs {per_replica} GPU(s) but CUDA_VISIBLE_DEVICES={visible!r} "
                         f"has only {len(devices)}")
    return ",".join(mine)


def split_balanced(costs: Sequence[int], parts: int) -> list[list[int]]:
    """Indices split into `parts` lists of similar total cost (longest first to the least loaded)."""
    loads = [0] * parts
    out: list[list[int]] = [[] for _ in range(parts)]
    for i in sorted(range(len(costs)), key=lambda i: -costs[i]):
        target = min(range(parts), key=lambda p: (loads[p], p))
        out[target].append(i)
        loads[target] += costs[i]
    return [sorted(p) for p in out]


def _replica_main(conn, devices: str | None, kwargs: dict[str, Any], factories: dict[str, Any]) -> None:
    if devices is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = devices
    try:
        engine = LocalEngine(kwargs, **factories)
    except BaseException:
        conn.send(("failed", traceback.format_exc()))
        return
    conn.send(("ready", engine.max_model_len))
    while True:
        try:
            message = conn.recv()
        except EOFError:
            break
        if message[0] == "stop":
            break
        try:
            conn.send(("done", engine.run(message[1], message[2])))
        except BaseException:
            conn.send(("failed", traceback.format_exc()))
            break
    engine.close()


class ReplicaPool:
    """`size` engine replicas in spawned worker processes; a chunk is split between them by cost.

    A replica that dies or stays silent past `timeout` stops the run with a clear error (vLLM data
    parallelism is known to hang, lm-eval #1734/#2904): finished chunks are already saved.
    """

    def __init__(self, size: int, kwargs: dict[str, Any], *, gpus_per_replica: int, timeout: float,
                 startup_timeout: float = 3600.0, factories: dict[str, Any] | None = None,
                 pin_devices: bool = True) -> None:
        context = multiprocessing.get_context("spawn")
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        self.timeout = timeout
        self.broken: str | None = None
        self.workers = []
        for rank in range(size):
            devices = replica_devices(rank, gpus_per_replica, visible) if pin_devices else None
            parent, child = context.Pipe()
            # Not daemonic: a replica's vLLM engine starts processes of its own, which daemons may not.
            process = context.Process(target=_replica_main, args=(child, devices, kwargs, factories or {}),
                                      name=f"vllm-replica-{rank}", daemon=False)
            process.start()
            child.close()
            self.workers.append((process, parent))
        # Stop the replicas if the run ends without close() (they wait on their pipe; multiprocessing
        # joins non-daemonic children at exit, which would otherwise wait forever).
        atexit.register(self.close)
        lengths = [self._receive(rank, startup_timeout, "start") for rank in range(size)]
        self.max_model_len: int | None = min((n for n in lengths if n), default=None)

    def _fail(self, message: str) -> BackendFatalError:
        self.broken = message
        self.close()
        return BackendFatalError(message)

    def _receive(self, rank: int, timeout: float, what: str) -> Any:
        process, conn = self.workers[rank]
        deadline = time.monotonic() + timeout
        while not conn.poll(1.0):
            if not process.is_alive():
                raise self._fail(f"vllm replica {rank} died (exit code {process.exitcode}) during {what}")
            if time.monotonic() > deadline:
                raise self._fail(f"vllm replica {rank} gave no answer within {timeout:g}s during {what}; all replicas stopped")
        try:
            kind, value = conn.recv()
        except EOFError:
            process.join(timeout=5)
            raise self._fail(f"vllm replica {rank} died (exit code {process.exitcode}) during {what}") from None
        if kind == "failed":
            raise self._fail(f"vllm replica {rank} failed during {what}:\n{value}")
        return value

    def run(self, payloads: Sequence[dict[str, Any]], options: dict[str, Any]) -> list[dict[str, Any]]:
        if self.broken:
            raise BackendFatalError(f"vllm replicas stopped earlier: {self.broken.splitlines()[0]}")
        shares = split_balanced([p["cost"] for p in payloads], len(self.workers))
        busy = [rank for rank, share in enumerate(shares) if share]
        for rank in busy:
            self.workers[rank][1].send(("run", [payloads[i] for i in shares[rank]], options))
        results: list[dict[str, Any] | None] = [None] * len(payloads)
        for rank in busy:
            answer = self._receive(rank, self.timeout, "generation")
            for i, result in zip(shares[rank], answer, strict=True):
                results[i] = result
        return results  # type: ignore[return-value]

    def close(self) -> None:
        for process, conn in self.workers:
            if process.is_alive():
                try:
                    conn.send(("stop",))
                except (OSError, BrokenPipeError):
                    pass
        # Healthy replicas get time to shut their engines down; after a failure a hung one would
        # never read "stop", so it is terminated at once.
        grace = 1.0 if self.broken else 60.0
        for process, conn in self.workers:
            process.join(timeout=grace)
            if process.is_alive():
                process.terminate()
                process.join(timeout=10)
            conn.close()
        self.workers = []
        atexit.unregister(self.close)


# --- the backend -----------------------------------------------------------------------------------

@register_model("vllm")
class VLLMModel(Model):
    def __init__(self, settings: VLLMSettings, *, llm_factory: str = "vllm:LLM",
                 sampling_factory: str = "vllm:SamplingParams", pin_devices: bool = True) -> None:
        self.settings = settings
        self.context_length = settings.max_model_len
        self.max_images = settings.max_images
        self.max_pixels = settings.max_pixels  # the runner re-counts vision tokens under this cap
        self.engine_seconds: float | None = None
        self._factories = {"llm_factory": llm_factory, "sampling_factory": sampling_factory,
                           "decode_workers": settings.decode_workers}
        self._pin_devices = pin_devices
        self._engine: LocalEngine | ReplicaPool | None = None
        self._startup_error: str | None = None
        self._images_seen = 0
        self.image_limit: int | None = None  # limit_mm_per_prompt of the built engine

    @classmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> VLLMModel:
        # batch_size/max_batch_tokens are for padded backends; vLLM schedules its own batches.
        settings = settings_from_args(VLLMSettings, args, "vllm", aliases=ARG_ALIASES)
        if importlib.util.find_spec("vllm") is None:
            raise ImportError("the vllm backend needs vLLM 0.33 and a CUDA GPU: pip install 'mmlongeval[vllm]'")
        return cls(settings)

    def identity(self) -> dict[str, Any]:
        s = self.settings
        template = None
        if s.chat_template is not None:
            text = s.chat_template
            if os.path.isfile(text):
                with open(text, encoding="utf-8") as f:
                    text = f.read()
            template = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        try:
            from importlib.metadata import version

            vllm_version = version("vllm")
        except Exception:
            vllm_version = None
        return {
            "model": "vllm", "pretrained": s.pretrained, "revision": s.revision, "tokenizer": s.tokenizer,
            "dtype": s.dtype, "mm_processor_kwargs": s.processor_kwargs() or None, "chat_template_sha": template,
            "chat_template_content_format": s.chat_template_content_format, "generation_config": s.generation_config,
            "hf_overrides": json.loads(s.hf_overrides) if s.hf_overrides else None, "vllm_version": vllm_version,
        }

    def observe(self, requests: Sequence[Request]) -> None:
        """Note the requests' image counts, so the engine's `limit_mm_per_prompt` covers them all."""
        if requests:
            self.observe_max_images(max(r.num_images for r in requests))

    def observe_max_images(self, count: int) -> None:
        """The largest image count of any request of the run (e.g. from the rows' `num_images`), told
        before the first `generate`: the engine is built once, with a limit that fits every task."""
        if self._engine is not None and count > (self.image_limit or 0):
            log.warning("vllm: the engine was built with limit_mm_per_prompt=%s; requests with %d images will be "
                        "recorded as too_many_images (pass max_images=%d in --model_args)", self.image_limit, count, count)
        self._images_seen = max(self._images_seen, count)

    def batches(self, requests: Sequence[Request]) -> Iterator[list[Request]]:
        self.observe(requests)
        return token_budget_batches(requests, max_batch_tokens=self.settings.chunk_tokens,
                                    max_batch_size=self.settings.chunk_size, padded=False, sort_long_first=False,
                                    cost=lambda r: r.token_count)

    def _ensure_engine(self) -> LocalEngine | ReplicaPool:
        if self._startup_error is not None:
            # Never load the model again for every remaining batch (or every request, when the
            # runner retries a failed batch one request at a time).
            raise BackendFatalError(f"the vllm engine could not start: {self._startup_error}")
        if self._engine is None:
            cap = self.settings.max_images
            limit = max(1, self._images_seen)
            self.image_limit = min(limit, cap) if cap is not None else limit
            kwargs = engine_kwargs(self.settings, self.image_limit)
            log.info("vllm: building the engine with %s", {k: v for k, v in kwargs.items() if k != "hf_overrides"})
            started = time.perf_counter()
            try:
                if self.settings.data_parallel_size > 1:
                    self._engine = ReplicaPool(
                        self.settings.data_parallel_size, kwargs,
                        gpus_per_replica=self.settings.tensor_parallel_size * self.settings.pipeline_parallel_size,
                        timeout=self.settings.replica_timeout, factories=self._factories, pin_devices=self._pin_devices)
                else:
                    self._engine = LocalEngine(kwargs, **self._factories)
            except Exception as err:
                self._startup_error = f"{type(err).__name__}: {err}"
                raise BackendFatalError(f"the vllm engine could not start: {self._startup_error}") from err
            if self._engine.max_model_len:
                self.context_length = int(self._engine.max_model_len)
            self.engine_seconds = time.perf_counter() - started
            # The runner times the first task with the engine's start-up in it; say how long that took
            # (scripts/gpu_check.sh reads this line to report generation throughput alone).
            print(f"harness: vllm engine ready in {self.engine_seconds:.1f} s (limit_mm_per_prompt image="
                  f"{self.image_limit}, max_model_len={self.context_length}, replicas={self.settings.data_parallel_size})",
                  file=sys.stderr, flush=True)
        return self._engine

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        if not requests:
            return []
        self.observe(requests)
        engine = self._ensure_engine()
        assert self.image_limit is not None
        max_len = self.context_length
        if max_len is None:
            raise RuntimeError("vllm backend: the engine reported no max_model_len; pass max_model_len=N in --model_args")
        responses: list[Response | None] = [None] * len(requests)
        groups: dict[bool, list[tuple[int, dict[str, Any]]]] = {False: [], True: []}
        for i, request in enumerate(requests):
            reason = screen_request(request, self.settings, max_model_len=max_len, image_limit=self.image_limit)
            if reason is not None:
                responses[i] = Response(text=None, error=reason)
                continue
            try:
                payload = request_payload(request, self.settings.seed)
            except Exception as err:  # an image that cannot be read fails its sample only
                responses[i] = Response(text=None, error=f"invalid_input: {type(err).__name__}: {err}")
                continue
            groups[bool(request.assistant_prefix)].append((i, payload))
        for continue_final, members in groups.items():
            if not members:
                continue
            options = {
                "use_tqdm": self.settings.use_tqdm,
                "chat_template_content_format": self.settings.chat_template_content_format,
                "add_generation_prompt": not continue_final,
                "continue_final_message": continue_final,
            }
            results = engine.run([p for _, p in members], options)
            for (i, _), result in zip(members, results, strict=True):
                responses[i] = result_response(result)
        return responses  # type: ignore[return-value]

    def close(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.close()
