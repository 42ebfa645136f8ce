"""A request as its backend sent it (issue 50 item 3): rendered once, by the backend that sends it, and recorded as
sent, so that the journal, the sample log, the viewer and `--write_out` show what the model was given, not a prompt
rebuilt beside it.

`text` is the prompt as the model was given it: a chat template's rendering (`hf`, and `vllm` where it renders with
the checkpoint's processor), the chat messages a server or an engine's chat was sent as JSON (`openai`, vLLM's
`LLM.chat`), or the request's turns (a baseline, which sends nothing); images never as pixels, in the text as the
model's own marker or as `{"image": sha256}`. `images` are the request's images in prompt order: each one's content
hash, its size as sent and the processor settings it was sent with.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Required

from typing_extensions import TypedDict

from builders.core.contract import JsonValue


class RoundTripRecord(TypedDict):
    """What a task's text round trip did to one request's prompt before it was sent (`harness.inputs.round_trip`)."""

    rule: str
    changed: bool
    chars_before: int
    chars_after: int


class SentImageRecord(TypedDict):
    sha256: str
    size: list[int] | None  # [width, height] as sent; None where unknown
    processor: dict[str, JsonValue]  # the processor settings it was sent with (an input policy's, `image_detail`)


class SentRecord(TypedDict):
    """What a journal record and a sample log keep of a request as sent (`Sent.record`)."""

    text: str
    images: list[SentImageRecord]


class CacheAsked(TypedDict, total=False):
    """What a backend asked of its provider's prompt cache for one request, beside the prompt (the model is given the
    same prompt either way; `harness.models.shared.api_client.prompt_cache`): how (`cache_control` breakpoints, a
    `prompt_cache_key`, the provider's implicit cache), each marked prefix's tokens as the planner weighs them, and the
    key it was sent under."""

    how: Required[str]
    marks: list[int]
    key: str


@dataclass(frozen=True)
class SentImage:
    sha256: str
    size: tuple[int, int] | None = None
    processor: tuple[tuple[str, JsonValue], ...] = ()


@dataclass(frozen=True)
class Sent:
    """One request as sent (see the module docstring)."""

    text: str
    images: tuple[SentImage, ...] = ()

    def record(self) -> SentRecord:
        return {
            "text": self.text,
            "images": [
                {
                    "sha256": image.sha256,
                    "size": list(image.size) if image.size is not None else None,
                    "processor": dict(image.processor),
                }
                for image in self.images
            ],
        }


def sent_images(
    images: list[tuple[str, int | None, int | None]], processor: Mapping[str, object]
) -> tuple[SentImage, ...]:
    """(sha256, width, height) of each image as sent, all with the same processor settings."""
    settings = tuple(sorted((str(k), _json(v)) for k, v in processor.items()))
    return tuple(SentImage(sha, (w, h) if w and h else None, settings) for sha, w, h in images)


def _json(value: object) -> JsonValue:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def token_ids_sha256(ids: Sequence[int]) -> str:
    """The sha256 of a prompt's token ids as the model was given them, written as a JSON list (`[1, 2, 3]`): recorded
    by each backend that sees them (`prompt_ids_sha256`), equal on two backends that tokenized a request alike."""
    return hashlib.sha256(json.dumps([int(i) for i in ids], separators=(", ", ": ")).encode()).hexdigest()
