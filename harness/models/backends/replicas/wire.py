"""A request as it travels to a replica: its images named by where they lie in the build (`read`: the replica reads
them itself, `harness.inputs.build_images`) or carried as their encoded bytes (`ship`: through Ray's object store),
never decoded; its text round trip already applied (the driver holds the model's tokenizer); its `random_answer` only
for the backend that reads it (the random baseline), the task hook in it named by its file (`PortableCall`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from harness.api import ImagePart, ImageRef, Message, Request
from harness.config.yaml_loader import HOOK_MODULE_PREFIX, hook_in_file
from harness.inputs.build_images import BuildFiles, locate
from harness.inputs.integrity import check_image_bytes


@dataclass(frozen=True)
class ShippedImage:
    """An image's encoded bytes, carried with its batch; checked against its sha256 again where it is read."""

    data: bytes = field(repr=False)
    sha256: str

    def __call__(self) -> bytes:
        return check_image_bytes(self.data, self.sha256)


@dataclass(frozen=True)
class HookInFile:
    """A task hook the driver loaded from a task folder's file, under a module name no other process can import."""

    path: str
    name: str

    def resolve(self) -> Callable[..., Any]:
        return hook_in_file(self.path, self.name)


@dataclass(frozen=True)
class PortableCall:
    """`functools.partial(func, *args, **keywords)` with every file-loaded hook in it named by its file, so that it
    unpickles in a replica (which loads the file as the driver did)."""

    func: Any
    args: tuple[Any, ...]
    keywords: dict[str, Any]

    @classmethod
    def of(cls, call: Callable[..., Any]) -> Callable[..., Any]:
        if not isinstance(call, partial):
            return _portable(call)
        return cls(_portable(call.func), tuple(_portable(a) for a in call.args), dict(call.keywords))

    def __call__(self, *more: Any) -> Any:
        return _resolved(self.func)(*(_resolved(a) for a in self.args), *more, **self.keywords)


def _resolved(value: object) -> Any:
    return value.resolve() if isinstance(value, HookInFile) else value


def _portable(value: Any) -> Any:
    module = getattr(value, "__module__", None) if callable(value) else None
    if isinstance(module, str) and module.startswith(HOOK_MODULE_PREFIX) and module in sys.modules:
        return HookInFile(str(sys.modules[module].__file__), value.__qualname__)
    return value


@dataclass
class ImageCounts:
    """How a run's images reached its replicas (recorded in the results)."""

    read: int = 0  # named by their place in the build, read by the replica
    shipped: int = 0  # carried as bytes through Ray's object store
    shipped_bytes: int = 0
    why_shipped: dict[str, str] = field(default_factory=dict)  # build location -> why its replicas cannot read it

    def describe(self) -> dict[str, object]:
        route = (
            "replicas read the images from the verified build (its files at the same path on their nodes)"
            if not self.shipped
            else "images sent as bytes through Ray's object store"
            if not self.read
            else "replicas read the images of some builds, the others' were sent through Ray's object store"
        )
        out: dict[str, object] = {
            "route": route,
            "read_by_replicas": self.read,
            "object_store": self.shipped,
            "object_store_bytes": self.shipped_bytes,
        }
        if self.why_shipped:
            out["why_object_store"] = dict(self.why_shipped)
        return out


class Wire:
    """Turns requests into what a replica receives. `readable(files)`: whether every replica reads those build files
    (asked once per build); None where images always travel as bytes."""

    def __init__(self, keep_random_answer: bool, readable: Callable[[BuildFiles], bool] | None) -> None:
        self._keep_random_answer = keep_random_answer
        self._readable = readable
        self.counts = ImageCounts()

    def batch(self, requests: list[Request]) -> list[Request]:
        shipped: dict[str, ShippedImage] = {}  # one copy of an image the batch shows several times
        return [self._request(r, shipped) for r in requests]

    def _request(self, request: Request, shipped: dict[str, ShippedImage]) -> Request:
        messages = request.as_sent  # round-tripped by the runner where the task asks for it
        wired = tuple(
            Message(
                m.role,
                tuple(ImagePart(self._image(p.image, shipped)) if isinstance(p, ImagePart) else p for p in m.content),
            )
            for m in messages
        )
        guess = request.random_answer
        return replace(
            request,
            messages=wired,
            text_round_trip=None,
            sent_messages=None,
            random_answer=PortableCall.of(guess) if guess is not None and self._keep_random_answer else None,
        )

    def _image(self, ref: ImageRef, shipped: dict[str, ShippedImage]) -> ImageRef:
        located = locate(ref) if self._readable is not None else None
        if located is not None and self._readable is not None and self._readable(located.files):
            self.counts.read += 1
            return ImageRef(ref.sha256, located, ref.width, ref.height)
        if ref.sha256 not in shipped:
            shipped[ref.sha256] = ShippedImage(ref.data(), ref.sha256)
            self.counts.shipped_bytes += len(shipped[ref.sha256].data)
        self.counts.shipped += 1
        return ImageRef(ref.sha256, shipped[ref.sha256], ref.width, ref.height)
