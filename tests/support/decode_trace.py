"""When a run decodes its images: every PIL decode, set against the batch the runner is sending.

`traced(backend_class)` records, while it is open, each decode of an image (`ImageFile.load`, the call that
turns encoded bytes into pixels, a JPEG's reduced draft decode included) with the sha256 of the bytes it decodes,
and each batch the backend hands the runner (its `batches`, as the batch is given out), with the sha256 of every
image its requests hold. `DecodeTrace.misplaced()` names every decode that did not happen while the batch holding
its image was the one being sent: before the first batch (reading, screening, building requests) or while
another batch was; `DecodeTrace.extra_decodes()` names every image of a batch decoded more times than the batch's
requests hold it (each image once per request). Used by the regression tests and by `bench/decode_1m.py` on 1M rows.
"""

from __future__ import annotations

import hashlib
import io
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from PIL import ImageFile


@dataclass
class DecodeTrace:
    started: float = field(default_factory=time.perf_counter)
    # (seconds since start, batch index or None before the first batch, sha256 of the decoded bytes)
    decodes: list[tuple[float, int | None, str]] = field(default_factory=list)
    batches: list[tuple[float, frozenset[str]]] = field(default_factory=list)  # (seconds, its images' sha256)
    held: list[Counter[str]] = field(
        default_factory=list
    )  # per batch: how many of its requests' images are each sha256

    def batch(self, images: Sequence[str]) -> None:
        self.batches.append((time.perf_counter() - self.started, frozenset(images)))
        self.held.append(Counter(images))

    def decode(self, sha256: str) -> None:
        self.decodes.append(
            (time.perf_counter() - self.started, len(self.batches) - 1 if self.batches else None, sha256)
        )

    def misplaced(self) -> list[str]:
        """Every decode outside the batch that sends its image, described."""
        out = []
        for seconds, index, sha in self.decodes:
            if index is None:
                out.append(f"{sha[:12]} decoded at {seconds:.3f} s, before the first batch")
            elif sha not in self.batches[index][1]:
                out.append(f"{sha[:12]} decoded at {seconds:.3f} s, while batch {index} (which does not hold it) ran")
        return out

    def extra_decodes(self) -> list[str]:
        """Every image decoded more often in a batch than that batch's requests hold it, described."""
        out = []
        for index, held in enumerate(self.held):
            decoded = Counter(sha for _, i, sha in self.decodes if i == index)
            out.extend(
                f"{sha[:12]} decoded {count} times in batch {index}, which holds it {held[sha]} time(s)"
                for sha, count in decoded.items()
                if count > held[sha]
            )
        return out

    def per_batch(self) -> list[dict[str, Any]]:
        """Per batch: when it was handed out, how many decodes it ran, and the first and last of them (seconds)."""
        rows = []
        for index, (start, images) in enumerate(self.batches):
            times = [t for t, i, _ in self.decodes if i == index]
            rows.append(
                {
                    "start": start,
                    "images": len(images),
                    "decodes": len(times),
                    "first": min(times, default=None),
                    "last": max(times, default=None),
                }
            )
        return rows


def _bytes_of(image: Any) -> bytes | None:
    fp = getattr(image, "fp", None)
    return fp.getvalue() if isinstance(fp, io.BytesIO) else None


@contextmanager
def traced(backend: type) -> Iterator[DecodeTrace]:
    """Trace decodes and `backend`'s batches (its class's `batches`, which the runner iterates) while open."""
    trace = DecodeTrace()
    load, batches = ImageFile.ImageFile.load, backend.batches

    def traced_load(image: Any, *args: Any, **kwargs: Any) -> Any:
        data = _bytes_of(image) if getattr(image, "tile", None) else None  # `tile` empties once decoded
        if data is not None:
            trace.decode(hashlib.sha256(data).hexdigest())
        return load(image, *args, **kwargs)

    def traced_batches(model: Any, requests: Sequence[Any]) -> Iterator[list[Any]]:
        for batch in batches(model, requests):
            trace.batch([ref.sha256 for request in batch for ref in request.images])
            yield batch

    ImageFile.ImageFile.load = traced_load  # type: ignore[method-assign]
    backend.batches = traced_batches  # type: ignore[method-assign]
    try:
        yield trace
    finally:
        ImageFile.ImageFile.load = load  # type: ignore[method-assign]
        backend.batches = batches  # type: ignore[method-assign]
