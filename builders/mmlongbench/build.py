"""`build_mmlongbench`: the authors' release -> one config per leaf and length, images stored once.

Three stages, memory flat in rows: plan every requested config (the official sample, prompts assembled,
spooled to a temporary file; no image read), read each distinct image once (bytes hashed, size from the
header, checked whole: `builders.core.image_check`; from the folder or streamed from the archives), then write the
rows.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from datasets import Features
from tqdm import tqdm

from builders.core import contract
from builders.core.benchmark import select_configs
from builders.core.benchmark_build import BenchmarkBuild, OpenedSource
from builders.core.card import FIXTURE_CARD_LICENCE, FIXTURE_LICENCE
from builders.core.contract_rows import KeptImage, RowWriter
from builders.core.dataset_build import BuilderInfo, DatasetBuild
from builders.core.errors import BuildError
from builders.core.estimate import BuildEstimate
from builders.core.hub_source import is_hub_source
from builders.core.image_check import DamagedImages
from builders.core.images import EncodedImage
from builders.core.options import BuildOptions
from builders.mmlongbench.ablations import unavailable
from builders.mmlongbench.extend import extended_file
from builders.mmlongbench.image_sizes import ImageSizes
from builders.mmlongbench.leaves import (
    ABLATION_CONFIGS,
    BUILDABLE_CONFIGS,
    CLAIMS_FILES,
    VLMEVALKIT,
    Config,
)
from builders.mmlongbench.options import MMLongBenchOptions
from builders.mmlongbench.plan import plan_config
from builders.mmlongbench.pools import Pools
from builders.mmlongbench.release import Release, read_claims, read_lines
from builders.mmlongbench.rows import PlannedRow, features, make_row
from builders.mmlongbench.source import RELEASE_CARD_LICENCE, RELEASE_LICENCE, fetch_hub_release, open_source
from builders.mmlongbench.version_configs import expand_config_sets, has_release_text, version_fields
from builders.mmlongbench.vlmevalkit.layout import OfficialSets
from builders.mmlongbench.vlmevalkit.plan import VlmevalkitConfigs, tsv_image_key
from builders.mmlongbench.vlmevalkit.rows import make_tsv_row, tsv_features

BUILDER_VERSION = "1.1.0"  # 1.1: ICL draws per row; the ablation configs
INFO = BuilderInfo(
    name="mmlongbench",
    module="builders.mmlongbench",
    version=BUILDER_VERSION,
    card={
        "pretty_name": "MMLongBench",
        "language": ["en"],
        "task_categories": ["visual-question-answering", "image-text-to-text"],
        "tags": ["long-context", "multimodal", "benchmark", "mmlongbench"],
    },
)
SAMPLING = (
    "official eval.py/data.py @26197d2: seed 42, random.sample of sorted ids, Dataset.shuffle(42); "
    "each ICL row's exemplar set and shot order drawn as the official loader draws them, from a seed of "
    "(42, config, row id) (the official draws, made in forked workers that reseed from OS entropy, cannot be "
    "reproduced)"
)
OURS_CAVEAT = (
    "the 256K, 512K and 1M configs are ours, not the paper's (MMLongBench stops at 128K): each row is its "
    "128K row grown from the release's own pools under the paper's length-control rules "
    "(builders/mmlongbench/extend.py); no published score exists at these lengths"
)
MAX_REPORTED = 5  # over-length rows named in the warning; all are counted in the manifest


def build_mmlongbench(
    source: str | None = None,
    out_dir: str | os.PathLike[str] = "data",
    configs: list[str] | None = None,
    **options: Any,
) -> Path | None:
    """Build the requested configs (default: the 95 and every ablation config the release can give; V1.1's `v1_1_*`,
    VLMEvalKit's `vlmevalkit_*` and our lengths past 128K only when named) into `out_dir/mmlongbench` and return that
    path.

    `source`: `fixture` (None: the default; offline, `fixture:archives` for the archive layout), `fixture:full`
    (offline, rows filled to their lengths, `fixture_ids` ids per file) or the folder holding the release
    (`mmlb_data/` or `mmlb_data.tar.gz`, and `mmlb_image/` or the image archives). `options`: the fields of
    `MMLongBenchOptions` (rows: the sample the official code evaluates, or every row with `full`; a damaged image
    stops the build, or, with `skip_bad_images`, the rows showing it are left out, listed in the manifest, and the
    build is flagged `limited`) and of `BuildOptions` (a build already in `out_dir` with the same request gets the
    missing configs added unless `overwrite`; `dry_run` prints the plan and builds nothing).
    """
    if source is not None:
        options["source"] = source
    return MMLongBenchBuild.build(out_dir, configs, **options)


def _asks_for_everything(configs: list[str] | None) -> bool:
    return not configs or "all" in {part.strip().lower() for item in configs for part in item.split(",")}


def _without_unavailable_ablations(cfgs: list[Config], release: Release) -> list[Config]:
    """A default build's configs less the ablation configs the release cannot give (said on stderr): the
    published release need not hold their files, and a benchmark build must not fail for an analysis set."""
    reasons = {cfg.name: unavailable(release, cfg) for cfg in cfgs if cfg.name in ABLATION_CONFIGS}
    skipped = {name: why for name, why in reasons.items() if why}
    if skipped:
        print(
            f"note: {len(skipped)} ablation config(s) left out, the release cannot give them: "
            + "; ".join(f"{name} ({why})" for name, why in list(skipped.items())[:MAX_REPORTED])
            + (" ..." if len(skipped) > MAX_REPORTED else ""),
            file=sys.stderr,
        )
    return [cfg for cfg in cfgs if cfg.name not in skipped]


class MMLongBenchBuild(BenchmarkBuild[MMLongBenchOptions]):
    """MMLongBench's parts: the release (or a fixture written offline); the plan, memory flat in rows (the
    official sample, prompts assembled, spooled to the work folder; no image read); each distinct image read
    once; the rows."""

    info = INFO
    Options = MMLongBenchOptions
    config_order = list(BUILDABLE_CONFIGS)
    # Hundreds of images per row, the same ones across depths and lengths: each is stored once.
    default_image_storage = contract.SHARED

    def __init__(
        self, options: MMLongBenchOptions, configs: list[str] | None = None, run: BuildOptions | None = None
    ) -> None:
        super().__init__(options, configs, run)
        names = select_configs(expand_config_sets(configs), BUILDABLE_CONFIGS)
        self.cfgs = [BUILDABLE_CONFIGS[name] for name in names]  # requested
        # No config named: the default set (no extended lengths, no ablation the release lacks).
        self.everything = _asks_for_everything(configs)
        self.damaged = DamagedImages(options.skip_bad_images)
        self.release: Release | None = None  # None: only VLMEvalKit's sets asked, from a folder without the release
        self.tsv: VlmevalkitConfigs | None = None
        self.pending: list[Config] = []
        self.plans: dict[str, tuple[Path, int]] = {}  # config -> (spooled planned rows, row count)
        self.needed: dict[str, str] = {}  # image path -> the first row naming it
        self.images: dict[str, KeptImage] = {}
        self.grown: dict[str, dict[str, int]] = {}  # extended config -> how its rows grew
        self.claims: dict[str, dict[str, list[str]]] = {}  # claims file -> id -> the summarization judge's claims

    def features(self, image_storage: str) -> Features:
        return features(image_storage)

    # -------------------------------------------------------------------------------------- source

    def open_source(self, work: Path | None) -> OpenedSource:
        assert work is not None
        self.work = work
        inputs: dict[str, Any] = {"source": self.options.source}
        source = self.options.source
        if self.everything:  # the paper's configs; ours past 128K, V1.1's and VLMEvalKit's only when named
            self.cfgs = [cfg for cfg in self.cfgs if cfg.in_default]
        if is_hub_source(source):
            hub = fetch_hub_release(source, self.cfgs, work / "hub", self.progress)
            inputs["hub"] = hub.record()
            source = str(hub.folder)
        root, self.source_id, self.fixture_caveats = open_source(
            source, work, self.counter, self.options.fixture_ids, self.cfgs
        )
        tsv_cfgs = [cfg for cfg in self.cfgs if cfg.version == VLMEVALKIT]
        if len(tsv_cfgs) < len(self.cfgs) or has_release_text(root):
            # VLMEvalKit's configs alone need no release; where one is beside them, its claims serve their Summ rows
            self.release = Release(root, work)
        if tsv_cfgs:
            self.tsv = VlmevalkitConfigs(OfficialSets(root), tsv_cfgs, work)
        if self.everything:
            assert self.release is not None
            self.cfgs = _without_unavailable_ablations(self.cfgs, self.release)
        card = FIXTURE_CARD_LICENCE if self.fixture_caveats else RELEASE_CARD_LICENCE
        return OpenedSource(inputs, self.fixture_caveats, card)

    def request(self) -> dict[str, Any]:
        return {
            "source": self.source_id,
            "configs": [cfg.name for cfg in self.cfgs],
            "rows": "full" if self.options.full else "paper",
            "text_tokenizer": self.counter.name,
            "sampling": SAMPLING,
            **self.damaged.request(),
        }

    def card_context(self) -> dict[str, Any]:
        return {"licence": FIXTURE_LICENCE if self.fixture_caveats else RELEASE_LICENCE, "sampling": SAMPLING}

    def close(self) -> None:
        if self.release is not None:
            self.release.close()

    # ---------------------------------------------------------------------------------------- plan

    def plan(self, build: DatasetBuild) -> None:
        self.pending = [BUILDABLE_CONFIGS[name] for name in build.pending]
        if not self.pending:
            return
        from_release = [cfg for cfg in self.pending if cfg.version != VLMEVALKIT]
        if self.tsv is not None:
            self.tsv.cfgs = [cfg for cfg in self.pending if cfg.version == VLMEVALKIT]
            self.tsv.plan()
        if self.release is None:
            return
        self.release.fetch_text(
            [cfg.file for cfg in from_release]
            + [CLAIMS_FILES[c.leaf.dataset] for c in from_release if c.leaf.dataset in CLAIMS_FILES]
        )
        sizes, pools = ImageSizes(self.release), dict[str, Pools]()
        for cfg in tqdm(from_release, desc="plan rows", unit="config", disable=not self.progress):
            claims = self._claims(cfg)
            spool = self.work / f"{cfg.name}.plan.jsonl"
            count = 0
            source, full = self.release.text_path(cfg.file), self.options.full
            if cfg.extended:
                source, self.grown[cfg.name] = extended_file(
                    cfg, self.release, self.counter, sizes, pools, self.work, self.options.full
                )
                full = self.options.full or cfg.leaf.loader != "icl"  # the grown file holds just the sample, in order
            with open(spool, "w", encoding="utf-8") as out:
                for row in plan_config(cfg, source, full, claims):
                    for path in row.images:
                        self.needed.setdefault(path, row.where or f"{cfg.file} row {row.id!r}")
                    out.write(json.dumps(row.to_json(), ensure_ascii=False) + "\n")
                    count += 1
            self.plans[cfg.name] = (spool, count)

    def _claims(self, cfg: Config) -> dict[str, list[str]] | None:
        """The summarization judge's claims of a Summ config's rows (VLMEvalKit's: where the release is beside its
        TSVs, else none: the paper's judge then leaves them unjudged)."""
        if cfg.leaf.dataset not in CLAIMS_FILES or self.release is None:
            return None
        name = CLAIMS_FILES[cfg.leaf.dataset]
        if cfg.version == VLMEVALKIT and not self.release.has_text(name):
            return None
        if name not in self.claims:
            self.claims[name] = read_claims(self.release.text_path(name), name)
        return self.claims[name]

    def estimate(self, kept: int) -> BuildEstimate:
        sizes = [self._size(path) for path in sorted(self.needed)]
        image_bytes: float = sum(s for s in sizes if s is not None)
        known = sum(1 for s in sizes if s is not None)
        if known < len(sizes):  # archived images: their sizes are known only once streamed
            image_bytes = image_bytes / max(known, 1) * len(sizes) if known else 0
        rows = sum(count for _, count in self.plans.values())
        tsv_images = 0
        if self.tsv is not None:
            rows += sum(count for _, count in self.tsv.spools.values())
            tsv_images = self.tsv.image_count()
            image_bytes *= (len(sizes) + tsv_images) / max(len(sizes), 1) if known else 0
        seconds = image_bytes / 200e6 + rows * 0.002  # read+hash ~200 MB/s; rows ~2 ms (bench/build_mmlongbench.py)
        return BuildEstimate(
            [c.name for c in self.pending],
            rows,
            image_bytes + rows * 4000,
            seconds,
            f"{len(self.needed) + tsv_images:,} distinct images to read once",
            "from the release's file sizes" if known else "image sizes unknown until the archives are read",
            kept,
        )

    def _size(self, path: str) -> int | None:
        if (
            self.release is not None
            and self.release.image_dir is not None
            and (self.release.image_dir / path).is_file()
        ):
            return (self.release.image_dir / path).stat().st_size
        return None

    # -------------------------------------------------------------------------------------- images

    def read_images(self, build: DatasetBuild) -> dict[str, Any]:
        started = time.perf_counter()
        total = 0

        def keep(key: str, data: bytes, where: str) -> None:
            nonlocal total
            size = self.damaged.size(key, data, f"{key} (needed by {where})")
            if size is None:
                return  # skipped: the rows showing it are left out
            width, height = size
            encoded = EncodedImage(data, hashlib.sha256(data).hexdigest(), width, height)
            self.images[key] = KeptImage(encoded.sha256, width, height)
            total += len(data)
            build.keep_image(encoded)  # the rows show it by reference

        count = len(self.needed) + (self.tsv.image_count() if self.tsv else 0)
        with tqdm(total=count, desc="read images", unit="img", disable=not self.progress) as bar:
            if self.release is not None and self.needed:
                missing = self.release.read_images(self.needed, lambda p, d: keep(p, d, self.needed[p]), bar.update)
                if missing:
                    shown = sorted(missing)[:MAX_REPORTED]
                    named = "; ".join(f"{path} (needed by {self.needed[path]})" for path in shown)
                    more = f" and {len(missing) - len(shown)} more" if len(missing) > len(shown) else ""
                    where = self.release.where_images()
                    raise BuildError(f"{len(missing)} image(s) not found in {where}: {named}{more}")
            if self.tsv is not None:
                needed = self.tsv.needed
                self.tsv.read_images(lambda n, p, d: keep(tsv_image_key(n, p), d, needed[n][p]), bar.update)
        return {
            "distinct_images": len(self.images),
            "image_bytes": total,
            "damaged_images": len(self.damaged.reasons),
            "read_seconds": round(time.perf_counter() - started, 3),
        }

    # --------------------------------------------------------------------------------------- write

    def write(self, build: DatasetBuild) -> dict[str, Any]:
        stats = self.read_images(build)
        over_length: list[str] = []
        for cfg in tqdm(self.pending, desc="write configs", unit="config", disable=not self.progress):
            over_length += self._write_config(build, cfg)
        if over_length:
            print(
                f"warning: {len(over_length)} row(s) count more tokens than their length label under "
                f"{self.counter.name} + {contract.TOKEN_RULE}: "
                + "; ".join(over_length[:MAX_REPORTED])
                + (" ..." if len(over_length) > MAX_REPORTED else ""),
                file=sys.stderr,
            )
        return {**stats, "over_length_rows": len(over_length)}

    def after_write(self, build: DatasetBuild) -> None:
        if (limited := self.damaged.caveat()) is not None:
            build.add_caveat("limited", limited)
        if any(cfg.extended for cfg in self.pending):
            build.add_caveat("ours", OURS_CAVEAT)

    def rows(self, build: DatasetBuild, config: str) -> RowWriter:
        """A config's writer: VLMEvalKit's configs carry the TSV's own columns beside the release configs'."""
        if BUILDABLE_CONFIGS[config].version != VLMEVALKIT:
            return super().rows(build, config)
        return RowWriter(build, config, tsv_features(build.image_storage), self.counter)

    def _planned(self, cfg: Config) -> Iterator[tuple[PlannedRow, list[str]]]:
        """The config's planned rows, each with the keys of its images among those read."""
        if cfg.version == VLMEVALKIT:
            assert self.tsv is not None
            for plan in self.tsv.rows(cfg):
                yield plan, [tsv_image_key(cfg.length, path) for path in plan.images]
            return
        for _, line in read_lines(self.plans[cfg.name][0], total=None):
            plan = PlannedRow.from_json(json.loads(line))
            yield plan, plan.images

    def _source_file(self, cfg: Config) -> dict[str, str]:
        if cfg.version == VLMEVALKIT:
            assert self.tsv is not None
            return {"file": cfg.file, "file_sha256": self.tsv.tsv_sha256[cfg.length]}
        assert self.release is not None
        return {"file": cfg.file, "file_sha256": contract.file_sha256(self.release.text_path(cfg.file))}

    def _write_config(self, build: DatasetBuild, cfg: Config) -> list[str]:
        over: list[str] = []
        images_total = count = 0
        claims = self._claims(cfg) if cfg.version == VLMEVALKIT else None
        with self.rows(build, cfg.name) as writer:
            for plan, keys in self._planned(cfg):
                if (reason := self.damaged.reason(keys)) is not None:
                    self.damaged.leave_out(cfg.name, plan.id, reason)
                    continue
                count += 1
                row = writer.write(
                    make_tsv_row(cfg, plan, claims) if cfg.version == VLMEVALKIT else make_row(cfg, plan),
                    [self.images[key] for key in keys],
                    plan.images,
                    other_bytes=len(plan.prompt),
                )
                tokens = row[contract.TEXT_TOKENS] + sum(row[contract.IMAGE_TOKENS])
                if tokens > cfg.tokens:
                    over.append(
                        f"{cfg.name} {plan.id}: {row[contract.TEXT_TOKENS]:,} text + "
                        f"{sum(row[contract.IMAGE_TOKENS]):,} image tokens > {cfg.tokens:,}"
                    )
                images_total += len(plan.images)
            self.damaged.check_config(cfg.name, count)
            build.add_config(
                writer.close(),
                {
                    **self._source_file(cfg),
                    "over_length_rows": len(over),
                    "mean_images": round(images_total / count, 2) if count else 0.0,
                    **({"grown_from": cfg.leaf.file("128k"), **self.grown[cfg.name]} if cfg.name in self.grown else {}),
                    **self.damaged.manifest_fields(cfg.name),
                    **version_fields(cfg),
                },
            )
        return over
