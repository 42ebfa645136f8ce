"""`build_mmlongbench_doc`: the release's questions, each with its document's pages rendered as the official run
renders them (the first `--max-pages` pages at `--resolution` dpi), one config `test` in the release's order.

Pages recur across a document's questions (8 per document on average): stored once (`shared`) by default.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from datasets import Features, Sequence, Value

from builders.core import contract
from builders.core.benchmark_build import BenchmarkBuild, OpenedSource
from builders.core.card import FIXTURE_CARD_LICENCE, FIXTURE_LICENCE
from builders.core.contract_rows import IMAGE_COLUMNS, PROMPT_COLUMN, TOKEN_COLUMNS, row_features
from builders.core.dataset_build import BuilderInfo, DatasetBuild
from builders.core.estimate import WRITE_BYTES_PER_SECOND, BuildEstimate
from builders.core.hub_source import fetch_release, is_hub_source, parse_hub_source
from builders.core.images import EncodedImage
from builders.mmlongbench_doc.fixture import FIXTURE_VERSION, write_fixture
from builders.mmlongbench_doc.options import MMLongBenchDocOptions
from builders.mmlongbench_doc.release import HUB_RELEASE, QUESTIONS, Release, Sample, document_files
from builders.mmlongbench_doc.render import encode_page, render_pages, renderer_name

BUILDER_VERSION = "1.0.0"
CONFIG = "test"
CONFIGS = {CONFIG: "every question of the release, its document's pages as images (first 120 at 144 dpi)"}
INFO = BuilderInfo(
    name="mmlongbench_doc",
    module="builders.mmlongbench_doc",
    version=BUILDER_VERSION,
    card={
        "pretty_name": "MMLongBench-Doc",
        "language": ["en"],
        "task_categories": ["visual-question-answering", "image-text-to-text"],
        "tags": ["long-context", "multimodal", "document-understanding", "pdf", "benchmark", "mmlongbench-doc"],
    },
)
RELEASE_CARD_LICENCE = {
    "license": "cc-by-nc-4.0",
    "license_link": "https://github.com/mayubo2333/MMLongBench-Doc#-license",
}
RELEASE_LICENCE = (
    "The data is [CC BY-NC 4.0](https://creativecommons.org/licenses/by-nc/4.0/) per the authors' "
    "[code repository](https://github.com/mayubo2333/MMLongBench-Doc) (research use only; its code is Apache-2.0); "
    "the documents keep their own publishers' terms."
)
FEATURES: dict[str, Any] = {
    "doc_id": Value("string"),
    "doc_type": Value("string"),
    "question": Value("string"),
    "answer": Value("string"),
    "answer_format": Value("string"),
    "evidence_pages": Sequence(Value("int32")),
    "evidence_sources": Sequence(Value("string")),
    "doc_pages": Value("int32"),  # the PDF's pages in all; the rows show the first `max_pages`
}
RENDER_SECONDS_PER_PAGE = 0.15  # a 144-dpi page of a text-heavy PDF with pymupdf, a rough figure
PAGE_BYTES = 400_000  # a 144-dpi page as PNG (about 1,190 x 1,684 for A4)
MEAN_PAGES = 47.5  # the paper's mean document length


def build_mmlongbench_doc(
    source: str | None = None,
    out_dir: str | os.PathLike[str] = "data",
    configs: list[str] | None = None,
    **options: Any,
) -> Path | None:
    """Build `test` into `out_dir/mmlongbench_doc` and return that path (`options`: `MMLongBenchDocOptions`'s
    fields and `BuildOptions`'); `source`: `fixture` (default), a release folder or `hf://yubo2333/MMLongBench-Doc`."""
    if source is not None:
        options["source"] = source
    return MMLongBenchDocBuild.build(out_dir, configs, **options)


class MMLongBenchDocBuild(BenchmarkBuild[MMLongBenchDocOptions]):
    """The release's questions in order, each showing its document's rendered pages."""

    info = INFO
    Options = MMLongBenchDocOptions
    config_order = list(CONFIGS)
    default_image_storage = contract.SHARED

    def features(self, image_storage: str) -> Features:
        return row_features(image_storage, IMAGE_COLUMNS, PROMPT_COLUMN, FEATURES, TOKEN_COLUMNS)

    def open_source(self, work: Path | None) -> OpenedSource:
        assert work is not None
        source = self.options.source
        inputs: dict[str, Any] = {"source": source}
        caveats: dict[str, str] = {}
        self.renderer = renderer_name()  # before anything is downloaded: a missing pymupdf is said at once
        if source == "fixture":
            self.release = Release(write_fixture(work / "fixture"))
            self.source_id = f"fixture-v{FIXTURE_VERSION}"
            caveats["synthetic"] = (
                f"the offline fixture release (builder fixture v{FIXTURE_VERSION}): three drawn documents and made-up "
                "questions in the release's formats; scores on it are not comparable with the paper's"
            )
        elif is_hub_source(source):
            self.release = self._fetch(source, work, inputs)
            self.source_id = "release"
        else:
            self.release = Release(source.split("=", 1)[1] if source.startswith("release=") else source)
            self.source_id = "release"
        self.samples = self.release.samples()[: self.options.limit]
        inputs["renderer"] = self.renderer
        return OpenedSource(inputs, caveats, FIXTURE_CARD_LICENCE if caveats else RELEASE_CARD_LICENCE)

    def _fetch(self, source: str, work: Path, inputs: dict[str, Any]) -> Release:
        """The questions first, then the PDFs they name (only those), verified, into one view folder."""
        location = parse_hub_source(source)
        first = fetch_release(location, HUB_RELEASE, [QUESTIONS], progress=self.progress, view=work / "hub")
        samples = Release(first.folder, hub=True).samples()[: self.options.limit]
        docs = fetch_release(
            location,
            HUB_RELEASE,
            document_files(s.doc_id for s in samples),
            progress=self.progress,
            view=work / "hub",
        )
        inputs["hub"] = {"questions": first.record(), "documents": docs.record()}
        return Release(work / "hub", hub=True)

    def request(self) -> dict[str, Any]:
        return {
            "source": self.source_id,
            "configs": [CONFIG],
            "max_pages": self.options.max_pages,
            "resolution": self.options.resolution,
            "limit": self.options.limit,
            "renderer": self.renderer,
            "text_tokenizer": self.counter.name,
        }

    def plan(self, build: DatasetBuild) -> None:
        self.pending = list(build.pending)

    def estimate(self, kept: int) -> BuildEstimate:
        docs = len({s.doc_id for s in self.samples})
        pages = docs * min(MEAN_PAGES, self.options.max_pages)
        seconds = pages * RENDER_SECONDS_PER_PAGE + pages * PAGE_BYTES / WRITE_BYTES_PER_SECOND
        work = f"{docs} documents, about {pages:,.0f} pages to render at the paper's mean of {MEAN_PAGES} a document"
        return BuildEstimate(self.pending, len(self.samples), pages * PAGE_BYTES, seconds, work, "a guess", kept)

    def write(self, build: DatasetBuild) -> dict[str, Any]:
        started = time.monotonic()
        shown: tuple[str, list[EncodedImage], int] | None = None  # the last document rendered
        pages = 0
        with self.rows(build, CONFIG) as writer:
            for index, sample in enumerate(self.samples):
                if shown is None or shown[0] != sample.doc_id:
                    shown = (sample.doc_id, *self._render(sample.doc_id))
                    pages += len(shown[1])
                row = question_row(index, sample, shown[1], shown[2])
                writer.write(row, shown[1], [f"{sample.doc_id}_{i + 1}.png" for i in range(len(shown[1]))])
            build.add_config(writer.close(), {"documents": len({s.doc_id for s in self.samples})})
        return {"pages_rendered": pages, "seconds": round(time.monotonic() - started, 1)}

    def _render(self, doc_id: str) -> tuple[list[EncodedImage], int]:
        where = f"{self.release.root}/documents/{doc_id}"
        pngs, total = render_pages(
            self.release.document(doc_id), self.options.max_pages, self.options.resolution, where
        )
        return [encode_page(png, f"{where} page {i + 1}") for i, png in enumerate(pngs)], total

    def card_context(self) -> dict[str, Any]:
        return {
            "licence": FIXTURE_LICENCE if self.source_id != "release" else RELEASE_LICENCE,
            "max_pages": self.options.max_pages,
            "resolution": self.options.resolution,
        }


def question_row(index: int, sample: Sample, pages: list[EncodedImage], doc_pages: int) -> dict[str, Any]:
    """One question's own columns; the prompt is the question, then the pages (`run_api.py:44-56`: the text part
    first, then one image part per page)."""
    return {
        "id": f"q{index:04d}",
        "prompt": sample.question + contract.IMAGE_PLACEHOLDER * len(pages),
        "doc_id": sample.doc_id,
        "doc_type": sample.doc_type,
        "question": sample.question,
        "answer": sample.answer,
        "answer_format": sample.answer_format,
        "evidence_pages": sample.evidence_pages,
        "evidence_sources": sample.evidence_sources,
        "doc_pages": doc_pages,
    }
