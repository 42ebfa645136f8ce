"""A task's data as the run read it: each sample's request as its backend sent it, from its journal record (the text
from the journal's prompt store, `harness.running.journal.prompt_store`), and the build its results file records
(`datasets[task]`: a local folder or `hf://`), loaded through the harness's own verified path
(`harness.running.task.task.Task.load`: the manifest's hashes, `process_docs`, the rows without their images), which serves
the images and, for a record from before the request was kept, rebuilds the prompt from verified bytes. Nothing here
writes a file."""

from __future__ import annotations

import functools
import json
import threading
from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from builders.core import contract
from builders.core.contract import parse_hub_location
from harness.api import GenerationSettings, ImagePart, Request, TextPart
from harness.errors import UserError
from harness.inputs.input_policy import InputPolicy, apply_policy
from harness.inputs.integrity import hashes_not_saved
from harness.outputs.report.report_md import task_index
from harness.running.cache import input_sha256
from harness.running.journal.prompt_store import PromptTexts, prompts_name
from harness.running.task.requests import RowProblem
from harness.running.task.task import Task
from harness.view.catalog import TaskRun
from harness.view.image_store import ImageStore
from harness.view.samples.safe_files import HEADER_MOST, LINE_MOST, contained
from harness.view.samples.sample_index import axis_members
from harness.view.view_hooks_api import NO_VIEW_HOOKS


@dataclass
class Part:
    """One piece of a turn as the viewer shows it: text, or an image by its content hash."""

    kind: str  # "text" | "image"
    text: str = ""
    sha256: str = ""
    index: int = 0  # the image's place in the prompt (0-based)
    size: tuple[int, int] | None = None
    served: bool = True  # the viewer has its bytes (a verified build's, by hash): shown, else named by hash only


@dataclass
class Turn:
    role: str
    parts: list[Part] = field(default_factory=list)


@dataclass
class Prompt:
    """A sample's prompt, where it came from, and whether it is byte for byte what the model was sent."""

    turns: list[Turn]
    source: str  # what the turns were read from
    matches: bool | None  # its inputs hash to the journal's `input_sha256` (None: nothing to compare)
    gold: str | None = None
    problem: str | None = None  # why the data could not give the prompt


def sent_record(record: dict[str, Any]) -> dict[str, Any] | None:
    """The record of the request as its backend sent it (`harness.sent`): the journal's `prompt` and `sent_images`
    (a sample log's `arg_0` and `sent_images`, as JSON text); None for a record of a run from before it was kept."""
    images = record.get("sent_images")
    if isinstance(images, str):
        try:
            images = json.loads(images)
        except ValueError:
            return None
    if isinstance(record.get("prompt"), str) and isinstance(images, list):
        return {"text": record["prompt"], "images": [i for i in images if isinstance(i, dict)]}
    return None


