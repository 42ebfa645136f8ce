"""A task at run time: its documents, the requests built from them, and per-sample scoring.

Documents are read without their image columns; each request's images are `ImageRef`s whose `load`
copies one image's bytes out of its Parquet row group when the batch that holds it runs.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import datasets
import jinja2

from harness.api import GenerationSettings, ImageRef, Request, TextRoundTrip
from harness.config.task_config import MetricSpec, TaskConfig
from harness.config.yaml_loader import FunctionRef
from harness.errors import TaskConfigError, UserError
from harness.inputs.data import LoadedDataset, load_task_dataset
from harness.inputs.parquet_split import SOURCE_ROW, ImageColumn, RowImage, SharedImageColumn
from harness.inputs.prompts import RowError, messages_from_chat, messages_from_prompt, with_system_instruction
from harness.running.judge import JudgeSpec
from harness.running.metrics import AGGREGATIONS, SAMPLE_METRICS
from harness.running.rows_left_out import RowsLeftOut, rows_left_out, without_all_rows
from harness.running.task_aggregation import aggregate_metrics

_JINJA = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)  # noqa: S701 - prompts, not HTML


@lru_cache(maxsize=256)
def _takes_metadata(func: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return "metadata" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def call_hook(func: Callable[..., Any], *args: Any, metadata: dict[str, Any]) -> Any:
    """Call a task hook, passing the task's metadata when the hook accepts a `metadata` argument."""
    return func(*args, metadata=metadata) if _takes_metadata(func) else func(*args)


@dataclass
class RowProblem:
    """A row that could not become a request; recorded as an `invalid_input` sample."""

    doc_id: int
    sample_id: str
    reason: str


