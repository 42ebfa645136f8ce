"""A task's requests: each held row rendered into what a model is sent (its prompt or chat, its images as `ImageRef`s,
its token figures, its generation settings), or the `RowProblem` that keeps it from being sent."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import jinja2

from harness.api import GenerationSettings, ImageRef, Request, TextRoundTrip
from harness.config.task_config import TaskConfig
from harness.config.yaml_loader import FunctionRef
from harness.errors import TaskConfigError, UserError
from harness.fit_context import FitContext
from harness.inputs.parquet_split import RowImage
from harness.inputs.prompts import RowError, messages_from_chat, messages_from_prompt, with_system_instruction
from harness.running.task.hook import TaskHook, TaskHookError, call_hook
from harness.running.task.rows import TaskRows

_JINJA = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)  # noqa: S701 - prompts, not HTML


@dataclass
class RowProblem:
    """A row that could not become a request; recorded as an `invalid_input` sample."""

    doc_id: int
    sample_id: str
    reason: str


class TaskRequests(TaskRows):
    """The requests of one task's rows (see the module's docstring)."""

    def __init__(
        self,
        config: TaskConfig,
        metadata: Mapping[str, object],
        hooks: dict[str, TaskHook],
        system_instruction: str | None,
    ) -> None:
        super().__init__(config, metadata, hooks)
        self.system_instruction = system_instruction  # --system_instruction: the system turn of every request

    def _render(self, key: str, value: str | FunctionRef | None, doc: Mapping[str, object]) -> str | None:
        if value is None:
            return None
        if key in self.hooks:
            return call_hook(self.hooks[key], doc, metadata=self.metadata)
        assert isinstance(value, str)
        if value in doc:
            return str(doc[value])
        if "{{" in value or "{%" in value:
            try:
                return _JINJA.from_string(value).render(**doc)
            except jinja2.TemplateError as err:
                raise TaskConfigError(f"{self.config.source}:1: task {self.name!r}: `{key}` template: {err}") from None
        return value

    def target(self, doc: Mapping[str, object]) -> str:
        return str(self._render("doc_to_target", self.config.doc_to_target, doc) or "")

    def _image_refs(self, doc_id: int, doc: Mapping[str, object]) -> list[ImageRef]:
        if "doc_to_visual" in self.hooks:
            images = self._hook_images(doc_id)
            return [
                ImageRef(hashlib.sha256(data).hexdigest(), partial(self._hook_image, doc_id, j))
                for j, data in enumerate(images)
            ]
        refs: list[ImageRef] = []
        columns = self.image_columns
        for column in columns:
            count = column.count(doc_id)
            hashes = doc.get("image_sha256")
            sizes = doc.get("image_sizes")
            hashes = hashes if isinstance(hashes, list) and len(hashes) == count and len(columns) == 1 else None
            sizes = sizes if isinstance(sizes, list) and len(sizes) == count and len(columns) == 1 else None
            for j in range(count):
                size = (sizes[j][0], sizes[j][1]) if sizes else None  # its header is checked against it, undecoded
                width, height = size or (None, None)
                if hashes:  # the row's declared hash keys caches and journals: its bytes must match it
                    refs.append(ImageRef(hashes[j], RowImage(column, doc_id, j, hashes[j], size), width, height))
                else:
                    load = RowImage(column, doc_id, j, None, size)
                    refs.append(ImageRef(hashlib.sha256(load()).hexdigest(), load, width, height))
        return refs

    def _fit_context(self, doc: Mapping[str, object], prompt: str) -> FitContext | None:
        """Where the task's `fit_context` hook says the row's context stands in `prompt`, and its length (none without
        the hook); a ValueError, the row's own refusal, where the context is not in the prompt."""
        hook = self.hooks.get("fit_context")
        if hook is None:
            return None
        found = call_hook(hook, doc, metadata=self.metadata)
        return FitContext.located(prompt, found["context"], found["length"])

    def _hook_images(self, doc_id: int) -> list[bytes]:
        assert self.docs is not None and self.data is not None
        doc = {**self.doc(doc_id), **self.image_cells(doc_id)}
        hook = self.hooks["doc_to_visual"]
        images = call_hook(hook, doc, metadata=self.metadata) or []
        out = []
        for position, image in enumerate(images):
            if isinstance(image, bytes):
                out.append(image)
            elif isinstance(image, dict) and isinstance(image.get("bytes"), bytes):
                out.append(image["bytes"])
            elif isinstance(image, dict) and isinstance(image.get("path"), str) and image["path"]:
                out.append(Path(image["path"]).read_bytes())
            elif callable(getattr(image, "save", None)):  # a PIL image: encode losslessly once
                import io

                buffer = io.BytesIO()
                try:
                    image.save(buffer, format="PNG")
                except Exception as err:  # not an image after all, or one Pillow cannot write
                    raise hook.wrong((doc,), f"returned image {position}, which cannot be saved ({err})") from None
                out.append(buffer.getvalue())
            else:
                raise hook.wrong(
                    (doc,),
                    f"returned {type(image).__name__} as image {position}, where an image is bytes, "
                    "{'bytes': ...}, {'path': ...} or a PIL image",
                )
        return out

    def _hook_image(self, doc_id: int, index: int) -> bytes:
        return self._hook_images(doc_id)[index]

    def generation_settings(
        self, overrides: Mapping[str, object] | None = None, seed: int | None = None
    ) -> GenerationSettings:
        values = dict(self.config.generation_kwargs)
        values.update(overrides or {})
        if "max_new_tokens" in values:
            values["max_gen_toks"] = values.pop("max_new_tokens")
        values["seed"] = seed
        try:
            return GenerationSettings.from_dict(values)
        except (TypeError, ValueError) as err:
            raise UserError(f"task {self.name!r}: generation settings: {err}") from None

    def build_request(self, doc_id: int, doc: dict[str, Any], settings: GenerationSettings) -> Request | RowProblem:
        sample_id = self.sample_id(doc_id, doc)
        try:
            images = self._image_refs(doc_id, doc)
            system = self._render("system_prompt", self.config.system_prompt, doc)
            fit: FitContext | None = None
            if "doc_to_messages" in self.hooks:
                chat = call_hook(self.hooks["doc_to_messages"], doc, metadata=self.metadata)
                messages = messages_from_chat(chat, images)
            else:
                text = self._render("doc_to_text", self.config.doc_to_text, doc) or ""
                messages = messages_from_prompt(text, images, system)
                fit = self._fit_context(doc, text)
            messages = with_system_instruction(messages, self.system_instruction)
        except (RowError, ValueError, KeyError, OSError) as err:
            return RowProblem(doc_id, sample_id, f"row {sample_id}: {err}")
        except TaskHookError as err:  # a hook refusing this row is its record; any other failure ends the run
            if not err.row_level:
                raise
            return RowProblem(doc_id, sample_id, f"row {sample_id}: {err.reason}")
        text_tokens = doc.get("text_tokens")
        image_tokens = doc.get("image_tokens")
        if not isinstance(image_tokens, list) or len(image_tokens) != len(images):
            image_tokens = [0] * len(images)
        return Request(
            task=self.name,
            doc_id=doc_id,
            sample_id=sample_id,
            messages=messages,
            settings=settings,
            text_tokens=int(text_tokens or 0),
            image_tokens=tuple(int(t) for t in image_tokens),
            assistant_prefix=self._render("assistant_prefix", self.config.assistant_prefix, doc) or "",
            random_answer=partial(call_hook, self.hooks["random_answer"], doc, metadata=self.metadata)
            if "random_answer" in self.hooks
            else None,
            text_round_trip=TextRoundTrip(str(self.config.text_round_trip), partial(self.hooks["text_round_trip"], doc))
            if "text_round_trip" in self.hooks
            else None,
            fit_context=fit,
        )
