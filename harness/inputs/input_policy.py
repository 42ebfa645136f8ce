"""Per-model input settings for some tasks: what a paper changed about the inputs of one model on some of
its tasks (MMLongBench §6.3: keep only the last N images at 64K/128K, halve every image's sides, use one
tile per image). An alias carries them as rules (`harness.models.aliases`), each naming the tasks it applies
to by glob; the runner applies a task's policy to each request it builds, before the screen, so the
screen, the cache, the journal and the backend all see the request the model is given. The results
record every policy a run applied (`config.input_policies`).

- `keep_last_images: N`: the earliest images of a prompt beyond the last N are dropped with their places in
  the text, which is otherwise untouched (the official `truncate_images`).
- `image_scale: s`: every image is resized to `round(s * side)` per side (LANCZOS) before the model sees it;
  its token figure is recounted at that size. The resized image is PNG-encoded (lossless); its identity in
  caches and journals is derived from the original's sha256 and the scale.
- `max_image_side: n`: an image whose longer side exceeds `n` px is resized (LANCZOS) so that side is `n` and the
  other `int(n / long * short)`, as MMLongBench's `resize_image_max_size` (Gemini's `--max_image_size 384`); smaller
  images are sent as they are. Recounted and keyed like `image_scale`.
- `processor_kwargs`: passed to the model's processor for these requests (`hf`: the processor call; `vllm`:
  `LLM.chat(mm_processor_kwargs=...)`), e.g. `{"max_patches": 1}` for one InternVL tile per image.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from builders.core.contract import image_tokens
from harness.api import ImagePart, ImageRef, Message, Request


@dataclass(frozen=True)
class InputPolicy:
    keep_last_images: int | None = None
    image_scale: float | None = None
    processor_kwargs: tuple[tuple[str, object], ...] = ()
    max_image_side: int | None = None

    def __post_init__(self) -> None:
        if self.max_image_side is not None and self.max_image_side < 1:
            raise ValueError(f"max_image_side must be at least 1, got {self.max_image_side}")
        if self.keep_last_images is not None and self.keep_last_images < 1:
            raise ValueError(f"keep_last_images must be at least 1, got {self.keep_last_images}")
        if self.image_scale is not None and not 0 < self.image_scale <= 1:
            raise ValueError(f"image_scale must be in (0, 1], got {self.image_scale}")

    @classmethod
    def of(
        cls,
        keep_last_images: int | None = None,
        image_scale: float | None = None,
        processor_kwargs: Mapping[str, object] | None = None,
        max_image_side: int | None = None,
    ) -> InputPolicy:
        return cls(keep_last_images, image_scale, tuple(sorted((processor_kwargs or {}).items())), max_image_side)

    @classmethod
    def recorded(cls, value: object) -> InputPolicy:
        """The policy a results file records (`describe`'s form, `config.input_policies.<task>`); a ValueError saying
        why where it is none (a results file may come from anyone)."""
        try:
            return cls.of(**value)  # type: ignore[arg-type]
        except (TypeError, ValueError, AttributeError) as err:
            raise ValueError(str(err)) from None

    def merged(self, other: InputPolicy) -> InputPolicy:
        """`other`'s settings over these (a later rule refines an earlier one)."""
        return InputPolicy(
            other.keep_last_images if other.keep_last_images is not None else self.keep_last_images,
            other.image_scale if other.image_scale is not None else self.image_scale,
            tuple(sorted({**dict(self.processor_kwargs), **dict(other.processor_kwargs)}.items())),
            other.max_image_side if other.max_image_side is not None else self.max_image_side,
        )

    def describe(self) -> dict[str, Any]:
        """The settings given, in declaration order (the results' `config.input_policies`)."""
        out: dict[str, Any] = {k: v for k, v in vars(self).items() if v is not None and v != ()}
        if self.processor_kwargs:
            out["processor_kwargs"] = dict(self.processor_kwargs)
        return out

    def __bool__(self) -> bool:
        return bool(self.describe())


@dataclass(frozen=True)
class TaskRule:
    """Tasks (globs over task names) and the input policy a paper used for them."""

    tasks: tuple[str, ...]
    policy: InputPolicy
    why: str = ""

    def matches(self, task: str) -> bool:
        return any(fnmatch.fnmatchcase(task, pattern) for pattern in self.tasks)


def policy_for(task: str, rules: Sequence[TaskRule]) -> InputPolicy:
    """Every matching rule's settings, later rules over earlier ones."""
    policy = InputPolicy()
    for rule in rules:
        if rule.matches(task):
            policy = policy.merged(rule.policy)
    return policy


def _scaled_png(load: Any, size: tuple[int, int]) -> bytes:
    from PIL import Image

    with Image.open(io.BytesIO(load())) as image:
        image.load()
        resized = image.convert("RGB").resize(size, Image.Resampling.LANCZOS)
    out = io.BytesIO()
    resized.save(out, format="PNG")
    return out.getvalue()


def _resized(ref: ImageRef, size: tuple[int, int], key: str) -> ImageRef:
    sha = hashlib.sha256(f"{ref.sha256}|{key}|lanczos|png".encode()).hexdigest()
    return ImageRef(sha, partial(_scaled_png, ref.load, size), size[0], size[1])


def _known_size(ref: ImageRef, what: str) -> tuple[int, int]:
    if ref.width is None or ref.height is None:
        raise ValueError(f"image {ref.sha256[:12]}: its size is unknown, so it cannot be {what}")
    return ref.width, ref.height


def _scaled(ref: ImageRef, scale: float) -> ImageRef:
    width, height = _known_size(ref, f"scaled by {scale}")
    return _resized(ref, (max(1, round(width * scale)), max(1, round(height * scale))), f"scale={scale}")


def _fitted(ref: ImageRef, side: int) -> ImageRef:
    """The image with its longer side at most `side` (MMLongBench's `resize_image_max_size`)."""
    width, height = _known_size(ref, f"fitted within {side} px")
    if width <= side and height <= side:
        return ref
    if width > height:
        size = (side, max(1, min(int(side / width * height), side)))
    else:
        size = (max(1, min(int(side / height * width), side)), side)
    return _resized(ref, size, f"max_side={side}")


def apply_policy(request: Request, policy: InputPolicy) -> Request:
    """The request as the policy has the model see it (the same object when the policy changes nothing)."""
    if not policy:
        return request
    messages = list(request.messages)
    tokens = list(request.image_tokens)
    if policy.keep_last_images is not None and len(tokens) > policy.keep_last_images:
        drop = len(tokens) - policy.keep_last_images
        seen = 0
        kept_messages = []
        for message in messages:
            parts = []
            for part in message.content:
                if isinstance(part, ImagePart):
                    seen += 1
                    if seen <= drop:
                        continue
                parts.append(part)
            kept_messages.append(Message(message.role, tuple(parts)))
        messages = kept_messages
        tokens = tokens[drop:]
    resizes = []
    if policy.image_scale is not None:
        resizes.append(partial(_scaled, scale=policy.image_scale))
    if policy.max_image_side is not None:
        resizes.append(partial(_fitted, side=policy.max_image_side))
    for resize in resizes:
        messages = [
            Message(m.role, tuple(ImagePart(resize(p.image)) if isinstance(p, ImagePart) else p for p in m.content))
            for m in messages
        ]
    if resizes:
        refs = [p.image for m in messages for p in m.content if isinstance(p, ImagePart)]
        tokens = [
            image_tokens(r.width, r.height) if r.width and r.height else t for r, t in zip(refs, tokens, strict=True)
        ]
    return replace(
        request,
        messages=tuple(messages),
        sent_messages=None,  # round-tripped afterwards, if at all (the runner)
        round_trip=None,
        image_tokens=tuple(tokens),
        processor_kwargs=policy.processor_kwargs or request.processor_kwargs,
    )


@dataclass
class RunPolicies:
    """The policies of one run: task name -> policy (absent: none)."""

    by_task: dict[str, InputPolicy] = field(default_factory=dict)

    def __call__(self, request: Request) -> Request:
        policy = self.by_task.get(request.task)
        return apply_policy(request, policy) if policy else request

    def describe(self) -> dict[str, dict[str, Any]]:
        return {task: policy.describe() for task, policy in sorted(self.by_task.items()) if policy}
