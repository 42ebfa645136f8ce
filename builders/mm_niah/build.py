"""`build_mm_niah`: the authors' release -> one config per official task (`configs.py`), images stored once.

Plan: read each asked config's annotation file, check every record and build its official input
(`records.official_input`). Then read each split's needed images once (from `images/` or streamed from
`images.tar.gz`), hash them and read their sizes, and write the rows in the release's order.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datasets import Features, List, Value
from PIL import Image

from builders.core import contract, release_json
from builders.core.benchmark import select_configs
from builders.core.benchmark_build import BenchmarkBuild, OpenedSource
from builders.core.card import FIXTURE_CARD_LICENCE, FIXTURE_LICENCE
from builders.core.contract import option
from builders.core.contract_rows import IMAGE_COLUMNS, PROMPT_COLUMN, TOKEN_COLUMNS, row_features
from builders.core.dataset_build import BuilderInfo, DatasetBuild
from builders.core.errors import BuildError
from builders.core.estimate import BuildEstimate
from builders.core.hub_source import hub_or_folder
from builders.core.images import EncodedImage
from builders.core.options import BenchmarkOptions, limit_option, text_tokenizer_option
from builders.core.store import BudgetedStore, encoded_store
from builders.mm_niah import records
from builders.mm_niah.configs import CONFIGS, Config
from builders.mm_niah.fixture import FIXTURE_VERSION, write_fixture
from builders.mm_niah.release import HUB_RELEASE, Release, hub_files

BUILDER_VERSION = "1.0.0"
INFO = BuilderInfo(
    name="mm_niah",
    module="builders.mm_niah",
    version=BUILDER_VERSION,
    card={
        "pretty_name": "MM-NIAH",
        "language": ["en"],
        "task_categories": ["visual-question-answering", "image-text-to-text"],
        "tags": ["long-context", "multimodal", "needle-in-a-haystack", "mmlongeval"],
    },
)
RELEASE_CARD_LICENCE = {
    "license": "other",
    "license_name": "mm-niah",
    "license_link": "https://huggingface.co/datasets/OpenGVLab/MM-NIAH",
}
RELEASE_LICENCE = (
    "The authors publish the data under the [MIT licence](https://huggingface.co/datasets/OpenGVLab/MM-NIAH) "
    "(the Hub card's `license: mit`); the haystacks are documents of [OBELICS](https://huggingface.co/datasets/"
    "HuggingFaceM4/OBELICS) (CC BY 4.0, its images under their owners' terms), so the card names no one licence."
)
MEMORY_BUDGET = 256 * 1024 * 1024  # images kept in memory before they spill to the work folder


@dataclass(frozen=True, kw_only=True)
class MMNiahOptions(BenchmarkOptions):
    source: str = option(
        "fixture",
        "the authors' release: 'hf://OpenGVLab/MM-NIAH[@REVISION]' (downloads the asked configs' annotation files "
        "and their splits' images.tar.gz into the Hub cache; HF_HUB_OFFLINE=1 reads the cache only), or the folder "
        "holding mm_niah_val/ and mm_niah_test/ (images unpacked under images/ or as images.tar.gz); or 'fixture' "
        "(default: a tiny offline stand-in in the release's layout)",
    )
    text_tokenizer: str = text_tokenizer_option()
    limit: int | None = limit_option("records per config (the first in the release's order)")


@dataclass
class PlannedRow:
    record: records.Record
    question: str
    images: list[str]
    where: str


def build_mm_niah(
    source: str | None = None,
    out_dir: str | os.PathLike[str] = "data",
    configs: list[str] | None = None,
    **options: Any,
) -> Path | None:
    """Build the requested configs (default: all 12) into `out_dir/mm_niah` and return that path."""
    if source is not None:
        options["source"] = source
    return MMNiahBuild.build(out_dir, configs, **options)


def features(image_storage: str = contract.SHARED) -> Features:
    """The columns of every MM-NIAH config; `images` only when the rows embed them."""
    return row_features(
        image_storage,
        {
            "sample_id": Value("int32"),  # the record's `id` (per task and split)
            "task": Value("string"),  # retrieval | counting | reasoning
            "needle": Value("string"),  # text | image
            "split": Value("string"),  # val | test
            "context": Value("string"),  # the haystack, `<image>` per image
            "question": Value("string"),  # the official question, options and instruction appended
        },
        PROMPT_COLUMN,  # `f"{context}\n{question}"`, as eval_internvl.py sends it
        {
            "answer": Value("string"),  # the release's answer as JSON text (a string, an int or a list; null: none)
            "answer_kind": Value("string"),  # open | choice | list: how the official scorer reads it; hidden: none
            "choices": List(Value("string")),  # text options ([] without)
            "num_choice_images": Value("int32"),  # image options, the row's last images
            "context_length": Value("int32"),  # the release's count of text and image tokens (meta)
            "context_length_text": Value("int32"),
            "context_length_image": Value("int32"),
            "placed_depth": List(Value("float64")),  # each needle's depth in [0, 1]
            "needles": List(Value("string")),  # the needles' texts or image names
            "haystack": Value("string"),  # which document (text needles taken out): rows sharing it share a haystack
        },
        IMAGE_COLUMNS,
        TOKEN_COLUMNS,
    )


class MMNiahBuild(BenchmarkBuild[MMNiahOptions]):
    info = INFO
    Options = MMNiahOptions
    config_order = list(CONFIGS)
    # The haystacks' images recur across tasks and records: stored once.
    default_image_storage = contract.SHARED

    def features(self, image_storage: str) -> Features:
        return features(image_storage)

    def open_source(self, work: Path | None) -> OpenedSource:
        assert work is not None
        self.cfgs = [CONFIGS[name] for name in select_configs(self.asked_configs, CONFIGS)]
        inputs: dict[str, Any] = {"source": self.options.source}
        source = hub_or_folder(
            self.options.source, HUB_RELEASE, hub_files(self.cfgs), inputs, progress=self.progress, view=work / "hub"
        )
        caveats: dict[str, str] = {}
        if source == "fixture":
            source = str(write_fixture(work / "fixture"))
            self.source_id = f"fixture-v{FIXTURE_VERSION}"
            caveats["synthetic"] = (
                f"the offline fixture release (builder fixture v{FIXTURE_VERSION}): a few drawn images and made-up "
                "text in the release's format; scores on it are not comparable with the paper's"
            )
        else:
            self.source_id = "release"
        self.release = Release(source)
        self.fixture = bool(caveats)
        self.store: BudgetedStore[EncodedImage] = encoded_store(work / "images.spool", MEMORY_BUDGET)
        return OpenedSource(inputs, caveats, FIXTURE_CARD_LICENCE if caveats else RELEASE_CARD_LICENCE)

    def request(self) -> dict[str, Any]:
        return {
            "source": self.source_id,
            "configs": [cfg.name for cfg in self.cfgs],
            "limit": self.options.limit,
            "text_tokenizer": self.counter.name,
        }

    def card_context(self) -> dict[str, Any]:
        return {"licence": FIXTURE_LICENCE if self.fixture else RELEASE_LICENCE}

    def close(self) -> None:
        if hasattr(self, "store"):
            self.store.close()

    def plan(self, build: DatasetBuild) -> None:
        self.pending = [CONFIGS[name] for name in build.pending]
        self.plans: dict[str, list[PlannedRow]] = {}
        self.sha256: dict[str, str] = {}
        for cfg in self.pending:
            data = self.release.annotation(cfg)
            self.sha256[cfg.name] = hashlib.sha256(data).hexdigest()
            rows = []
            for number, line in enumerate(data.splitlines(), 1):
                if not line.strip():
                    continue
                where = f"{cfg.annotation} line {number}"
                record = records.parse_record(line, where)
                question, images = records.official_input(record, where)
                rows.append(PlannedRow(record, question, images, where))
                if self.options.limit is not None and len(rows) >= self.options.limit:
                    break
            release_json.refuse_repeats(  # a line listed twice would be scored twice, as MMLongBench-Doc refuses it
                cfg.annotation,
                (
                    (
                        r.where.removeprefix(f"{cfg.annotation} "),
                        r.record.model_dump(mode="json"),
                        repr(r.record.question),
                    )
                    for r in rows
                ),
            )
            self.plans[cfg.name] = rows

    def estimate(self, kept: int) -> BuildEstimate:
        rows = sum(len(p) for p in self.plans.values())
        images = len({(c.folder, name) for c in self.pending for r in self.plans[c.name] for name in r.images})
        return BuildEstimate(
            [c.name for c in self.pending],
            rows,
            images * 150_000 + rows * 20_000,
            images * 0.002 + rows * 0.002,
            f"{images:,} distinct images to read once",
            "a guess: about 150 KB per image",
            kept,
        )

    def _keep(self, key: tuple[str, str], data: bytes) -> None:
        try:
            with Image.open(io.BytesIO(data)) as image:
                image.load()
                width, height = image.size
        except Exception as exc:  # Pillow raises many types for a damaged file
            raise BuildError(f"{self.release.where(*key)}: not a readable image ({exc})") from None
        self.store.put(key, EncodedImage(data, hashlib.sha256(data).hexdigest(), width, height))

    def write(self, build: DatasetBuild) -> dict[str, Any]:
        for folder in sorted({cfg.folder for cfg in self.pending}):
            wanted = {n for c in self.pending if c.folder == folder for r in self.plans[c.name] for n in r.images}
            missing = self.release.read_images(folder, {n for n in wanted if (folder, n) not in self.store}, self._keep)
            if missing:
                raise BuildError(
                    f"{len(missing)} image(s) not in the release, e.g. {self.release.where(folder, min(missing))}"
                )
        for cfg in self.pending:
            with self.rows(build, cfg.name) as writer:
                for plan in self.plans[cfg.name]:
                    images = [self.store.get((cfg.folder, name)) for name in plan.images]
                    writer.write(_row(cfg, plan), images, [f"{cfg.folder}/images/{n}" for n in plan.images])
                build.add_config(
                    writer.close(), {"official_task": cfg.official_name, "annotation_sha256": self.sha256[cfg.name]}
                )
        return {"distinct_images": len(self.store)}


def _row(cfg: Config, plan: PlannedRow) -> dict[str, Any]:
    record, meta = plan.record, plan.record.meta
    return {
        "id": f"{cfg.name}-{record.id}",
        "sample_id": record.id,
        "task": cfg.task,
        "needle": cfg.needle,
        "split": cfg.split,
        "context": record.context,
        "question": plan.question,
        "prompt": records.prompt(record, plan.question),
        "answer": json.dumps(record.answer),
        "answer_kind": records.answer_kind(record, cfg.task),
        "choices": list(meta.choices or []),
        "num_choice_images": len(meta.choices_image_path or []),
        "context_length": meta.context_length,
        "context_length_text": meta.context_length_text if meta.context_length_text is not None else -1,
        "context_length_image": meta.context_length_image if meta.context_length_image is not None else -1,
        "placed_depth": records.depths(record),
        "needles": list(meta.needles or []),
        "haystack": records.haystack_key(record),
    }
