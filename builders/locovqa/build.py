"""`build_locovqa`: sources -> one config per task, mode and context length.

Stages, memory flat in rows: open the sources (or write the offline stand-in), plan every row of the pending
configs (entity lists asked in batches for the collision filter; no pixel), then
1. cmp: fit each distinct context image into a cell once (decoded at reduced JPEG scale), compose and encode
   each row's grid, on worker threads;
2. int: read each distinct context image's bytes once (digits drawn once);
3. write the rows config by config. With shared image storage every distinct image is stored once.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from datasets import Features
from tqdm import tqdm

from builders.core import contract
from builders.core.benchmark_build import BenchmarkBuild, OpenedSource
from builders.core.card import FIXTURE_CARD_LICENCE, FIXTURE_LICENCE
from builders.core.dataset_build import BuilderInfo, DatasetBuild
from builders.core.errors import BuildError
from builders.core.estimate import BuildEstimate, human_bytes
from builders.core.images import JPEG_SETTINGS, EncodedImage
from builders.core.options import BuildOptions
from builders.core.store import TileStore, encoded_store
from builders.locovqa.compose import BACKGROUND, DIGIT_BACKGROUND
from builders.locovqa.configs import CONFIGS, TASKS, LocoConfig, parse_configs
from builders.locovqa.entities import Lister, lister_specs, make_lister
from builders.locovqa.estimate import check_grids, estimate_build
from builders.locovqa.fixture import FIXTURE_VERSION, write_fixture
from builders.locovqa.options import DEFAULT_MNIST_SAMPLES, SYNTHETIC_LIMIT, LocoVqaOptions
from builders.locovqa.plan import (
    Failure,
    RowPlan,
    choose_items,
    needle_digits,
    plan_mnist,
    plan_needle,
    plan_vqa,
)
from builders.locovqa.row_images import make_row_images
from builders.locovqa.rows import features, make_row, question_text
from builders.locovqa.sources import Sources, parse_source_args, resolve_hub_sources

BUILDER_VERSION = "1.1.0"  # 1.1: digits sized against the other context images (the paper's reference); an image
# whose entities are unknown is never a distractor
MAX_LISTED_FAILURES = 50
INFO = BuilderInfo(
    name="locovqa",
    module="builders.locovqa",
    version=BUILDER_VERSION,
    card={
        "pretty_name": "LoCoVQA",
        "language": ["en"],
        "task_categories": ["visual-question-answering", "image-text-to-text"],
        "tags": ["long-context", "multimodal", "distractors", "locovqa", "mmlongeval"],
    },
)
LICENCES = {
    "okvqa": "[OK-VQA](https://okvqa.allenai.org/) questions and answers: [CC BY 4.0]"
    "(https://creativecommons.org/licenses/by/4.0/) (Marino et al.); its images are MS COCO's",
    "coco": "MS COCO images remain under their Flickr owners' terms ([COCO terms](https://cocodataset.org/#termsofuse))",
    "mmstar": "MMStar: its authors' release terms ([Lin-Chen/MMStar](https://huggingface.co/datasets/Lin-Chen/MMStar)), "
    "and those of its six source benchmarks",
    "mnist": "MNIST: [CC BY-SA 3.0](https://creativecommons.org/licenses/by-sa/3.0/) (LeCun, Cortes and Burges)",
}
# The card's one licence link for a build from the real sources: the most restrictive terms it carries, COCO's for
# any build with COCO images (every task but MMStar shows them), else MMStar's.
LICENCE_LINKS = {
    "coco": "https://cocodataset.org/#termsofuse",
    "okvqa": "https://cocodataset.org/#termsofuse",
    "mmstar": "https://huggingface.co/datasets/Lin-Chen/MMStar",
}


def card_licence(sources: list[str]) -> dict[str, str]:
    """The card's licence fields for a build from `sources` (the names of `--source NAME=...`)."""
    link = next((LICENCE_LINKS[name] for name in LICENCE_LINKS if name in sources), LICENCE_LINKS["coco"])
    return {"license": "other", "license_name": "locovqa-sources", "license_link": link}


