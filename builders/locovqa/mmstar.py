"""MMStar (Chen et al., 2024) in its released formats, images embedded:

- the Hub release's Parquet (`Lin-Chen/MMStar`, `mmstar.parquet`): `index`, `question` (the options written
  into it: "Options: A: ..., B: ..."), `image` ({bytes, path}), `answer` (a letter), `category`,
  `l2_category`, `meta_info` ({source, split, image_path});
- VLMEvalKit's `MMStar.tsv`: `index`, `question`, `answer`, `image` (base64), optional option columns `A`..`F`,
  the source benchmark in `bench` (or `source`).

The source benchmark is folded to one of the paper's six subsets (spec §1.3): seedbench, mmbench, mmmu,
mathvista, scienceqa, ai2d.
"""

from __future__ import annotations

import base64
import binascii
import csv
import io
import re
import sys
from pathlib import Path
from typing import Any

from builders.core.errors import BuildError
from builders.core.release_bounds import check_size, open_release_file
from builders.locovqa.bounds import MMSTAR_FILE
from builders.locovqa.images import SourceImage, bytes_image
from builders.locovqa.okvqa import VqaItem

SUBSETS = ("seedbench", "mmbench", "mmmu", "mathvista", "scienceqa", "ai2d")
LETTERS = "ABCDEF"
_OPTION = re.compile(r"(?:^|[\s,])([A-F]):\s*")  # the release writes "Options: A: ..., B: ..."


def subset_of(source: str) -> str:
    """`SEEDBench_IMG` -> `seedbench`, `MathVista` -> `mathvista`; an unknown source keeps its folded name."""
    folded = re.sub(r"[^a-z0-9]", "", source.lower())
    return next((name for name in SUBSETS if folded.startswith(name)), folded)


def options_in_question(question: str) -> list[str]:
    """The option texts written after "Options:" in an MMStar question, in letter order (A, B, ...)."""
    head, sep, tail = question.rpartition("Options:")
    if not sep:
        return []
    marks = [m for m in _OPTION.finditer(tail)]
    letters = [m.group(1) for m in marks]
    if letters != list(LETTERS[: len(letters)]):
        return []
    texts = []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(tail)
        texts.append(tail[mark.end() : end].strip().rstrip(",").strip())
    return texts


class MmstarSource:
    name = "mmstar"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise BuildError(f"MMStar file not found: {self.path} (expected mmstar.parquet or MMStar.tsv)")
        records = self._read_tsv() if self.path.suffix.lower() == ".tsv" else self._read_parquet()
        self._images: dict[str, bytes] = {}
        items = []
        first: dict[str, str] = {}  # image key -> the record that gave it (its file and line or row)
        for where, rec in records:
            item_id = str(rec["index"]).strip()
            if not item_id:
                raise BuildError(f"{where}: no index")
            key = f"mmstar/{item_id}"
            if key in first:
                raise BuildError(
                    f"MMStar index {item_id[:40]!r} twice, the records {first[key]} and {where}; an index is one question"
                )
            first[key] = where
            answer = str(rec["answer"]).strip().upper()
            choices = rec["choices"] or options_in_question(str(rec["question"]))
            # Options that cannot be read apart leave `choices` empty: the scorer then reads any letter A-F.
            if len(answer) != 1 or answer not in (LETTERS[: len(choices)] if choices else LETTERS):
                raise BuildError(
                    f"{where}: answer {rec['answer']!r} is not the letter of one of its {len(choices) or 'A-F'} options"
                )
            if not rec["image"]:
                raise BuildError(f"{where}: no image bytes (question {item_id})")
            self._images[key] = rec["image"]
            items.append(
                VqaItem(
                    item_id, key, str(rec["question"]), answer, (answer,), tuple(choices), subset_of(str(rec["source"]))
                )
            )
        if not items:
            raise BuildError(f"{self.path} holds no MMStar questions")
        self.items = sorted(items, key=lambda item: (len(item.item_id), item.item_id))

    def _read_parquet(self) -> list[tuple[str, dict[str, Any]]]:
        import pyarrow.parquet as pq

        try:
            with open_release_file(self.path) as handle:
                check_size(handle, MMSTAR_FILE, str(self.path))
                table = pq.read_table(handle)
        except BuildError:
            raise
        except Exception as exc:
            raise BuildError(f"{self.path} is not a readable Parquet file: {exc}") from None
        needed = {"index", "question", "image", "answer"}
        if not needed <= set(table.column_names):
            raise BuildError(f"{self.path}: MMStar Parquet needs columns {sorted(needed)}, has {table.column_names}")
        out = []
        for i, row in enumerate(table.to_pylist()):
            image = row["image"]
            data = image.get("bytes") if isinstance(image, dict) else image
            meta = row.get("meta_info") or {}
            source = meta.get("source", "") if isinstance(meta, dict) else ""
            out.append(
                (
                    f"{self.path} row {i}",
                    {
                        "index": row["index"],
                        "question": row["question"],
                        "answer": row["answer"],
                        "image": data,
                        "source": source,
                        "choices": [],
                    },
                )
            )
        return out

    def _read_tsv(self) -> list[tuple[str, dict[str, Any]]]:
        try:
            return self._tsv_records()
        except UnicodeDecodeError as exc:
            raise BuildError(
                f"{self.path}: not UTF-8 text ({exc.reason}); VLMEvalKit writes MMStar.tsv in UTF-8"
            ) from None

    def _tsv_records(self) -> list[tuple[str, dict[str, Any]]]:
        csv.field_size_limit(sys.maxsize)  # base64 images are far longer than csv's default field limit
        out = []
        with io.TextIOWrapper(open_release_file(self.path), encoding="utf-8", newline="") as handle:
            check_size(handle.buffer, MMSTAR_FILE, str(self.path))  # before csv reads a field of any length
            reader = csv.DictReader(handle, delimiter="\t")
            needed = {"index", "question", "image", "answer"}
            if not needed <= set(reader.fieldnames or []):
                raise BuildError(f"{self.path}: MMStar TSV needs columns {sorted(needed)}, has {reader.fieldnames}")
            for number, row in enumerate(reader, start=2):
                try:
                    data = base64.b64decode(row["image"], validate=True)
                except (binascii.Error, ValueError):
                    raise BuildError(f"{self.path}:{number}: the image column is not base64") from None
                choices = [row[letter] for letter in LETTERS if (row.get(letter) or "").strip()]
                out.append(
                    (
                        f"{self.path}:{number}",
                        {
                            "index": row["index"],
                            "question": row["question"],
                            "answer": row["answer"],
                            "image": data,
                            "choices": choices,
                            "source": row.get("bench") or row.get("source") or "",
                        },
                    )
                )
        return out

    @property
    def pool(self) -> list[str]:
        return sorted(self._images)

    def image(self, key: str) -> SourceImage:
        if key not in self._images:
            raise BuildError(f"image {key} is not in {self.path}")
        return bytes_image(key, self._images[key])

    def fingerprint_parts(self) -> list[Path]:
        return [self.path]
