"""`build_milebench`: the authors' release -> one config per subset and presentation, images stored once.

Three stages, memory flat in rows: read the annotation files and plan every requested config's rows (prompts
assembled, records checked; from archives, the images met on the way are kept), read each needed image once
(bytes hashed, size from the header, checked whole: `builders.core.image_check`), then write the rows, building the Combined-image Set's grids where the
release does not hold them (on worker threads).
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from datasets import Features
from PIL import Image
from tqdm import tqdm

from builders.core import contract
from builders.core.benchmark import select_configs
from builders.core.benchmark_build import BenchmarkBuild, OpenedSource
from builders.core.card import FIXTURE_CARD_LICENCE, FIXTURE_LICENCE
from builders.core.dataset_build import BuilderInfo, DatasetBuild
from builders.core.errors import BuildError
from builders.core.estimate import BuildEstimate
from builders.core.hub_source import hub_or_folder
from builders.core.image_check import DamagedImages
from builders.core.images import EncodedImage, FileJpegEncoder
from builders.core.options import BuildOptions
from builders.core.parallel import run_parallel
from builders.core.store import BudgetedStore, encoded_store
from builders.milebench.combine import combine, font_id
from builders.milebench.fixture import FIXTURE_VERSION, write_fixture
from builders.milebench.gold import gold_index
from builders.milebench.options import MileBenchOptions
from builders.milebench.records import COMBINED_FOLDER, PlannedRow, plan_file
from builders.milebench.release import HUB_RELEASE, Key, Release, hub_files
from builders.milebench.rows import features, make_row
from builders.milebench.subsets import COMBINED, CONFIGS, Config

BUILDER_VERSION = "1.0.0"
INFO = BuilderInfo(
    name="milebench",
    module="builders.milebench",
    version=BUILDER_VERSION,
    card={
        "pretty_name": "MileBench",
        "language": ["en"],
        "task_categories": ["visual-question-answering", "image-text-to-text"],
        "tags": ["long-context", "multimodal", "multi-image", "benchmark", "milebench"],
    },
)
# The card's licence fields: the authors state two licences (below), so the card names neither alone.
RELEASE_CARD_LICENCE = {
    "license": "other",
    "license_name": "milebench-data",
    "license_link": "https://huggingface.co/datasets/FreedomIntelligence/MileBench",
}
RELEASE_LICENCE = (
    "The authors state two licences for the data: [CC BY 2.0](https://creativecommons.org/licenses/by/2.0/) "
    "(`cc-by-2.0`) on the [Hugging Face dataset page](https://huggingface.co/datasets/FreedomIntelligence/MileBench) "
    "and [CC BY-NC 4.0](https://creativecommons.org/licenses/by-nc/4.0/) on the [code repository]"
    "(https://github.com/MileBench/MileBench)'s badge (its README says CC BY); the images come from the source "
    "datasets of Table 6 (see the Citation section) under their own terms. Treat it as non-commercial unless the "
    "authors say otherwise. The evaluation code is Apache-2.0 (MileBench/MileBench)."
)
MEMORY_BUDGET = 256 * 1024 * 1024  # source images kept in memory before they spill to the work folder
MAX_REPORTED = 5
READ_BYTES_PER_SECOND = 200e6  # read + hash (bench/build_milebench.py)
GRID_TILE_SECONDS = 0.012  # one tile: decode, resize to 800 x 800, caption (bench/build_milebench.py)


def open_release(source: str, workdir: Path) -> tuple[Release, str, dict[str, str]]:
    """`fixture` (written offline into `workdir`; `fixture:archives` as the part archives) or the release folder."""
    if source in ("fixture", "fixture:archives"):
        root = write_fixture(workdir / "fixture", archives=source.endswith("archives"))
        caveat = (
            f"the offline fixture release (builder fixture v{FIXTURE_VERSION}): a few drawn images and "
            "made-up text in the release's formats; scores on it are not comparable with the paper's"
        )
        return Release(root), f"fixture-v{FIXTURE_VERSION}", {"synthetic": caveat}
    folder = source.split("=", 1)[1] if source.startswith("release=") else source
    return Release(folder), "release", {}


def build_milebench(
    source: str | None = None,
    out_dir: str | os.PathLike[str] = "data",
    configs: list[str] | None = None,
    **options: Any,
) -> Path | None:
    """Build the requested configs (default: all 87) into `out_dir/milebench` and return that path.

    `source`: `fixture` (None: the default; offline, `fixture:archives` for the archive layout) or the release
    (subset folders or `MileBench_part*.tar.gz`). `options`: the fields of `MileBenchOptions` (`combined_images`:
    `auto` takes the release's grid where a record names one and builds the others as `combine_images.py` does,
    `build` builds every grid; a damaged image stops the build, or, with `skip_bad_images`, the records showing it
    are left out, listed in the manifest, and the build is flagged `limited`) and of `BuildOptions` (a build already in
    `out_dir` with the same request gets the missing configs added unless `overwrite`; `dry_run` prints the plan
    only).
    """
    if source is not None:
        options["source"] = source
    return MileBenchBuild.build(out_dir, configs, **options)


class MileBenchBuild(BenchmarkBuild[MileBenchOptions]):
    """MileBench's parts: the release (or a fixture written offline); the plan, memory flat in rows (annotation
    files read, prompts assembled, records checked; from archives, the images met on the way are kept); each
    needed image read once; the rows, with the Combined-image Set's grids built where the release lacks them."""

    info = INFO
    Options = MileBenchOptions
    config_order = list(CONFIGS)
    # The adversarial set shows the test set's images again, and needle haystacks share a pool: stored once.
    default_image_storage = contract.SHARED
    parallel = True

    def __init__(
        self, options: MileBenchOptions, configs: list[str] | None = None, run: BuildOptions | None = None
    ) -> None:
        super().__init__(options, configs, run)
        self.cfgs = [CONFIGS[name] for name in select_configs(configs, CONFIGS)]  # requested
        self.damaged = DamagedImages(options.skip_bad_images)
        self.use_released_grids = options.combined_images == "auto"
        self.pending: list[Config] = []
        self.plans: dict[str, list[PlannedRow]] = {}
        self.fingerprints: dict[str, str] = {}  # config -> its annotation file's sha256
        self.needed: dict[Key, str] = {}  # file -> the first record naming it
        self.read_bytes = 0
        self.stores: list[BudgetedStore[EncodedImage]] = []
        self._local = threading.local()

    def features(self, image_storage: str) -> Features:
        return features(image_storage)

    # ------------------------------------------------------------------------------------------ source

    def open_source(self, work: Path | None) -> OpenedSource:
        assert work is not None
        inputs: dict[str, Any] = {"source": self.options.source}
        source = hub_or_folder(
            self.options.source, HUB_RELEASE, hub_files(self.cfgs), inputs, progress=self.progress, view=work / "hub"
        )
        self.release, self.source_id, self.fixture_caveats = open_release(source, work)
        self.store = encoded_store(work / "sources.spool", MEMORY_BUDGET)
        self.grids = encoded_store(work / "grids.spool", MEMORY_BUDGET // 4)
        self.stores += [self.store, self.grids]
        card = FIXTURE_CARD_LICENCE if self.fixture_caveats else RELEASE_CARD_LICENCE
        return OpenedSource(inputs, self.fixture_caveats, card)

    def request(self) -> dict[str, Any]:
        return {
            "source": self.source_id,
            "configs": [cfg.name for cfg in self.cfgs],
            "text_tokenizer": self.counter.name,
            "combined_images": self.options.combined_images,
            "caption_font": font_id(),
            **self.damaged.request(),
        }

    def after_write(self, build: DatasetBuild) -> None:
        if (limited := self.damaged.caveat()) is not None:
            build.add_caveat("limited", limited)

    def card_context(self) -> dict[str, Any]:
        return {"licence": FIXTURE_LICENCE if self.fixture_caveats else RELEASE_LICENCE, "font": font_id()}

    def close(self) -> None:
        for store in self.stores:
            store.close()

    # -------------------------------------------------------------------------------------------- plan

    def _folders_wanted(self) -> dict[str, set[str]]:
        """Subset -> the folders of it this build reads (`images`, and the release's grids for `auto`)."""
        wanted: dict[str, set[str]] = {}
        for cfg in self.pending:
            folders = wanted.setdefault(cfg.subset.name, set())
            folders.add("images")
            if cfg.mode == COMBINED and self.use_released_grids:
                folders.add(COMBINED_FOLDER)
        return wanted

    def plan(self, build: DatasetBuild) -> None:
        self.pending = [CONFIGS[name] for name in build.pending]
        folders = self._folders_wanted()
        files = {(cfg.subset.name, cfg.release_file) for cfg in self.pending}
        texts = self.release.read_annotations(
            files, early=self._keep, early_wanted=lambda key: key[1].split("/", 1)[0] in folders.get(key[0], ())
        )
        for cfg in tqdm(self.pending, desc="plan rows", unit="config", disable=not self.progress):
            key = (cfg.subset.name, cfg.release_file)
            if key not in texts:
                raise BuildError(
                    f"{self.release.where(key)} is not in the {self.release.describe()}: config {cfg.name} reads it"
                )
            # The official gold lookup decides which multiple-choice records are valid.
            rows = plan_file(texts[key].content, cfg, f"{cfg.subset.name}/{cfg.release_file}", gold_index)
            if cfg.mode == COMBINED and not self.use_released_grids:
                for row in rows:
                    row.images, row.combined_from_release = list(row.source_images), False
            self.plans[cfg.name] = rows
            self.fingerprints[cfg.name] = texts[key].sha256
            for row in rows:
                for rel in row.images:
                    self.needed.setdefault((cfg.subset.name, rel), row.where)

    def estimate(self, kept: int) -> BuildEstimate:
        rows = sum(len(plans) for plans in self.plans.values())
        sizes = [self._size(key) for key in self.needed]
        known = [s for s in sizes if s is not None]
        image_bytes = sum(known) / max(len(known), 1) * len(sizes) if known else 0.0
        tiles = sum(
            len(r.source_images)
            for c in self.pending
            for r in self.plans[c.name]
            if c.mode == COMBINED and not r.combined_from_release
        )
        grids = sum(
            1 for c in self.pending for r in self.plans[c.name] if c.mode == COMBINED and not r.combined_from_release
        )
        seconds = image_bytes / READ_BYTES_PER_SECOND + tiles * GRID_TILE_SECONDS / self.workers + rows * 0.002
        work = f"{len(self.needed):,} distinct files to read once" + (
            f", {grids:,} grids of {tiles:,} tiles to build" if grids else ""
        )
        basis = "from the release's file sizes" if known else "image sizes unknown until the archives are read"
        return BuildEstimate(
            [c.name for c in self.pending],
            rows,
            image_bytes + grids * 150_000 * 4 + rows * 2000,
            seconds,
            work,
            basis,
            kept,
        )

    def _size(self, key: Key) -> int | None:
        if key in self.store:
            return len(self.store.get(key).data)
        subset, rel = key
        path = self.release.folders.get(subset)
        if path is not None and (path / rel).is_file():
            return (path / rel).stat().st_size
        return None

    # ------------------------------------------------------------------------------------------ images

    def _keep(self, key: Key, data: bytes) -> None:
        """Hash an image file and keep it (its size is read from the header, 0 x 0 for an unreadable one; whether it
        is whole is checked in `read_images`, for the files a row shows)."""
        if key in self.store:
            return
        try:
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
        except Exception:  # Pillow raises many types for a damaged file
            width = height = 0
        self.store.put(key, EncodedImage(data, hashlib.sha256(data).hexdigest(), width, height))
        self.read_bytes += len(data)

    def read_images(self) -> dict[str, Any]:
        started = time.perf_counter()
        wanted = {key for key in self.needed if key not in self.store}
        with tqdm(total=len(wanted), desc="read images", unit="img", disable=not self.progress) as bar:
            missing = self.release.read_images({key: self.needed[key] for key in wanted}, self._keep, bar.update)
        if missing:
            shown = sorted(missing)[:MAX_REPORTED]
            named = "; ".join(f"{self.release.where(key)} (needed by {self.needed[key]})" for key in shown)
            more = f" and {len(missing) - len(shown)} more" if len(missing) > len(shown) else ""
            raise BuildError(f"{len(missing)} image(s) not found in the {self.release.describe()}: {named}{more}")
        for key in sorted(self.needed):  # each needed file checked whole once, the others never decoded
            self.damaged.size(
                key, self.store.get(key).data, f"{self.release.where(key)} (needed by {self.needed[key]})"
            )
        self._leave_out_damaged()
        return {
            "distinct_files": len(self.needed),
            "read_bytes": self.read_bytes,
            "damaged_images": len(self.damaged.reasons),
            "read_seconds": round(time.perf_counter() - started, 3),
        }

    def _leave_out_damaged(self) -> None:
        """Drop the planned rows that show a damaged image, or whose grid is built from one (`row.images`)."""
        for cfg in self.pending:
            kept = []
            for row in self.plans[cfg.name]:
                reason = self.damaged.reason((cfg.subset.name, rel) for rel in row.images)
                if reason is None:
                    kept.append(row)
                else:
                    self.damaged.leave_out(cfg.name, row.id, reason)
            self.damaged.check_config(cfg.name, len(kept))
            self.plans[cfg.name] = kept

    def image(self, subset: str, rel: str) -> EncodedImage:
        return self.store.get((subset, rel))

    # ------------------------------------------------------------------------------------------- grids

    def _encoder(self) -> FileJpegEncoder:
        if not hasattr(self._local, "encoder"):
            self._local.encoder = FileJpegEncoder()
        return self._local.encoder

    def _build_grid(self, item: tuple[Config, PlannedRow]) -> None:
        cfg, row = item
        images = []
        for rel in row.source_images:
            try:
                image = Image.open(io.BytesIO(self.image(cfg.subset.name, rel).data))
                image.load()
            except Exception as exc:
                raise BuildError(
                    f"image {self.release.where((cfg.subset.name, rel))} (needed by {row.where}) does not decode: {exc}"
                ) from None
            images.append(image)
        self.grids.put((cfg.name, row.id), self._encoder().encode(combine(images)))

    def build_grids(self, cfg: Config) -> int:
        todo = [(cfg, row) for row in self.plans[cfg.name] if not row.combined_from_release]
        run_parallel(todo, self._build_grid, self.workers, f"grids {cfg.name}", "grid", self.progress, chunk=1)
        return len(todo)

    # -------------------------------------------------------------------------------------------- write

    def shown(self, cfg: Config, row: PlannedRow) -> tuple[list[EncodedImage], list[str], str]:
        """The row's images as shown, their paths in the dataset, and where a combined grid came from."""
        if cfg.mode == COMBINED and not row.combined_from_release:
            return (
                [self.grids.get((cfg.name, row.id))],
                [f"{cfg.subset.name}/combined_built/{row.sample_id}-0.jpg"],
                "built",
            )
        images = [self.image(cfg.subset.name, rel) for rel in row.images]
        return (
            images,
            [f"{cfg.subset.name}/{rel}" for rel in row.images],
            "release" if row.combined_from_release else "",
        )

    def _write_config(self, build: DatasetBuild, cfg: Config) -> int:
        built = self.build_grids(cfg) if cfg.mode == COMBINED else 0
        levels: Counter[str] = Counter()
        shown_total = 0
        with self.rows(build, cfg.name) as writer:
            for plan in self.plans[cfg.name]:
                images, paths, grid_source = self.shown(cfg, plan)
                # MileBench's row groups have always been cut by the bytes of the images a row shows, stored in it
                # or not: kept, so that builds stay byte-identical.
                shared_bytes = 0 if writer.embeds else sum(len(im.data) for im in images)
                writer.write(make_row(cfg, plan, self.counter, grid_source), images, paths, other_bytes=shared_bytes)
                levels[plan.level] += 1
                shown_total += len(images)
            rows = len(self.plans[cfg.name])
            extra = {
                "subset": cfg.subset.name,
                "task_id": cfg.subset.task_id,
                "mode": cfg.mode,
                "split": cfg.split,
                "release_file": f"{cfg.subset.name}/{cfg.release_file}",
                "annotation_sha256": self.fingerprints[cfg.name],
                "levels": dict(sorted(levels.items())),
                "mean_images": round(shown_total / rows, 2) if rows else 0,
            }
            if cfg.mode == COMBINED:
                extra["combined_images"] = {"release": rows - built, "built": built}
            extra.update(self.damaged.manifest_fields(cfg.name))
            build.add_config(writer.close(), extra)
        return built

    def write(self, build: DatasetBuild) -> dict[str, Any]:
        stats = self.read_images()
        started = time.perf_counter()
        built = 0
        for cfg in tqdm(self.pending, desc="write configs", unit="config", disable=not self.progress):
            built += self._write_config(build, cfg)
        return {**stats, "grids_built": built, "write_seconds": round(time.perf_counter() - started, 3)}