def build_locovqa(
    source: list[str] | None = None,
    out_dir: str | os.PathLike[str] = "data",
    configs: list[str] | None = None,
    **options: Any,
) -> Path | None:
    """Build the requested configs (default: every task and mode at lengths 1, 4, 9, 16, 25, 36) into
    `out_dir/locovqa` and return that path (None with `dry_run`).

    `source`: `["synthetic"]` (None: the default, offline) or `["okvqa=DIR", "coco=DIR", "mmstar=FILE",
    "mnist=DIR"]`. `options`: the fields of `LocoVqaOptions` (`limit`: at most this many OK-VQA / MMStar questions,
    MNIST contexts per length and digit count, needle digits; `entity_lister`: `SPEC` for every in-distribution
    task or `TASK=SPEC` (`none`, `coco`, `cache:FILE`, `vlm:MODEL`), by default OK-VQA uses COCO's annotations and
    MMStar needs one named; `asker_factory`: what `vlm:MODEL` asks through) and of `BuildOptions`.
    """
    options["source"] = source
    return LocoVqaBuild.build(out_dir, configs, **options)


class LocoVqaBuild(BenchmarkBuild[LocoVqaOptions]):
    """LoCoVQA's parts: the sources (or the offline stand-in) and entity listers, the row plans (entity lists asked
    in batches for the collision filter; no pixel), and the stages of the module's docstring."""

    info = INFO
    Options = LocoVqaOptions
    config_order = list(CONFIGS)
    # Interleaved contexts show the same pool images in row after row and length after length: stored once.
    default_image_storage = contract.SHARED
    parallel = True

    def __init__(
        self, options: LocoVqaOptions, configs: list[str] | None = None, run: BuildOptions | None = None
    ) -> None:
        super().__init__(options, configs, run)
        self.cfgs = parse_configs(self.asked_configs)  # requested
        check_grids(self.cfgs, options.cell_size, self.workers, options.memory_budget_mb)
        self.paths = parse_source_args(options.source)
        self.synthetic = "synthetic" in self.paths
        self.limit = SYNTHETIC_LIMIT if self.synthetic and options.limit is None else options.limit
        self.samples = options.mnist_samples or (self.limit if self.limit is not None else DEFAULT_MNIST_SAMPLES)
        self.tasks = [t for t in TASKS if any(c.task == t for c in self.cfgs)]
        self.listers: dict[str, Lister] = {}
        self.plans: dict[str, list[RowPlan]] = defaultdict(list)
        self.failures: list[Failure] = []
        self.planning: dict[str, Any] = {}  # per task, for the manifest's stats

    def features(self, image_storage: str) -> Features:
        return features(image_storage)

    # ---------------------------------------------------------------------------------------- source

    def open_source(self, work: Path | None) -> OpenedSource:
        assert work is not None
        self.work = work
        if self.synthetic:
            written = write_fixture(work / "fixture", self.options.seed)
            self.paths = {name: str(written[name]) for name in ("okvqa", "coco", "mmstar", "mnist")}
        self.paths, hub = resolve_hub_sources(self.paths, work / "hub", self.progress)
        self.sources = Sources.open(self.paths, self.tasks, self.options.ood_split)
        specs = lister_specs(self.options.entity_lister, self.sources.tasks(), self.tasks, self.synthetic)
        if self.synthetic:
            specs = {t: (f"cache:{written['mmstar_entities']}" if s == "fixture" else s) for t, s in specs.items()}
        cache = Path(self.options.entity_cache) if self.options.entity_cache else None
        for task, spec in specs.items():
            self.listers[task] = make_lister(
                spec,
                coco_instances=self.sources.coco_instances,
                lister_args=self.options.entity_lister_args,
                cache=cache,
                where=f" for {task}",
                asker_factory=self.options.asker_factory,
            )
        caveats = (
            {
                "synthetic": f"the offline stand-in (fixture v{FIXTURE_VERSION}): drawn scenes and digits in the "
                "sources' formats; scores on it are not comparable with the paper's"
            }
            if self.synthetic
            else {}
        )
        card = FIXTURE_CARD_LICENCE if self.synthetic else card_licence(list(self.paths))
        inputs: dict[str, Any] = {"source": list(self.options.source or ["synthetic"])}
        if hub:
            inputs["hub"] = hub
        return OpenedSource(inputs, caveats, card)

    def request(self) -> dict[str, Any]:
        options = self.options
        return {
            "source": {
                "kind": "synthetic" if self.synthetic else "files",
                "spec": " ".join(options.source or ["synthetic"]),
                "fixture": f"v{FIXTURE_VERSION}" if self.synthetic else None,
            },
            "sources": self.sources.describe(),
            "rows": "all" if self.limit is None else "limit",
            "configs": [cfg.name for cfg in self.cfgs],
            "seed": options.seed,
            "limit": self.limit,
            "mnist_samples": self.samples,
            "entity_listers": {task: lister.describe() for task, lister in self.listers.items()},
            "strict_pairwise": options.strict_pairwise,
            "max_resamples": options.max_resamples,
            "mmstar_pool": options.mmstar_pool,
            "ood_split": options.ood_split,
            "text_tokenizer": self.counter.name,
            "images": {
                "cell_size": options.cell_size,
                "fit": "aspect kept, bicubic, centred",
                "background": BACKGROUND,
                "digit_background": DIGIT_BACKGROUND,
                "grid_jpeg": JPEG_SETTINGS,
                "int": "source bytes as released; digits as PNG",
                "digits": "strokes 1/6-1/2 of the tallest other context image as shown (int: its height, "
                "canvas as tall; cmp: its height in the cell, canvas the cell)",
            },
        }

    def card_context(self) -> dict[str, Any]:
        licence = (
            FIXTURE_LICENCE
            if self.synthetic
            else "; ".join(LICENCES[name] for name in self.paths if name in LICENCES) + "."
        )
        return {"licence": licence, "cell_size": self.options.cell_size}

    def close(self) -> None:
        for lister in self.listers.values():
            lister.close()

    # ------------------------------------------------------------------------------------------ plan

    def plan(self, build: DatasetBuild) -> None:
        self.pending = [cfg for cfg in self.cfgs if cfg.name in build.pending]
        by_task: dict[str, list[LocoConfig]] = defaultdict(list)
        for cfg in self.pending:
            by_task[cfg.task].append(cfg)
        for task, task_cfgs in by_task.items():
            plans, failures = self._plan_task(task, task_cfgs)
            for plan in plans:
                self.plans[plan.cfg.name].append(plan)
            self.failures += failures
        if self.failures:
            _warn_failures(self.failures)
            build.add_caveat(
                "limited",
                f"{len(self.failures)} row(s) could not be built (the manifest lists them "
                "per config): fewer rows than asked for",
            )

    def _plan_task(self, task: str, cfgs: list[LocoConfig]) -> tuple[list[RowPlan], list[Failure]]:
        sources, seed, limit, options = self.sources, self.options.seed, self.limit, self.options
        if task in ("okvqa", "mmstar"):
            source = sources.okvqa if task == "okvqa" else sources.mmstar
            assert source is not None
            items = choose_items(source.items, limit, seed, task)
            pool = source.pool
            by_subset: dict[str, list[str]] = defaultdict(list)
            for item in source.items:
                by_subset[item.subset].append(item.image)
            pools = (
                (lambda item, s=by_subset: sorted(s[item.subset]))
                if options.mmstar_pool == "subset" and task == "mmstar"
                else (lambda item, p=pool: p)
            )
            plans, failures, stats = plan_vqa(
                task,
                cfgs,
                items,
                pools,
                sources.image,
                self.listers[task],
                seed,
                strict_pairwise=options.strict_pairwise,
                max_resamples=options.max_resamples,
            )
            self.planning[task] = {**stats, "items": len(items)}
            return plans, failures
        assert sources.mnist is not None and sources.ood is not None
        if task == "mnist":
            plans, failures, digits = plan_mnist(
                cfgs, self.samples, sources.mnist.labels, sources.ood.pool, seed, sources.size, options.cell_size
            )
        else:
            chosen = needle_digits(sources.mnist.by_label, seed)[: limit or 10]
            plans, failures, digits = plan_needle(cfgs, chosen, sources.ood.pool, seed, sources.size, options.cell_size)
        sources.digits.update(digits)
        return plans, failures

    def estimate(self, kept: int) -> BuildEstimate | None:
        if not any(self.plans.values()):
            return None
        return estimate_build(
            self.plans,
            self.sources.cell,
            self.sources.original,
            self.options.cell_size,
            kept,
            self.workers,
            self.options.memory_budget_mb * 1e6,
        )

    def _check_disk(self, build: DatasetBuild) -> None:
        """Refuse, before the long stages, a build whose temporary files and output will not fit the disk."""
        estimate = self.estimate(0)
        if estimate is None:
            return
        need = (estimate.scratch_bytes or 0) + estimate.num_bytes
        free = shutil.disk_usage(self.work).free
        if need > free:
            raise BuildError(
                f"this build needs about {human_bytes(need)} of disk under {self.work.parent} "
                f"({human_bytes(estimate.scratch_bytes or 0)} of temporary files, "
                f"{human_bytes(estimate.num_bytes)} of output) and {human_bytes(free)} is free: free "
                "some, or build fewer configs or rows at a time"
            )

    # ----------------------------------------------------------------------------------------- write

    def write(self, build: DatasetBuild) -> dict[str, Any]:
        self._check_disk(build)
        started = time.perf_counter()
        encoded = encoded_store(self.work / "images.spool", 0)
        try:
            made = make_row_images(
                self.plans,
                self.sources,
                self.options.cell_size,
                encoded,
                TileStore(self.work / "cells.spill", self.options.memory_budget_mb * 1024 * 1024),
                self.workers,
                self.progress,
            )
            written = 0
            for cfg in tqdm(self.pending, desc="write configs", unit="config", disable=not self.progress):
                written += self._write_config(build, cfg, encoded)
        finally:
            encoded.close()
        return {
            "rows": written,
            "failed_rows": len(self.failures),
            **made,
            "planning": self.planning,
            "write_seconds": round(time.perf_counter() - started, 3),
        }

    def _write_config(self, build: DatasetBuild, cfg: LocoConfig, encoded: Any) -> int:
        name = cfg.name
        plans = self.plans.get(name, [])
        mine = [f for f in self.failures if f.config == name]
        if not plans:
            reasons = "; ".join(f"item {f.item_id}: {f.reason}" for f in mine[:3]) or "no items"
            raise BuildError(f"config {name}: no row could be built ({len(mine)} failed: {reasons})")
        lister = self.listers[cfg.task].name if cfg.task in self.listers else ""
        with self.rows(build, name) as writer:
            for plan in plans:
                keys = [plan.row_id] if cfg.mode == "cmp" else plan.context
                images: list[EncodedImage] = [encoded.get(key) for key in keys]
                paths = [f"{plan.row_id}.jpg"] if cfg.mode == "cmp" else plan.context
                text = question_text(plan)
                writer.write(
                    make_row(plan, len(images), text, self.options.cell_size, lister),
                    images,
                    paths,
                    counted_text=text,
                    other_bytes=2048,
                )
            build.add_config(
                writer.close(),
                {
                    "task": cfg.task,
                    "mode": cfg.mode,
                    "context_length": cfg.length,
                    "failed_rows": len(mine),
                    "failures": [{"item_id": f.item_id, "reason": f.reason} for f in mine[:MAX_LISTED_FAILURES]],
                    "resamples": sum(p.n_resamples for p in plans),
                },
            )
        return len(plans)


def _warn_failures(failures: list[Failure]) -> None:
    shown = "; ".join(f"{f.config} item {f.item_id}: {f.reason}" for f in failures[:3])
    more = f" (and {len(failures) - 3} more)" if len(failures) > 3 else ""
    print(
        f"warning: {len(failures)} row(s) could not be built and are left out, listed in the manifest: {shown}{more}",
        file=sys.stderr,
    )
