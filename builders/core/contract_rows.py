"""The contract's columns of a benchmark's rows, declared and filled the same way for every benchmark.

A benchmark lays out its columns with `row_features`, placing the contract's blocks among its own, and writes each
row through a `RowWriter` (`BenchmarkBuild.rows`): it gives its own columns (with `id` and `prompt`) and the images
the row shows, in prompt order; the writer fills `images` or, with shared storage, puts them in the image table,
and fills `image_sha256`, `image_sizes`, `num_images` and the token figures (`text_tokens` of the prompt less its
placeholders, or of `counted_text`; `image_tokens` under `contract.TOKEN_RULE`).

    with self.rows(build, config) as writer:
        for ...:
            writer.write({"id": ..., "prompt": ..., "answer": ...}, images, paths)
        build.add_config(writer.close())
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from datasets import Features, Value

from builders.core import contract
from builders.core.dataset_build import DatasetBuild
from builders.core.images import EncodedImage
from builders.core.parquet_writer import ConfigResult, ShardedParquetWriter
from builders.core.tokens import TextTokenCounter

PROMPT = "prompt"  # the user message; `contract.IMAGE_PLACEHOLDER` marks each image in order
# The contract's columns in blocks, each placed where a benchmark's layout wants it (`images` only embedded).
IMAGE_COLUMNS = (contract.IMAGES, contract.IMAGE_SHA256, contract.IMAGE_SIZES, contract.NUM_IMAGES)
PROMPT_COLUMN = (PROMPT,)
TOKEN_COLUMNS = (contract.TEXT_TOKENS, contract.IMAGE_TOKENS)


def row_features(image_storage: str, *parts: Mapping[str, object] | tuple[str, ...]) -> Features:
    """A benchmark's columns in order: `id`, then each part, its own columns (a mapping of features) or one of the
    contract's blocks (`IMAGE_COLUMNS`, `PROMPT_COLUMN`, `TOKEN_COLUMNS`)."""
    known = {**contract.row_features(image_storage), PROMPT: Value("string")}
    columns: dict[str, Any] = {contract.ID: known[contract.ID]}
    for part in parts:
        if isinstance(part, tuple):
            columns.update((name, known[name]) for name in part if name in known)
        else:
            columns.update(part)
    return Features(columns)


@dataclass(frozen=True)
class KeptImage:
    """An image a row shows by reference: the build already holds its bytes (`DatasetBuild.keep_image`)."""

    sha256: str
    width: int
    height: int


@lru_cache(maxsize=65536)
def image_tokens(width: int, height: int) -> int:
    # Rows name an image hundreds of times (MMLongBench: every depth, every length): its tokens are worked out once.
    return contract.image_tokens(width, height)


class RowWriter:
    """One config's rows, the contract's columns filled in (see the module's doc); use as a context manager."""

    def __init__(self, build: DatasetBuild, config: str, features: Features, counter: TextTokenCounter) -> None:
        if PROMPT not in features:
            raise ValueError(f"{build.info.name} config {config}: the rows need a {PROMPT!r} column")
        self._build = build
        self._counter = counter
        self._parquet: ShardedParquetWriter = build.config_writer(config, features)
        self.embeds = build.images is None  # each row holds its images' bytes

    def __enter__(self) -> RowWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._parquet.__exit__(*exc)

    def write(
        self,
        row: dict[str, Any],
        images: Sequence[EncodedImage | KeptImage],
        paths: Sequence[str],
        *,
        counted_text: str | None = None,
        other_bytes: int = 0,
    ) -> dict[str, Any]:
        """Add `row` (the benchmark's columns, `id` and `prompt` among them) showing `images`, named `paths` where
        they are embedded; `other_bytes`: the row's size beside its embedded images, for the row-group budget.
        Returns the row as written."""
        embedded = 0
        if self.embeds:
            shown = [
                image if isinstance(image, EncodedImage) else self._build.kept_image(image.sha256) for image in images
            ]
            row[contract.IMAGES] = [
                {"bytes": image.data, "path": path} for image, path in zip(shown, paths, strict=True)
            ]
            embedded = sum(len(image.data) for image in shown)
        else:
            for image in images:
                if isinstance(image, EncodedImage):
                    self._build.keep_image(image)
        text = row[PROMPT].replace(contract.IMAGE_PLACEHOLDER, "") if counted_text is None else counted_text
        row.update(
            {
                contract.IMAGE_SHA256: [image.sha256 for image in images],
                contract.IMAGE_SIZES: [[image.width, image.height] for image in images],
                contract.NUM_IMAGES: len(images),
                contract.TEXT_TOKENS: self._counter.count(text),
                contract.IMAGE_TOKENS: [image_tokens(image.width, image.height) for image in images],
            }
        )
        self._parquet.write(row, embedded + other_bytes)
        return row

    def close(self) -> ConfigResult:
        return self._parquet.close()