class Task:
    def __init__(
        self, config: TaskConfig, metadata: dict[str, Any] | None = None, system_instruction: str | None = None
    ) -> None:
        self.config = config
        self.name = config.task
        self.metadata = {**config.metadata, **(metadata or {})}
        self.system_instruction = system_instruction  # --system_instruction: the system turn of every request
        self.hooks: dict[str, Callable[..., Any]] = {}
        for key in (
            "process_docs",
            "doc_to_text",
            "doc_to_messages",
            "doc_to_visual",
            "doc_to_target",
            "random_answer",
            "process_results",
            "truncation",
            "text_round_trip",
        ):
            value = getattr(config, key)
            if isinstance(value, FunctionRef):
                self.hooks[key] = value.resolve()
        self.judge: JudgeSpec | None = (
            JudgeSpec.from_config(config.judge, f"{config.source}:1: task {self.name!r}") if config.judge else None
        )
        judged = set(self.judge.metrics) if self.judge else set()
        undeclared = judged - {m.metric for m in config.metric_list}
        if undeclared:
            raise TaskConfigError(
                f"{config.source}:1: task {self.name!r}: judge metrics {sorted(undeclared)} are not in `metric_list`"
            )
        self.aggregations: dict[str, Callable[..., Any]] = {}
        for spec in config.metric_list:
            self.aggregations[spec.metric] = self._aggregation(spec)
            if "process_results" not in self.hooks and spec.metric not in set(SAMPLE_METRICS) | judged:
                raise TaskConfigError(
                    f"{config.source}:1: task {self.name!r}: metric {spec.metric!r} needs `process_results` "
                    f"(built-in sample metrics: {', '.join(SAMPLE_METRICS)})"
                )
        if not config.metric_list:
            raise TaskConfigError(f"{config.source}:1: task {self.name!r} has an empty `metric_list`")
        self.data: LoadedDataset | None = None
        self.docs: datasets.Dataset | None = None
        self.n_original = 0
        self.left_out: RowsLeftOut | None = None  # rows its metadata leaves out of a build that holds more
        self._images: list[ImageColumn | SharedImageColumn] = []
        self._hook_columns: list[ImageColumn | SharedImageColumn] | None = None
        self._doc_view: datasets.Dataset | None = None
        self._loaded_with: tuple[Path | str | None, float | None, bool] | None = None  # `load`'s arguments
        self._docs_count = 0
        self._most_images: int | None = None
        self._token_figures = False

    def _aggregation(self, spec: MetricSpec) -> Callable[..., Any]:
        if isinstance(spec.aggregation, FunctionRef):
            return spec.aggregation.resolve()
        if spec.aggregation not in AGGREGATIONS:
            raise TaskConfigError(
                f"{self.config.source}:1: task {self.name!r}: metric {spec.metric!r}: unknown aggregation "
                f"{spec.aggregation!r} (known: {', '.join(AGGREGATIONS)})"
            )
        return AGGREGATIONS[spec.aggregation]

    # ----------------------------------------------------------------------------------- data
    def load(
        self, data_dir: Path | str | None = None, limit: float | None = None, trust_unverified: bool = False
    ) -> None:
        """Load the split (verified, or with `trust_unverified` data that cannot be), apply `process_docs`, then
        `--limit` (first N docs, or a fraction)."""
        self.data = load_task_dataset(self.config, data_dir, trust_unverified)
        docs = self.data.dataset
        if "process_docs" in self.hooks:
            try:
                docs = call_hook(self.hooks["process_docs"], docs, metadata=self.metadata)
            except (ValueError, KeyError) as err:  # e.g. a --metadata value the hook rejects
                raise UserError(f"task {self.name!r}: process_docs: {err}") from None
            if not isinstance(docs, datasets.Dataset):
                raise TaskConfigError(f"{self.config.source}:1: process_docs must return a datasets.Dataset")
        self.n_original = len(docs)
        hook = self.hooks.get("process_docs")
        self.left_out = rows_left_out(hook, self.data.dataset, self.metadata, len(docs), call_hook)
        if limit is not None:
            count = int(math.ceil(len(docs) * limit)) if 0 < limit < 1 else int(limit)
            docs = docs.select(range(min(count, len(docs))))
        self.docs = docs
        self._hook_columns = None
        visual = self.config.doc_to_visual
        columns = [visual] if isinstance(visual, str) else list(visual) if isinstance(visual, list) else []
        self._images = [self.data.image_column(docs, c, self.name) for c in columns]
        hidden = set(columns) | set(self.data.image_columns) | {SOURCE_ROW}
        self._doc_view = docs.select_columns([c for c in docs.column_names if c not in hidden])
        self._loaded_with = (data_dir, limit, trust_unverified)
        self._docs_count = len(docs)
        self._most_images = self._count_most_images()
        self._token_figures = "text_tokens" in docs.column_names and "image_tokens" in docs.column_names

    def unload(self) -> None:
        """Let go of the rows, keeping what is known of them (how many, the most images of one, the data's
        description); they are read again, verified again, when next asked for. A run loads every task up front to
        check its data, then holds the rows of the task it is running only (`rows`), so that its memory does not
        grow with the rows of all its tasks."""
        if self.data is not None:
            self.data = replace(self.data, dataset=None, split=None)
        self.docs = self._doc_view = None
        self._images, self._hook_columns = [], None
        import pyarrow as pa

        pa.default_memory_pool().release_unused()  # Arrow's allocator keeps what it freed unless told

    @contextmanager
    def rows(self) -> Iterator[None]:
        """The rows for the span of the block: read again where `unload` let go of them, and let go of again after."""
        if self._doc_view is not None or self._loaded_with is None:
            yield
            return
        self._reload()
        try:
            yield
        finally:
            self.unload()

    def _reload(self) -> None:
        if self._doc_view is None and self._loaded_with is not None:
            self.load(*self._loaded_with)

    def __len__(self) -> int:
        return self._docs_count

    def doc(self, doc_id: int) -> dict[str, Any]:
        self._reload()
        assert self._doc_view is not None, "load() first"
        return self._doc_view[doc_id]

    def iter_docs(self) -> Iterator[tuple[int, dict[str, Any]]]:
        self._reload()
        assert self._doc_view is not None, "load() first"
        yield from enumerate(self._doc_view)

    @staticmethod
    def sample_id(doc_id: int, doc: dict[str, Any]) -> str:
        return str(doc.get("id", doc_id))

    # ------------------------------------------------------------------------------- prompting
    def _render(self, key: str, value: str | FunctionRef | None, doc: dict[str, Any]) -> str | None:
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

    def target(self, doc: dict[str, Any]) -> str:
        return str(self._render("doc_to_target", self.config.doc_to_target, doc) or "")

    def _image_refs(self, doc_id: int, doc: dict[str, Any]) -> list[ImageRef]:
        if "doc_to_visual" in self.hooks:
            images = self._hook_images(doc_id)
            return [
                ImageRef(hashlib.sha256(data).hexdigest(), partial(self._hook_image, doc_id, j))
                for j, data in enumerate(images)
            ]
        refs: list[ImageRef] = []
        for column in self._images:
            count = column.count(doc_id)
            hashes = doc.get("image_sha256")
            sizes = doc.get("image_sizes")
            hashes = hashes if isinstance(hashes, list) and len(hashes) == count and len(self._images) == 1 else None
            sizes = sizes if isinstance(sizes, list) and len(sizes) == count and len(self._images) == 1 else None
            for j in range(count):
                width, height = (sizes[j][0], sizes[j][1]) if sizes else (None, None)
                if hashes:  # the row's declared hash keys caches and journals: its bytes must match it
                    refs.append(ImageRef(hashes[j], RowImage(column, doc_id, j, hashes[j]), width, height))
                else:
                    load = RowImage(column, doc_id, j, None)
                    refs.append(ImageRef(hashlib.sha256(load()).hexdigest(), load, width, height))
        return refs

    def _hook_images(self, doc_id: int) -> list[bytes]:
        assert self.docs is not None and self.data is not None
        doc = {**self.doc(doc_id), **self._image_cells(doc_id)}
        images = call_hook(self.hooks["doc_to_visual"], doc, metadata=self.metadata) or []
        out = []
        for image in images:
            if isinstance(image, bytes):
                out.append(image)
            elif isinstance(image, dict) and image.get("bytes") is not None:
                out.append(image["bytes"])
            elif isinstance(image, dict) and image.get("path"):
                out.append(Path(image["path"]).read_bytes())
            else:  # a PIL image: encode losslessly once
                import io

                buffer = io.BytesIO()
                image.save(buffer, format="PNG")
                out.append(buffer.getvalue())
        return out

    def _image_cells(self, doc_id: int) -> dict[str, Any]:
        """The document's image columns as `Image(decode=False)` gives them, for a `doc_to_visual` hook."""
        assert self.docs is not None and self.data is not None
        if self._hook_columns is None:
            self._hook_columns = [self.data.image_column(self.docs, c, self.name) for c in self.data.image_columns]
        return {column.column: column.value(doc_id) for column in self._hook_columns}

    def _hook_image(self, doc_id: int, index: int) -> bytes:
        return self._hook_images(doc_id)[index]

    def generation_settings(
        self, overrides: dict[str, Any] | None = None, seed: int | None = None
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
            if "doc_to_messages" in self.hooks:
                chat = call_hook(self.hooks["doc_to_messages"], doc, metadata=self.metadata)
                messages = messages_from_chat(chat, images)
            else:
                text = self._render("doc_to_text", self.config.doc_to_text, doc) or ""
                messages = messages_from_prompt(text, images, system)
            messages = with_system_instruction(messages, self.system_instruction)
        except (RowError, ValueError, KeyError, OSError) as err:
            return RowProblem(doc_id, sample_id, f"row {sample_id}: {err}")
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
        )

    def max_num_images(self) -> int | None:
        """The largest image count of any evaluated document, without decoding an image: the rows'
        `num_images` column, else the image columns' list lengths; None when a `doc_to_visual` hook
        decides (it would have to run for every row). Counted when the rows are loaded."""
        return self._most_images if self._loaded_with is not None else None

    def _count_most_images(self) -> int | None:
        if self.docs is None or len(self.docs) == 0:
            return 0 if self.docs is not None else None
        if "num_images" in self.docs.column_names and not isinstance(self.config.doc_to_visual, FunctionRef):
            return int(max((n for n in self.docs["num_images"] if n is not None), default=0))
        if "doc_to_visual" in self.hooks:
            return None
        return max(sum(column.count(doc_id) for column in self._images) for doc_id in range(len(self.docs)))

    @property
    def has_token_figures(self) -> bool:
        """Whether rows carry the builder's token counts, so context limits can be checked."""
        return self._token_figures

    # --------------------------------------------------------------------------------- scoring
    def score(self, doc: dict[str, Any], response: str) -> dict[str, Any]:
        """The sample's metrics from `process_results` (or the built-in ones): every metric of `metric_list`
        except the judge's, which join later (`harness.running.judge`)."""
        judged = set(self.judge.metrics) if self.judge else set()
        names = [m.metric for m in self.config.metric_list if m.metric not in judged]
        if "process_results" in self.hooks:
            out = call_hook(self.hooks["process_results"], doc, [response], metadata=self.metadata)
            if not isinstance(out, dict) or set(out) != set(names):
                got = sorted(out) if isinstance(out, dict) else type(out).__name__
                raise TaskConfigError(
                    f"{self.config.source}:1: task {self.name!r}: process_results returned {got}; "
                    f"metric_list expects {sorted(names)}"
                )
            return out
        target = self.target(doc)
        return {name: SAMPLE_METRICS[name](target, response) for name in names}

    def builtin_aggregations(self) -> dict[str, str]:
        """metric -> the name of its built-in aggregation (the shape its journalled values must have)."""
        return {spec.metric: spec.aggregation for spec in self.config.metric_list if isinstance(spec.aggregation, str)}

    def aggregate(self, metric_rows: list[dict[str, Any]]) -> tuple[dict[str, float], dict[str, float], dict[str, Any]]:
        """Aggregate scored samples' metrics: (values, stderrs, breakdowns)."""
        judged = self.judge.metrics if self.judge else ()
        return aggregate_metrics(self.name, self.config.metric_list, self.aggregations, judged, metric_rows)

    def higher_is_better(self) -> dict[str, bool]:
        return {m.metric: m.higher_is_better for m in self.config.metric_list if not m.reference}

    def reference_metrics(self) -> set[str]:
        """The `metric_list` entries that are reference levels (chance), not scores (`MetricSpec.reference`)."""
        return {m.metric for m in self.config.metric_list if m.reference}

    # ----------------------------------------------------------------------------- identity
    def identity(self) -> dict[str, Any]:
        """What determines this task's scores: config (with hook sources), metadata, data."""
        config = self.config.to_dict()
        config.pop("source", None)
        config.pop("report", None)  # presentation only
        config.pop("judge", None)  # asked after generation: judging again never makes the model answer again
        if isinstance(config.get("metadata"), dict):  # `all_rows` describes the task, changes no score
            config["metadata"] = without_all_rows(config["metadata"])
        if config.get("refusals") == "exclude":  # the default, left out so that existing journals still resume
            config.pop("refusals")
        hooks = {str(ref): ref.source_hash() for ref in self.config.function_refs() if ref is not self.config.report}
        digest = hashlib.sha256(json.dumps([config, hooks], sort_keys=True, default=str).encode()).hexdigest()
        return {
            "task": self.name,
            "version": self.config.version,
            "config_sha256": digest,
            "metadata": without_all_rows(self.metadata),
            "dataset": self.data.fingerprint if self.data else None,
        }
