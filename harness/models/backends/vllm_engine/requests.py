"""Pure parts of the vllm backend: screening a request against the engine, the picklable payload a
replica receives, the conversation and `SamplingParams` arguments vLLM is given, and its outputs as result dicts."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from harness.api import GenerationSettings, ImagePart, Message, Request, TextPart
from harness.models.backends.vllm_engine.settings import VLLMSettings
from harness.models.facts.prompt_style import PromptStyle
from harness.models.families import style_named
from harness.models.shared import engine_calls
from harness.models.shared.answer_text import Decoder, answer_text
from harness.sent import Sent, sent_images, token_ids_sha256


def screen_request(
    request: Request, settings: VLLMSettings, *, prompt_tokens: int, max_model_len: int, image_limit: int
) -> str | None:
    """Why a request must not reach the engine (`engine_calls.screen_request`): more images than the running engine's
    `image_limit`, or its prompt, counted as vLLM counts it (`harness.models.shared.engine_count.EngineCount`), + `max_gen_toks` past
    `max_model_len`."""
    cap = settings.max_images
    why = (
        f"the model's cap max_images={cap}"
        if cap is not None and request.num_images > cap
        else f"limit_mm_per_prompt={image_limit} of the running engine (pass max_images=N in --model_args to raise it)"
    )
    return engine_calls.screen_request(
        request,
        prompt_tokens=prompt_tokens,
        context_length=max_model_len,
        cap=(image_limit, why),
        length_name="max_model_len",
    )


def sampling_kwargs(gen: GenerationSettings, default_seed: int) -> dict[str, Any]:
    """`SamplingParams` arguments: greedy unless the task samples; always an explicit max_tokens."""
    return {
        "n": 1,
        **engine_calls.greedy_or_sampled(gen),
        "max_tokens": gen.max_gen_toks,
        "stop": list(gen.until),
        "seed": gen.seed if gen.seed is not None else default_seed,
        "skip_special_tokens": True,
    }


def request_payload(
    request: Request,
    default_seed: int,
    prompt: str | None = None,
    style: PromptStyle | None = None,
    with_images: bool = True,
    sampling: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """A picklable description of one request (encoded image bytes, not pixels): what an engine
    replica needs, in-process or in a worker process; its text as the runner round-tripped it where the task asks
    (`Request.as_sent`). `prompt`: the request already rendered with the checkpoint's chat template
    (`harness.models.shared.engine_count.EngineCount.render`), which the engine then takes as it is. `style`: the system message and prefill of
    the conversation the engine renders itself (`harness.models.facts.prompt_style`). `with_images=False`: no image read (to say what would be sent).
    `sampling`: SamplingParams fields given for every request (`VLLMSettings.sampling_params`), over the request's own."""
    style = style or style_named("default")
    sent = request.as_sent
    if style.system is not None and not (sent and sent[0].role == "system"):
        sent = (Message("system", (TextPart(style.system),)), *sent)
    messages = []
    for message in sent:
        parts: list[tuple] = []
        for part in message.content:
            if isinstance(part, TextPart):
                parts.append(("text", part.text))
            elif isinstance(part, ImagePart):
                parts.append(("image", part.image.sha256, part.image.data() if with_images else b""))
            else:
                raise TypeError(f"unsupported content part {type(part).__name__}")
        messages.append({"role": message.role, "parts": parts})
    return {
        "messages": messages,
        "prefix": request.assistant_prefix if style.continues(request) else "",
        "sampling": {**sampling_kwargs(request.settings, default_seed), **(sampling or {})},
        "cost": request.token_count,
        "prompt": prompt,
    }


def payload_sent(payload: dict[str, Any], request: Request, processor: dict[str, Any]) -> Sent:
    """What the engine is given for a payload (`harness.sent`): the rendered prompt `LLM.generate` takes, or the
    conversation `LLM.chat` renders (as JSON, each image as `{"image": sha256}`), and its images with the processor
    settings they go with (the engine's, the request's over them)."""
    if payload["prompt"] is not None:
        text = payload["prompt"]
    else:
        text = json.dumps(_turns(payload, lambda sha, _: {"type": "image", "image": sha}), ensure_ascii=False)
    images = [(image.sha256, image.width, image.height) for image in request.images]
    return Sent(text, sent_images(images, processor))


def decode_image(data: bytes):
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    image.load()
    return image if image.mode == "RGB" else image.convert("RGB")


def build_conversation(payload: dict[str, Any], decode: Callable[[bytes], Any] = decode_image) -> list[dict[str, Any]]:
    """OpenAI-style messages for `LLM.chat`; images as `image_pil` parts keyed by their sha256 (vLLM's
    multimodal caches then skip hashing the pixels). An assistant prefix becomes a final assistant
    message, continued with `continue_final_message=True`."""
    return _turns(payload, lambda sha, data: {"type": "image_pil", "image_pil": decode(data), "uuid": sha})


def _turns(payload: dict[str, Any], image: Callable[[str, bytes], dict[str, Any]]) -> list[dict[str, Any]]:
    """The payload's conversation, each image part as `image(sha256, data)` makes it (an empty text left out), its
    assistant prefix a final assistant message."""
    turns = [
        {
            "role": message["role"],
            "content": [
                {"type": "text", "text": part[1]} if part[0] == "text" else image(part[1], part[2])
                for part in message["parts"]
                if part[0] != "text" or part[1]
            ],
        }
        for message in payload["messages"]
    ]
    if payload["prefix"]:
        turns.append({"role": "assistant", "content": [{"type": "text", "text": payload["prefix"]}]})
    return turns


