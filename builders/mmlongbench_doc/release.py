"""Reading the release: the questions (`samples.json`, or the Hub's Parquet conversion of it) and the PDFs they name.

The code repo (mayubo2333/MMLongBench-Doc) keeps them as `data/samples.json` and `data/documents/<doc_id>`; the Hub
dataset (yubo2333/MMLongBench-Doc) as `documents/<doc_id>` beside its questions (`load_dataset(".../data")`). Each
question is `{doc_id, doc_type, question, answer, evidence_pages, evidence_sources, answer_format}`, the two evidence
fields Python literals in strings ("[5]", "['Chart']"), which the official `show_results` reads with `eval`; here
with `ast.literal_eval`, which reads every literal `eval` does and runs no code.
"""

from __future__ import annotations

import ast
import io
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from builders.core import contract, release_json
from builders.core.errors import BuildError
from builders.core.hub_source import HubFile, HubRelease
from builders.core.release_bounds import Bound, MiB, read_file
from builders.core.release_json import parse_json
from builders.core.release_paths import ReleaseFolder, relative_name

# The questions: samples.json is ~600 KB for 1,091 questions; a PDF is at most ~30 MB in the release
# (2405.09818v1.pdf: 25,242,519 bytes at the Hub's 0a9311e).
QUESTIONS_FILE = Bound(64 * MiB, "the questions file")
DOCUMENT = Bound(512 * MiB, "a document")
DOCUMENTS = "documents"
QUESTION_NAMES = ("samples.json", "data/samples.json", "data/train-00000-of-00001.parquet")
ANSWER_FORMATS = ("Str", "Int", "Float", "List", "None")

# No commit of the dataset repo whose questions file could be read from here: the manifest records the one read.
# (Commits 94827db, 0a9311e and 5782a5b show in the Hub's file pages; which holds the paper's 1,082 questions, or the
# refined set of 09/2025, could not be told from here.)
HUB_RELEASE = HubRelease(
    "yubo2333/MMLongBench-Doc",
    "main",
    "not pinned: no commit of the dataset repo whose questions file could be read; the manifest records the one read",
)
QUESTIONS = HubFile(QUESTION_NAMES, "the questions", QUESTIONS_FILE)


class Sample(BaseModel):
    """One question of the release, its evidence fields read from their literal strings."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    doc_id: str
    doc_type: str
    question: str
    answer: str
    evidence_pages: list[int]
    evidence_sources: list[str]
    answer_format: str

    @field_validator("evidence_pages", "evidence_sources", mode="before")
    @classmethod
    def _literal(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        try:
            return ast.literal_eval(value)
        except (SyntaxError, ValueError):  # pydantic reports a ValueError with the field's name
            raise ValueError(f"{value!r:.80} is not a Python list literal") from None

    @field_validator("answer", mode="before")
    @classmethod
    def _text(cls, value: object) -> object:
        # A few answers are numbers or lists in other conversions; the official scorer reads str(gt) or the literal.
        return value if isinstance(value, str) else repr(value) if isinstance(value, list) else str(value)

    @field_validator("answer_format")
    @classmethod
    def _format(cls, value: str) -> str:
        if value not in ANSWER_FORMATS:
            raise ValueError(f"answer_format {value!r}, expected one of {', '.join(ANSWER_FORMATS)}")
        return value


def read_samples(path: Path) -> list[Sample]:
    """The questions of `path` (samples.json or its Parquet conversion), in the release's order."""
    data = read_file(path, QUESTIONS_FILE)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        records = pq.read_table(io.BytesIO(data)).to_pylist()
    else:
        records = parse_json(data, str(path))
    if not isinstance(records, list):
        raise BuildError(f"{path}: expected a JSON list of questions, got {type(records).__name__}")
    samples = []
    for i, record in enumerate(records):
        try:
            samples.append(Sample.model_validate(record))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "the record"
            raise BuildError(
                f"{path}: question {i}: {field}: {first['msg']} (got {first.get('input')!r:.80})"
            ) from None
    if not samples:
        raise BuildError(f"{path}: no questions")
    _refuse_repeats(path, samples)
    return samples


def _refuse_repeats(path: Path, samples: list[Sample]) -> None:
    """A question listed twice, the same in every field (or but for white space at the ends of its text), would be
    built as two rows and counted twice in the score: refused, naming both positions (`release_json.refuse_repeats`).
    The same question about the same document with another answer is not a repeat: the release itself asks one twice
    (`PRE_2022.09.29_NSL-politics_REPORT.pdf`, questions 504 and 505 of every commit of mayubo2333/MMLongBench-Doc's
    `data/samples.json`: "46%" from page 97's chart, and "Not answerable"), and the official scorer counts both in
    its 1,082."""
    release_json.refuse_repeats(
        str(path),
        (
            (f"question {index}", sample.model_dump(mode="json"), f"{sample.doc_id}: {sample.question!r}")
            for index, sample in enumerate(samples)
        ),
    )


class Release:
    """A folder holding the questions file and `documents/` (or the code repo's `data/`)."""

    def __init__(self, root: str | Path, *, hub: bool = False) -> None:
        root = Path(root)
        self.hub = hub  # a view of verified Hub blobs: its links lead into the Hub cache by design
        if (root / "data" / DOCUMENTS).is_dir():
            root = root / "data"
        self.root = root
        found = [root / name for name in QUESTION_NAMES if (root / name).is_file()]
        if not root.is_dir() or not found:
            raise BuildError(
                f"{root}: expected a folder holding samples.json (or {QUESTION_NAMES[-1]}) and {DOCUMENTS}/ "
                "(the code repo's data/ folder or the Hub dataset)"
            )
        self.questions = found[0]
        self.documents = ReleaseFolder(root / DOCUMENTS) if (root / DOCUMENTS).is_dir() else None

    def samples(self) -> list[Sample]:
        return read_samples(self.questions)

    def document(self, doc_id: str) -> bytes:
        """A PDF's bytes, read inside `documents/` only and within its bound."""
        where = f"{self.root}/{DOCUMENTS}/{doc_id}"
        if self.documents is None:
            raise BuildError(f"{where}: the release has no {DOCUMENTS}/ folder")
        if self.hub:  # only the files fetched and verified are there (`hub_source.fetch_release`)
            path = self.root / DOCUMENTS / relative_name(doc_id, where)
        else:
            path = self.documents.path(doc_id, where)
        if not path.is_file():
            kind = contract.kind_of_mode(path.stat().st_mode) if path.exists() else None
            said = f"is {kind}, not a regular file" if kind else "the PDF a question names is missing from the release"
            raise BuildError(f"{where}: {said}")
        return read_file(path, DOCUMENT, where)


def document_files(doc_ids: Iterable[str]) -> list[HubFile]:
    """The Hub files of these documents, in sorted order."""
    return [HubFile((f"{DOCUMENTS}/{doc_id}",), f"the document {doc_id}", DOCUMENT) for doc_id in sorted(set(doc_ids))]
