"""Response cache: a repeated run, or the same prompt met again, costs no model call.

The key is the sha256 of a canonical JSON of everything that decides an answer: the model's
`identity()`, every message (role, text, the sha256 of each image, in order), the assistant prefix
and the generation settings. Images are keyed by their content hash, never by a path or a row
number (lm-eval's multimodal cache keys ignored images, its #4005).

Storage is one SQLite file (stdlib `sqlite3`, WAL journal), committed after every `put_many`, so a
killed run keeps everything it stored. Failed responses (`error` set, not a refusal) are not stored,
so they are tried again; refusals are stored with their flag. Sampled requests without a seed are not
cached (as lm-eval): a rerun should draw again.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.api import ImagePart, Model, Request, Response, TextPart, collect
from harness.errors import OutputError
from harness.file_writing import refuse_irregular, reporting
from harness.inputs.integrity import image_problem
from harness.models.shared.front_view import FrontView
from harness.redact import dumps

CACHE_FILENAME = "cache.sqlite3"
CACHE_DIR_ENV = "MMLONGEVAL_CACHE_DIR"  # a cache shared by every output folder (keys name the model)
KEY_VERSION = 1  # bump when the key's content changes, so old entries stop matching


def input_material(request: Request) -> dict[str, Any]:
    """What the model is shown: every message (role, text, each image's sha256, in order), the assistant
    prefix and the generation settings."""
    messages = []
    for message in request.messages:
        parts: list[dict[str, str]] = []
        for part in message.content:
            if isinstance(part, TextPart):
                parts.append({"type": "text", "text": part.text})
            elif isinstance(part, ImagePart):
                parts.append({"type": "image", "sha256": part.image.sha256})
            else:  # a new part type must be keyed explicitly, never silently dropped
                raise TypeError(f"cannot key content part of type {type(part).__name__}")
        messages.append({"role": message.role, "content": parts})
    material = {
        "messages": messages,
        "assistant_prefix": request.assistant_prefix,
        "settings": request.settings.to_dict(),
    }
    if request.processor_kwargs:  # only when given: every key made before they existed stays valid
        material["processor_kwargs"] = dict(request.processor_kwargs)
    if request.text_round_trip is not None:  # the model's tokenizer re-decodes the text (`harness.inputs.round_trip`)
        material["text_round_trip"] = request.text_round_trip.rule
    return material


def _sha256(material: Mapping[str, object]) -> str:
    canonical = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def input_sha256(request: Request) -> str:
    """The hash of what the model is shown: a journalled answer is reused only for the same inputs."""
    return _sha256(input_material(request))


def request_key(identity: Mapping[str, object], request: Request) -> str:
    return _sha256({"v": KEY_VERSION, "model": dict(identity), **input_material(request)})


def is_cacheable_request(request: Request) -> bool:
    return not request.settings.sampled or request.settings.seed is not None


def is_cacheable_response(response: Response, request: Request | None = None) -> bool:
    """A refusal, or an answer the runner accepts: never an error, and never an answer longer than the request's
    settings allow (the runner refuses it as an error to try again; served from the cache it never would be)."""
    if response.refused:
        return True
    if response.error is not None or response.text is None:
        return False
    return request is None or len(response.text) <= request.settings.max_response_chars


def _encode(response: Response) -> str:
    """The stored form of a response, scrubbed of secrets (a server may quote the key in an error or a refusal)."""
    return dumps(
        {
            "text": response.text,
            "error": response.error,
            "refused": response.refused,
            "finish_reason": response.finish_reason,
            "usage": response.usage,
            "prompt_ids_sha256": response.prompt_ids_sha256,  # a replayed answer's record holds it as the first did
        },
        ensure_ascii=False,
    )


def _decode(payload: object) -> Response | None:
    """A stored response, or None for a row that is not one (damaged, or written by something else): a miss."""
    try:
        data = json.loads(payload) if isinstance(payload, str | bytes) else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    text, error, finish, usage = data.get("text"), data.get("error"), data.get("finish_reason"), data.get("usage")
    if not (
        all(v is None or isinstance(v, str) for v in (text, error, finish))
        and isinstance(data.get("refused"), bool)
        and (
            usage is None
            or (isinstance(usage, dict) and all(isinstance(v, int) and not isinstance(v, bool) for v in usage.values()))
        )
    ):
        return None
    ids = data.get("prompt_ids_sha256")
    ids = ids if isinstance(ids, str) and len(ids) == 64 and all(c in "0123456789abcdef" for c in ids) else None
    return Response(
        text=text,
        error=error,
        refused=data["refused"],
        finish_reason=finish,
        usage=dict(usage or {}),
        prompt_ids_sha256=ids,
    )


class ResponseCache:
    """A key -> Response store in one SQLite file; safe for one writer (and readers) at a time."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.damaged = 0  # rows read that were not a stored response
        with reporting(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
        # SQLite follows links and cannot be told not to from Python: a link planted at the file or at one of
        # its side files (write-ahead log, shared memory, rollback journal) is refused before it opens them, and
        # so is anything there but a regular file (a FIFO, a folder: SQLite's "disk I/O error" would say nothing).
        for suffix in ("", "-wal", "-shm", "-journal"):
            refuse_irregular(self.path.with_name(self.path.name + suffix))
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(str(self.path), timeout=60.0, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # durable against a killed process
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses ("
                " key TEXT PRIMARY KEY, response TEXT NOT NULL, created REAL NOT NULL)"
            )
            self._db.commit()
        except sqlite3.OperationalError as err:  # cannot be opened or written: a read-only or full disk
            raise OutputError(self.path, err) from None
        except sqlite3.DatabaseError as err:
            raise ValueError(
                f"{self.path}: not a usable response cache ({err}); delete it or pass another path"
            ) from None

    def get_many(self, keys: Iterable[str]) -> dict[str, Response]:
        keys = list(dict.fromkeys(keys))
        found: dict[str, Response] = {}
        with self._lock:
            for start in range(0, len(keys), 500):  # stay under SQLite's bound-parameter limit
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(f"SELECT key, response FROM responses WHERE key IN ({marks})", chunk)
                for key, payload in rows:
                    response = _decode(payload)
                    if response is None:  # asked again, and the row replaced by the new answer
                        self.damaged += 1
                        if self.damaged == 1:
                            print(
                                f"harness: {self.path}: a damaged response-cache row is a miss: its request is sent "
                                "again and the row replaced",
                                file=sys.stderr,
                            )
                        continue
                    found[key] = response
        return found

    def put_many(self, items: Iterable[tuple[str, Response]]) -> int:
        """Store responses (uncacheable ones are skipped); returns how many were stored."""
        rows = [(key, _encode(resp), time.time()) for key, resp in items if is_cacheable_response(resp)]
        if rows:
            try:
                with self._lock, self._db:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO responses (key, response, created) VALUES (?, ?, ?)", rows
                    )
            except sqlite3.OperationalError as err:  # a full disk, or one made read-only under the run
                raise OutputError(self.path, err) from None
        return len(rows)

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _images_problem(request: Request, *, decode: bool) -> str | None:
    """The error of a request whose images fail their check: `invalid_input` (final) for bytes that do not hash or
    (with `decode`) decode, a plain error (tried again on resume) for an image the disk failed to read."""
    for position, image in enumerate(request.images, start=1):
        try:
            problem = image_problem(image, position, decode=decode)
        except OSError as err:
            return f"error: image {position} could not be read ({err.strerror or err}); tried again on resume"
        if problem:
            return f"invalid_input: {problem}"
    return None


class CachingModel(FrontView):
    """Wraps a backend: cached responses come from the cache, only misses reach the model.

    The runner uses it where it would use the model (`batches`, `generate`, `identity`, `close`).
    `model_calls` / `requests_sent` / `cache_hits` count what happened, so a test (or the results
    JSON) can show that a rerun made no model call.
    """

    def __init__(self, model: Model, cache: ResponseCache) -> None:
        self.front = model  # every attribute the runner reads is the backend's (`FrontView`)
        self.cache = cache
        self.name = model.name  # the backend's registered name, for output folders and logs
        self.model_calls = 0
        self.requests_sent = 0
        self.cache_hits = 0
        self._identity = model.identity()

    @property
    def model(self) -> Model:
        """The backend behind the cache."""
        return self.front

    @classmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> Model:
        raise TypeError("CachingModel wraps a constructed model: CachingModel(model, cache)")

    def prepare(self, max_images: int, largest_image: tuple[int, int] | None = None) -> None:
        self.model.prepare(max_images, largest_image)

    def batches(self, requests: Sequence[Request]) -> Iterator[list[Request]]:
        return self.model.batches(requests)

    def statistics(self) -> dict[str, Any]:
        return self.model.statistics()

    def identity(self) -> dict[str, Any]:
        return self.model.identity()

    def keys(self, requests: Sequence[Request]) -> list[str | None]:
        return [request_key(self._identity, r) if is_cacheable_request(r) else None for r in requests]

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return collect(self.stream(requests), len(requests))

    def stream(self, requests: Sequence[Request]) -> Iterator[list[tuple[int, Response]]]:
        """Cached responses first, in one chunk; then the model's, each chunk cached as it arrives (so a
        failing call keeps what it did answer). Before its key is made, a cacheable request's images are
        verified (their bytes hash to the sha256 the key names, and decode, unless the backend decodes them
        itself in the batch: `ModelFacts.decodes_images`): one that fails is answered `invalid_input` at once, never
        looked up or sent."""
        decode = not self.model.facts.decodes_images
        unsound = {
            i: problem
            for i, r in enumerate(requests)
            if is_cacheable_request(r) and (problem := _images_problem(r, decode=decode))
        }
        if unsound:
            yield [(i, Response(None, error=problem)) for i, problem in unsound.items()]
        sound = [i for i in range(len(requests)) if i not in unsound]
        keys = dict(zip(sound, self.keys([requests[i] for i in sound]), strict=True))
        found = self.cache.get_many(k for k in keys.values() if k is not None)
        # A stored answer the runner would refuse (kept by an older version) is a miss: it is asked again, and replaced.
        hits = [
            (i, found[k])
            for i, k in keys.items()
            if k is not None and k in found and is_cacheable_response(found[k], requests[i])
        ]
        answered = {i for i, _ in hits}
        self.cache_hits += len(hits)
        if hits:
            yield hits
        missing = [i for i in keys if i not in answered]
        if not missing:
            return
        self.model_calls += 1
        for chunk in self.model.stream([requests[i] for i in missing]):
            mapped = [(missing[j], response) for j, response in chunk]
            self.requests_sent += len(mapped)
            self.cache.put_many(
                (key, r) for i, r in mapped if (key := keys[i]) is not None and is_cacheable_response(r, requests[i])
            )
            yield mapped

    def close(self) -> None:
        try:
            self.model.close()
        finally:
            self.cache.close()