class TaskData:
    """One task run's documents, read once, on first use, from the verified build its results file names."""

    def __init__(self, run: TaskRun, images: ImageStore, data_dir: str | None = None) -> None:
        self.run = run
        self.images = images
        self.data_dir = data_dir  # `harness view --data_dir`: where builds are looked up instead
        self._task: Task | None = None
        self._problem: str | None = None
        self._axes: dict[str, list[tuple[str, ...]]] | None = None
        self._columns: dict[str, list[Any]] = {}
        self._texts: PromptTexts | None = None  # the journal's prompt store, read on first use
        self._lock = threading.Lock()

    @property
    def config(self) -> dict[str, Any]:
        return self.run.run.get("config") or {}

    def task(self) -> Task | None:
        """The loaded task, or None (then `problem` says why)."""
        with self._lock:
            if self._task is None and self._problem is None:
                try:
                    self._task = self._load()
                except Exception as err:  # whatever keeps the data from being read is said on the page, not a 500
                    self._problem = str(err) if isinstance(err, UserError) else f"{type(err).__name__}: {err}"
            return self._task

    @property
    def problem(self) -> str | None:
        self.task()
        return self._problem

    def _load(self) -> Task:
        config = task_index(()).tasks.get(self.run.task)  # the installed tasks only: no code a results file names
        if config is None:
            raise UserError(
                f"task {self.run.task!r} is not among the installed tasks (the viewer reads no task folder a "
                "results file names, its --include_path)"
            )
        recorded = (self.run.run.get("datasets") or {}).get(self.run.task) or {}
        location = str(recorded.get("location") or "")
        data_dir: str | None = self.data_dir
        if data_dir is None and parse_hub_location(location):
            data_dir = location
        elif data_dir is None and location:
            config = replace(config, dataset_path=location)  # the very folder the run read
        elif data_dir is None:
            data_dir = self.config.get("data_dir")
        metadata = self.config.get("metadata") if isinstance(self.config.get("metadata"), dict) else {}
        task = Task(config, metadata, self.config.get("system_instruction"))
        trust = bool(self.config.get("trust_unverified_data")) or recorded.get("verification") == "unverified"
        with hashes_not_saved():  # the run's hash cache is read, not written: the viewer writes nothing
            task.load(data_dir, None, trust)
        return task

    def axes(self) -> dict[str, list[tuple[str, ...]]]:
        """The benchmark's axes (`sample_axes` / `sample_axes_of` of its declared `ViewHooks`), each a tuple of values
        per document; the image count when it declares none; nothing when the data cannot be read. Read once."""
        if self._axes is None:
            task = self.task()
            self._axes = {}
            if task is not None and task.docs is not None:
                hooks = self.run.hooks or NO_VIEW_HOOKS
                declared = hooks.sample_axes or [("images", "num_images")]
                docs = task.docs
                wanted = [column for _, column in declared if column in docs.column_names]
                columns = docs.select(wanted).to_pydict() if wanted else {}
                derive = hooks.sample_axes_of
                found = (
                    dict(derive(self.run.task, columns))
                    if callable(derive)
                    else {label: columns[column] for label, column in declared if column in columns}
                )
                self._axes = {label: [axis_members(v) for v in values] for label, values in found.items()}
        return self._axes

    def settings(self, header: dict[str, Any] | None) -> GenerationSettings:
        parts = (header or {}).get("parts")
        generation = parts.get("generation") if isinstance(parts, dict) else None
        task = self.task()
        if isinstance(generation, dict):
            with suppress(TypeError, ValueError):
                return GenerationSettings.from_dict(generation)
        assert task is not None
        return task.generation_settings(self.config.get("gen_kwargs") or {}, self.config.get("seed"))

    def prompt(self, doc_id: int, record: dict[str, Any], header: dict[str, Any] | None) -> Prompt:
        """The sample's prompt: the request as its backend sent it, from its record (its text from the journal's prompt
        store); for a record from before it was kept, rebuilt from the verified data (its images served from there),
        checked against the journal's hash of what was sent, or the journal's own copy where the task truncated it."""
        record = self._with_text(record)
        if not isinstance(record.get("prompt"), str):  # no copy in the journal: the sample log's, if any
            record = {**self._sample_log_fields(doc_id), **record}
        if record.get("store_failed") and record.get("prompt") == "":  # a log written from that store: no text either
            record = {k: v for k, v in record.items() if k != "prompt"}
        if sent_record(record) is not None:  # what the backend sent, recorded: shown as it is
            return self._as_sent(doc_id, record, header)
        logged = record.get("prompt")
        found = self._doc_of(doc_id, record)
        if isinstance(found, str):
            return self._logged(record, found) if isinstance(logged, str) else Prompt([], "", None, None, found)
        task, doc = found
        request = task.build_request(doc_id, doc, self.settings(header))
        if isinstance(request, RowProblem):
            return Prompt([], "", None, task.target(doc), request.reason)
        turns = []
        position = 0
        for message in request.messages:
            turn = Turn(message.role)
            for part in message.content:
                if isinstance(part, TextPart):
                    turn.parts.append(Part("text", part.text))
                elif isinstance(part, ImagePart):
                    self.images.register(part.image.sha256, part.image.load)
                    width, height = part.image.width, part.image.height
                    size = (width, height) if width and height else None
                    turn.parts.append(Part("image", sha256=part.image.sha256, index=position, size=size))
                    position += 1
            turns.append(turn)
        recorded = record.get("input_sha256")
        matches = None if not isinstance(recorded, str) else input_sha256(request) == recorded
        source = "rebuilt from the verified build " + str(
            self.run.run.get("datasets", {}).get(self.run.task, {}).get("location", "")
        )
        if record.get("store_failed"):
            source += " (the journal's prompt store holds this sample's text, but it fails its check: altered or cut)"
        prompt = Prompt(turns, source, matches, task.target(doc))
        if record.get("truncation") and isinstance(logged, str):  # what was sent: the truncated prompt
            cut = self._logged(record, None)
            cut.gold, cut.matches = prompt.gold, None
            cut.source = "the journal (as sent, after the task's truncation; images matched by hash)"
            return cut
        return prompt

    def _sample_log_fields(self, doc_id: int) -> dict[str, Any]:
        """The prompt, target and image hashes of `doc_id` in the task's lm-eval sample log (`--log_samples`)."""
        log = self.run.samples_log()
        if log is None:
            return {}
        start = f'{{"doc_id": {doc_id},'.encode()
        try:
            # line by line, each within its bound: a longer line is passed by
            with contract.open_regular(log) as handle:
                lines = iter(functools.partial(contract.read_line, handle, LINE_MOST), b"")
                line = next((line for line in lines if line and line.startswith(start)), None)
            entry = json.loads(line.decode("utf-8")) if line else None
        except (OSError, UnicodeDecodeError, ValueError):
            return {}
        if not isinstance(entry, dict):
            return {}
        prompt = ((entry.get("arguments") or {}).get("gen_args_0") or {}).get("arg_0")
        doc = entry.get("doc")
        doc = doc if isinstance(doc, dict) else {}
        fields = {
            "prompt": prompt,
            "sent_images": entry.get("sent_images"),
            "target": entry.get("target"),
            "image_sha256": doc.get("image_sha256"),
            "logged_in": log.name,
        }
        return {k: v for k, v in fields.items() if v is not None}

    def _with_text(self, record: dict[str, object]) -> dict[str, object]:
        """`record` with its prompt's text, read from the journal's prompt store by its `prompt_sha256`."""
        digest = record.get("prompt_sha256")
        if isinstance(record.get("prompt"), str) or not isinstance(digest, str):
            return record
        with self._lock:
            if self._texts is None:
                store = contained(self.run.root, self.run.journal.with_name(prompts_name(self.run.journal.name)))
                self._texts = PromptTexts.at(store) if store is not None else PromptTexts()
            text = self._texts.text(digest)
            failed = text is None and digest in self._texts.texts  # stored, but its chunks fail the hash or bound
        if text is None:
            return {**record, "store_failed": True} if failed else record
        return {**record, "prompt": text, "stored": True}

    def _as_sent(self, doc_id: int, record: dict[str, object], header: dict[str, object] | None) -> Prompt:
        """The request as the backend sent it (`harness.sent`), from its record: its text as it is, then its images by
        hash (served where the build, with the run's input policy, holds them). The build is read only for that and
        to say whether it still gives the inputs the record hashed: the page shows the record either way."""
        sent = sent_record(record)
        assert sent is not None
        target = record.get("target")
        gold = target if isinstance(target, str) else None
        matches, problem = None, None
        found = self._doc_of(doc_id, record)
        if isinstance(found, str):
            problem = found
        else:
            task, doc = found
            request = task.build_request(doc_id, doc, self.settings(header))
            policies = self.config.get("input_policies")
            policy = policies.get(self.run.task) if isinstance(policies, dict) else None
            try:  # the results file's policy, so anything: one the harness cannot apply is said, not a 500
                shown = request
                if isinstance(request, Request) and policy is not None:
                    shown = apply_policy(request, InputPolicy.recorded(policy))
            except ValueError as err:
                problem = f"the results file's input policy for {self.run.task} cannot be applied ({err})"
            if isinstance(request, Request) and isinstance(shown, Request) and problem is None:
                built = {image.sha256 for image in request.images}
                for image in shown.images:
                    self.images.register(image.sha256, image.load, derived=image.sha256 not in built)
                recorded = record.get("input_sha256")
                # The build, with the run's input policy, gives the inputs the journal hashed (a cut prompt is not the row's).
                if isinstance(recorded, str) and not record.get("truncation"):
                    matches = input_sha256(shown) == recorded
                gold = task.target(doc) if gold is None else gold
        text, images = sent["text"], sent["images"]
        parts = []
        for index, image in enumerate(images):
            size = image.get("size")
            sized = (int(size[0]), int(size[1])) if isinstance(size, list) and len(size) == 2 else None
            sha = str(image.get("sha256") or "")
            parts.append(Part("image", sha256=sha, index=index, size=sized, served=sha in self.images))
        # The text exactly as the model was given it (its own image markers, or an API's JSON), then its images.
        turn = Turn("sent", [Part("text", text), *parts])
        if record.get("logged_in"):
            where = f"the sample log {record['logged_in']}"
        else:
            where = "the journal's prompt store" if record.get("stored") else "the journal (--log_samples)"
        source = f"{where}: the request as the backend sent it"
        if record.get("store_failed"):
            source += " (the journal's prompt store holds it too, but its copy fails its check)"
        if record.get("truncation"):  # said, so that no verdict is not read as an unchecked one
            source += ", cut by the task's truncation rule (not the build's row, so not compared with it)"
        return Prompt([turn], source, matches, gold, problem)

    def _logged(self, record: dict[str, Any], problem: str | None) -> Prompt:
        """The journal's copy of the prompt (`--log_samples`): `<image>` markers, the images' hashes beside."""
        text = str(record.get("prompt") or "")
        hashes = [h for h in record.get("image_sha256") or [] if isinstance(h, str)]
        turn = Turn("user")
        pieces = text.split("<image>")
        for i, piece in enumerate(pieces):
            if piece:
                turn.parts.append(Part("text", piece))
            if i < len(pieces) - 1:
                sha = hashes[i] if i < len(hashes) else ""
                turn.parts.append(Part("image", sha256=sha, index=i))
        gold = record.get("target") if isinstance(record.get("target"), str) else None
        where = f"the sample log {record['logged_in']}" if record.get("logged_in") else "the journal (--log_samples)"
        return Prompt([turn], where, None, gold, problem)

    def _holding(self, doc_id: int) -> Task | None:
        """The loaded task when its data holds document `doc_id`, else None."""
        task = self.task()
        return task if task is not None and task.docs is not None and 0 <= doc_id < len(task) else None

    def _doc_of(self, doc_id: int, record: dict[str, Any]) -> tuple[Task, dict[str, Any]] | str:
        """The task and its document `doc_id` when it is the record's sample, else why the data cannot give it."""
        task = self._holding(doc_id)
        if task is None:
            return self.problem or f"document {doc_id} is not in the data"
        doc = task.doc(doc_id)
        if task.sample_id(doc_id, doc) != record.get("sample_id"):
            return (
                f"the data's document {doc_id} is {task.sample_id(doc_id, doc)!r}, not the journal's "
                f"{record.get('sample_id')!r}: the build changed since the run"
            )
        return task, doc

    def siblings(self, doc_id: int, column: str, limit: int = 24) -> list[dict[str, Any]]:
        """The other documents whose `column` holds the same value as `doc_id`'s (MMLongBench: the rows of one
        example at its other depths), at most `limit`."""
        task = self._holding(doc_id)
        if task is None or task.docs is None or column not in task.docs.column_names:
            return []
        with self._lock:
            if column not in self._columns:
                self._columns[column] = task.docs.column(column).to_pylist()
            values = self._columns[column]
        key = values[doc_id]
        return [task.doc(i) for i, value in enumerate(values) if value == key and i != doc_id][:limit]

    def doc(self, doc_id: int) -> dict[str, Any] | None:
        task = self._holding(doc_id)
        return task.doc(doc_id) if task is not None else None


def header_of(journal: Path | None) -> dict[str, Any] | None:
    """The journal's header (its first line), or None."""
    if journal is None:
        return None
    try:
        with contract.open_regular(journal) as handle:
            first = contract.read_line(handle, HEADER_MOST)  # None past the bound: no header read
        value = json.loads(first.decode("utf-8")) if first else None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or value.get("type") != "header":
        return None
    return value if isinstance(value.get("parts", {}), dict) else {**value, "parts": {}}  # untrusted: any shape