def engine_prompt(
    payload: dict[str, Any],
    mm_processor_kwargs: dict[str, Any] | None = None,
    decode: Callable[[bytes], Any] = decode_image,
) -> dict[str, Any]:
    """`LLM.generate`'s input for a rendered payload: its prompt text and its images in prompt order. The backend
    has rendered it already, with the template `LLM.chat` would apply to the conversation (bench/RESULTS.md, the H100
    follow-up: our throughput against a bare `LLM.generate` loop on each path).

    Each image goes with its `image_sha256` as its `multi_modal_uuids` entry (as `LLM.chat` parts carry it as their
    `uuid`): the engine then hashes no pixels, and an image that recurs across rows, depths and lengths finds its
    processor-cache and prefix-cache entries under the same id (vLLM folds `mm_processor_kwargs` into the id itself)."""
    item: dict[str, Any] = {"prompt": payload["prompt"]}
    parts = [part for message in payload["messages"] for part in message["parts"] if part[0] == "image"]
    if parts:
        item["multi_modal_data"] = {"image": [decode(part[2]) for part in parts]}
        item["multi_modal_uuids"] = {"image": [part[1] for part in parts]}
    if mm_processor_kwargs:
        item["mm_processor_kwargs"] = mm_processor_kwargs
    return item


# vLLM's refusal of a prompt longer than its `max_model_len` (`InputProcessor._validate_prompt_len`)
ENGINE_TOO_LONG = re.compile(
    r"The decoder prompt \(length (\d+)\)(?: plus .*?)? is longer than the maximum model length of (\d+)"
)


# vLLM's refusal of a prompt of more images than the model takes in one (`BaseProcessingInfo.validate_num_items`)
ENGINE_TOO_MANY_IMAGES = re.compile(r"At most (\d+) image\(s\) may be provided in one prompt")


def engine_refused(err: BaseException) -> str | None:
    """A request vLLM refused for what the screen screens for, as the screen records it: its length
    (`engine_over_length`), or more images than vLLM's model of the checkpoint takes in one prompt (`too_many_images`:
    PaliGemma's one, which no `max_images` said); None for any other refusal."""
    found = ENGINE_TOO_MANY_IMAGES.search(str(err))
    if found is not None:
        return f"too_many_images: vLLM takes at most {found[1]} image(s) in one prompt of this model: vLLM refused it"
    return engine_over_length(err)


def engine_over_length(err: BaseException) -> str | None:
    """A request vLLM refused for its length, as the screen would have recorded it (its own count, said so); None for
    any other refusal. The screen counts as vLLM counts; where it counted fewer, the row is still over_length."""
    found = ENGINE_TOO_LONG.search(str(err))
    if found is None:
        return None
    tokens, limit = found.groups()
    return f"over_length: {tokens} prompt tokens (vLLM's count) > max_model_len {limit}: vLLM refused it"


def output_result(output: object, tokenizer: Decoder | None = None) -> dict[str, Any]:
    """A vLLM `RequestOutput` -> a plain dict (picklable across processes). Its answer is the text `tokenizer` (the
    engine's own) decodes from the generated ids (`answer_text`, as `hf` decodes them), not vLLM's incremental text,
    which holds back bytes that end an answer inside a character: the ids without the end-of-sequence or stop token
    that ended them (vLLM keeps it in `token_ids`, and leaves it out of its text), cut at the stop string that stopped
    them (`stop_reason`: vLLM stops at the one that completes first, where `answer_text` cuts). Without a tokenizer
    (an engine stand-in's), the engine's text."""
    completions = getattr(output, "outputs", None) or []
    prompt_ids = getattr(output, "prompt_token_ids", None)
    prompt_tokens = len(prompt_ids) if prompt_ids is not None else None
    cached = getattr(output, "num_cached_tokens", None)
    if not completions:
        return {"error": "engine_error: the engine returned no completion", "prompt_tokens": prompt_tokens}
    first = completions[0]
    finish = getattr(first, "finish_reason", None)
    result = {
        "text": engine_answer(first, tokenizer) if tokenizer is not None else first.text,
        "finish_reason": str(finish) if finish is not None else None,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": len(first.token_ids) if getattr(first, "token_ids", None) is not None else None,
        "cached_tokens": cached,
        "prompt_ids_sha256": token_ids_sha256(prompt_ids) if prompt_ids is not None else None,
    }
    if result["finish_reason"] in ("abort", "error"):
        result["error"] = f"engine_error: generation ended with finish_reason={result['finish_reason']}"
    return result


def engine_answer(completion: object, tokenizer: Decoder) -> str:
    """A `CompletionOutput`'s answer from its ids (`output_result`)."""
    ids = [int(i) for i in getattr(completion, "token_ids", None) or ()]
    stop = getattr(completion, "stop_reason", None)
    if getattr(completion, "finish_reason", None) == "stop" and not isinstance(stop, str) and ids:
        ids = ids[:-1]  # the end-of-sequence or stop token (`stop_reason` its id, or None for the checkpoint's eos)
    return answer_text(tokenizer, ids, (stop,) if isinstance(stop, str) else ())[0]
