"""Task-declared text round trip: prompt text re-decoded by the model's own tokenizer, as a paper's inference code
does before it sends a prompt.

MileBench's official code tokenizes every text piece of its context and decodes it again, truncated or not; with a
SentencePiece tokenizer that can change whitespace. A task that reproduces such a step names it in its YAML,
`text_round_trip: !function module.fn`, with

    fn(doc, prompt, decode_encode) -> the prompt to send

where `prompt` is the request's user turn (`<image>` per image, in order; after any truncation) and `decode_encode`
the model tokenizer's encode (no special tokens) then decode of one text (`Model.text_round_trip`). Each request
carries the rule bound to its row (`Request.text_round_trip`); the runner applies it once, as it builds the request,
where the backend has its tokenizer at hand (`hf`, `vllm`): `round_tripped` sets the request's `sent_messages`, which
the backend counts and renders (it parses no text back), and what the trip changed. The request's own messages, and
so the cache key, the journal's input hash and `harness merge`, stay the task's prompt plus the rule's name (the
round trip is a function of them and the model). The runner checks each rule on its request before anything is sent
(a prompt the rule does not know is `invalid_input`) and records per sample what the round trip changed
(`text_round_trip` in the journal and the sample log, whose prompt is the one sent). Backends without a tokenizer
(`openai`, the baselines, `--screen_only`'s limits) send the prompt as it is, and nothing is recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from harness.api import Request
from harness.inputs.prompts import messages_from_prompt, prompt_text
from harness.sent import RoundTripRecord


def user_prompt(request: Request) -> str:
    """The request's last turn, `<image>` where each image goes."""
    return prompt_text(request.messages[-1:])


def check(request: Request) -> None:
    """Raise ValueError when the request's rule does not know its prompt (a decoding that changes nothing)."""
    if request.text_round_trip is not None:
        request.text_round_trip.apply(user_prompt(request), lambda text: text)


def round_tripped(request: Request, decode_encode: Callable[[str], str] | None) -> Request:
    """The request with the messages its backend sends (`Request.sent_messages`) and the record of what its text round
    trip did (`Request.round_trip`), where it asks for one and a tokenizer is at hand; else the request itself."""
    if request.text_round_trip is None or decode_encode is None:
        return request
    prompt = user_prompt(request)
    sent = request.text_round_trip.apply(prompt, decode_encode)
    record: RoundTripRecord = {
        "rule": request.text_round_trip.rule,
        "changed": sent != prompt,
        "chars_before": len(prompt),
        "chars_after": len(sent),
    }
    messages = (
        request.messages if sent == prompt else request.messages[:-1] + messages_from_prompt(sent, request.images)
    )
    return replace(request, sent_messages=messages, round_trip=record)
