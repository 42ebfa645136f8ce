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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from builders.core import contract
from builders.core.benchmark import select_configs
from builders.core.benchmark_build import BenchmarkBuild, OpenedSource
from builders.core.card import FIXTURE_CARD_LICENCE, FIXTURE_LICENCE
from builders.core.dataset_build import BuilderInfo, DatasetBuild
from builders.core.errors import BuildError
from builders.core.estimate import BuildEstimate
from builders.core.hub_source import FetchedRelease, fetch_release, is_hub_source, parse_hub_source
from builders.core.image_check import DamagedImages
from builders.core.images import EncodedImage
from builders.core.parquet_writer import SHARD_BYTES
from builders.core.store import BudgetedStore, encoded_store
from builders.core.tokens import TextTokenCounter, make_text_counter
from builders.mmlongbench.ablations import unavailable
from builders.mmlongbench.extend import ImageSizes, extended_file
from builders.mmlongbench.fixture import FIXTURE_VERSION, write_fixture
from builders.mmlongbench.full_fixture import FULL_FIXTURE_VERSION, write_full_source
from builders.mmlongbench.leaves import (
    ABLATION_CONFIGS,
    ALL_CONFIGS,
    BUILDABLE_CONFIGS,
    CLAIMS_FILES,
    LEAVES,
    LENGTHS,
    Config,
)
from builders.mmlongbench.plan import plan_config
from builders.mmlongbench.pools import Pools, family
from builders.mmlongbench.release import HUB_RELEASE, Release, hub_files, read_lines
from builders.mmlongbench.rows import ImageInfo, PlannedRow, features, make_row

BUILDER_VERSION = "1.1.0"  # 1.1: ICL draws per row; the ablation configs
INFO = BuilderInfo(
    name="mmlongbench", module="builders.mmlongbench", version=BUILDER_VERSION,
    card={"pretty_name": "MMLongBench", "language": ["en"],
          "task_categories": ["visual-question-answering", "image-text-to-text"],
          "tags": ["long-context", "multimodal", "benchmark", "mmlongbench"]},
)
SAMPLING = "official eval.py/data.py @26197d2: seed 42, random.sample of sorted ids, Dataset.shuffle(42); " \
           "each ICL row's exemplar set and shot order drawn as the official loader draws them, from a seed of " \
           "(42, config, row id) (the official draws, made in forked workers that reseed from OS entropy, cannot be " \
           "reproduced)"
# The card's licence fields: a release build is the authors' gathering of sources under their own terms.
RELEASE_CARD_LICENCE = {"license": "other", "license_name": "mmlongbench-sources",
                        "license_link": "https://huggingface.co/datasets/ZhaoweiWang/MMLongBench"}
RELEASE_LICENCE = (
    "The release gathers public datasets, each under its own terms, and the authors' terms of use cover the whole "
    "(the [dataset page](https://huggingface.co/datasets/ZhaoweiWang/MMLongBench) and the [code repository]"
    "(https://github.com/EdinburghNLP/MMLongBench)'s \"Misuse for malicious purposes\"). Known terms of its sources: "
    "the Wikipedia passages (KILT's 2019 dump) are [CC BY-SA 3.0](https://creativecommons.org/licenses/by-sa/3.0/); "
    "Visual Haystack's images are MS COCO images, under their Flickr owners' terms ([COCO terms of use]"
    "(https://cocodataset.org/#termsofuse)); MM-NIAH's web pages come from [OBELICS]"
    "(https://huggingface.co/datasets/HuggingFaceM4/OBELICS) (CC BY 4.0); InfoSeek, ViQuAE, Stanford Cars, Food-101, "
    "SUN397, iNaturalist 2021, GovReport, Multi-LexSum, MMLongBench-Doc, LongDocURL and SlideVQA are under the terms "
    "their authors publish with them (see the Citation section). The benchmark's code is MIT-licensed. Check each "
    "source's terms before redistributing."
)
FULL_SOURCE = "fixture:full"
DEFAULT_FULL_IDS = 1
OURS_CAVEAT = ("the 256K, 512K and 1M configs are ours, not the paper's (MMLongBench stops at 128K): each row is its "
               "128K row grown from the release's own pools under the paper's length-control rules "
               "(builders/mmlongbench/extend.py); no published score exists at these lengths")
MAX_REPORTED = 5  # over-length rows named in the warning; all are counted in the manifest


def open_release(source: str, workdir: Path, counter: TextTokenCounter | None = None,
                 fixture_ids: int | None = None, cfgs: list[Config] | None = None
                 ) -> tuple[Release, str, dict[str, str]]:
    """`fixture`, `fixture:full` (written offline into `workdir`) or `release=DIR` / DIR -> (release, request id,
    caveats). `fixture_ids`: ids per file of `fixture:full`, whose rows fit their lengths under `counter`; it
    writes only the files `cfgs` read (each file is the same whichever others are written)."""
    if fixture_ids is not None and source != FULL_SOURCE:
        raise BuildError(f"--fixture-ids sets the ids per file of --source {FULL_SOURCE}, not of --source {source}")
    if source == FULL_SOURCE:
        ids = DEFAULT_FULL_IDS if fixture_ids is None else fixture_ids
        if ids < 1:
            raise BuildError(f"--fixture-ids should be at least 1, got {ids}")
        cfgs = cfgs or list(ALL_CONFIGS.values())
        pools = _pool_tokens(cfgs)
        root = write_full_source(workdir / "fixture-full", ids_per_file=ids, counter=counter,
                                 only=_full_files(cfgs), pools=pools)
        caveat = (f"the length-true offline fixture (builder fixture:full v{FULL_FIXTURE_VERSION}, {ids} id(s) per "
                  "file): drawn photos and pages, and passages of random words, filling each row to its length; "
                  "scores on it are not comparable with the paper's")
        # The pools change the files they go in: a build with them is another source.
        pooled = f"-pools{max(pools.values()) // 1024}k" if pools else ""
        return (Release(root, workdir), f"fixture-full-v{FULL_FIXTURE_VERSION}-ids{ids}{pooled}",
                {"synthetic": caveat})
    if source in ("fixture", "fixture:archives"):
        root = write_fixture(workdir / "fixture", archives=source.endswith("archives"))
        caveat = (f"the offline fixture release (builder fixture v{FIXTURE_VERSION}): a few drawn images and "
                  "nonsense text in the release's formats; scores on it are not comparable with the paper's")
        return Release(root, workdir), f"fixture-v{FIXTURE_VERSION}", {"synthetic": caveat}
    folder = source.split("=", 1)[1] if source.startswith("release=") else source
    return Release(folder, workdir), "release", {}


def fetch_hub_release(source: str, cfgs: list[Config], progress: bool = True) -> FetchedRelease:
    """`hf://ORG/NAME[@REVISION]`: the release files these configs read, downloaded into the Hub cache."""
    return fetch_release(parse_hub_source(source), HUB_RELEASE, hub_files(cfgs), progress=progress)


def _full_files(cfgs: list[Config]) -> set[tuple[str, str]]:
    """The (leaf, length) files these configs read (an ablation reading a main leaf's file counts as that leaf;
    the others have no file in the length-true fixture). A config past 128K grows its 128K file from its leaf
    family's pools, which are gathered from the family's files at every paper length."""
    by_pattern = {leaf.pattern: leaf.name for leaf in LEAVES}
    files = set()
    for cfg in cfgs:
        if cfg.extended:
            files |= {(member.name, length) for member in family(cfg.leaf) for length in LENGTHS}
        elif cfg.leaf.pattern in by_pattern:
            files.add((by_pattern[cfg.leaf.pattern], cfg.length))
    return files


def _pool_tokens(cfgs: list[Config]) -> dict[str, int]:
    """Leaf -> the longest length past 128K that a config of its family grows to: the pool fixture:full writes."""
    pools: dict[str, int] = {}
    for cfg in cfgs:
        if cfg.extended:
            for member in family(cfg.leaf):
                pools[member.name] = max(pools.get(member.name, 0), cfg.tokens)
    return pools


def build_mmlongbench(
    source: str = "fixture",
    out_dir: str | os.PathLike[str] = "data",
    configs: list[str] | None = None,
    *,
    full: bool = False,
    text_tokenizer: str = "approx",
    image_storage: str = contract.SHARED,
    overwrite: bool = False,
    progress: bool = False,
    command: list[str] | None = None,
    dry_run: bool = False,
    skip_bad_images: bool = False,
    shard_bytes: int = SHARD_BYTES,
    fixture_ids: int | None = None,
) -> Path | None:
    """Build the requested configs (default: the 95 and every ablation config the release can give) into
    `out_dir/mmlongbench` and return that path.

    `source`: `fixture` (offline, `fixture:archives` for the archive layout), `fixture:full` (offline, rows
    filled to their lengths, `fixture_ids` ids per file) or the folder holding the release (`mmlb_data/` or
    `mmlb_data.tar.gz`, and `mmlb_image/` or the image archives). Rows: the sample the
    official code evaluates, or every row with `full`. A build already in `out_dir` with the same request
    gets the missing configs added (unless `overwrite`); `dry_run` prints the plan and builds nothing. A damaged
    image stops the build, or, with `skip_bad_images`, the rows showing it are left out, listed in the manifest,
    and the build is flagged `limited`.
    """
    cfgs = [BUILDABLE_CONFIGS[name] for name in select_configs(configs, BUILDABLE_CONFIGS)]
    job = MMLongBenchBuild(source, cfgs, _asks_for_everything(configs), full, make_text_counter(text_tokenizer),
                           progress, DamagedImages(skip_bad_images), fixture_ids)
    return job.run(out_dir, image_storage=image_storage, overwrite=overwrite, shard_bytes=shard_bytes,
                   command=command, progress=progress, dry_run=dry_run)


def _asks_for_everything(configs: list[str] | None) -> bool:
    return not configs or "all" in {part.strip().lower() for item in configs for part in item.split(",")}


def _without_unavailable_ablations(cfgs: list[Config], release: Release) -> list[Config]:
    """A default build's configs less the ablation configs the release cannot give (said on stderr): the
    published release need not hold their files, and a benchmark build must not fail for an analysis set."""
    reasons = {cfg.name: unavailable(release, cfg) for cfg in cfgs if cfg.name in ABLATION_CONFIGS}
    skipped = {name: why for name, why in reasons.items() if why}
    if skipped:
        print(f"note: {len(skipped)} ablation config(s) left out, the release cannot give them: "
              + "; ".join(f"{name} ({why})" for name, why in list(skipped.items())[:MAX_REPORTED])
              + (" ..." if len(skipped) > MAX_REPORTED else ""), file=sys.stderr)
    return [cfg for cfg in cfgs if cfg.name not in skipped]


@dataclass
class MMLongBenchBuild(BenchmarkBuild):
    """MMLongBench's parts: the release (or a fixture written offline); the plan, memory flat in rows (the
    official sample, prompts assembled, spooled to the work folder; no image read); each distinct image read
    once; the rows."""

    info = INFO
    config_order = list(BUILDABLE_CONFIGS)

    source: str
    cfgs: list[Config]  # requested
    everything: bool  # no config named: the default set (no extended lengths, no ablation the release lacks)
    full: bool
    counter: TextTokenCounter
    progress: bool
    damaged: DamagedImages
    fixture_ids: int | None
    release: Release | None = None
    pending: list[Config] = field(default_factory=list)
    plans: dict[str, tuple[Path, int]] = field(default_factory=dict)  # config -> (spooled planned rows, row count)
    needed: dict[str, str] = field(default_factory=dict)  # image path -> the first row naming it
    images: dict[str, ImageInfo] = field(default_factory=dict)
    grown: dict[str, dict[str, int]] = field(default_factory=dict)  # extended config -> how its rows grew

    # -------------------------------------------------------------------------------------- source

    def open_source(self, work: Path | None) -> OpenedSource:
        assert work is not None
        self.work = work
        inputs: dict[str, Any] = {"source": self.source}
        source = self.source
        if is_hub_source(source):
            hub = fetch_hub_release(source, [c for c in self.cfgs if not (self.everything and c.extended)],
                                    self.progress)
            inputs["hub"] = hub.record()
            source = str(hub.folder)
        self.release, self.source_id, self.fixture_caveats = open_release(source, work, self.counter,
                                                                          self.fixture_ids, self.cfgs)
        if self.everything:
            # The lengths past 128K are ours and large: built only when named.
            self.cfgs = _without_unavailable_ablations([cfg for cfg in self.cfgs if not cfg.extended], self.release)
        card = FIXTURE_CARD_LICENCE if self.fixture_caveats else RELEASE_CARD_LICENCE
        return OpenedSource(inputs, self.fixture_caveats, card)

    def request(self) -> dict[str, Any]:
        return {"source": self.source_id, "configs": [cfg.name for cfg in self.cfgs],
                "rows": "full" if self.full else "paper", "text_tokenizer": self.counter.name, "sampling": SAMPLING,
                **self.damaged.request()}

    def card_context(self) -> dict[str, Any]:
        return {"licence": FIXTURE_LICENCE if self.fixture_caveats else RELEASE_LICENCE, "sampling": SAMPLING}

    def close(self) -> None:
        if self.release is not None:
            self.release.close()

    # ---------------------------------------------------------------------------------------- plan

    def plan(self, build: DatasetBuild) -> None:
        assert self.release is not None
        self.pending = [BUILDABLE_CONFIGS[name] for name in build.pending]
        if not self.pending:
            return
        self.release.fetch_text([cfg.file for cfg in self.pending]
                                + [CLAIMS_FILES[c.leaf.dataset] for c in self.pending if c.leaf.dataset in CLAIMS_FILES])
        claims_cache: dict[str, dict[str, list[str]]] = {}
        sizes, pools = ImageSizes(self.release), dict[str, Pools]()
        for cfg in tqdm(self.pending, desc="plan rows", unit="config", disable=not self.progress):
            claims = None
            if cfg.leaf.dataset in CLAIMS_FILES:
                name = CLAIMS_FILES[cfg.leaf.dataset]
                if name not in claims_cache:
                    claims_cache[name] = _read_claims(self.release.text_path(name), name)
                claims = claims_cache[name]
            spool = self.work / f"{cfg.name}.plan.jsonl"
            count = 0
            source, full = self.release.text_path(cfg.file), self.full
            if cfg.extended:
                source, self.grown[cfg.name] = extended_file(cfg, self.release, self.counter, sizes, pools,
                                                             self.work, self.full)
                full = self.full or cfg.leaf.loader != "icl"  # the grown file holds just the sample, in order
            with open(spool, "w", encoding="utf-8") as out:
                for row in plan_config(cfg, source, full, claims):
                    for path in row.images:
                        self.needed.setdefault(path, row.where or f"{cfg.file} row {row.id!r}")
                    out.write(json.dumps(row.to_json(), ensure_ascii=False) + "\n")
                    count += 1
            self.plans[cfg.name] = (spool, count)

    def estimate(self, kept: int) -> BuildEstimate:
        sizes = [self._size(path) for path in sorted(self.needed)]
        image_bytes = sum(s for s in sizes if s is not None)
        known = sum(1 for s in sizes if s is not None)
        if known < len(sizes):  # archived images: their sizes are known only once streamed
            image_bytes = image_bytes / max(known, 1) * len(sizes) if known else 0
        rows = sum(count for _, count in self.plans.values())
        seconds = image_bytes / 200e6 + rows * 0.002  # read+hash ~200 MB/s; rows ~2 ms (bench/build_mmlongbench.py)
        return BuildEstimate([c.name for c in self.pending], rows, image_bytes + rows * 4000, seconds,
                             f"{len(self.needed):,} distinct images to read once", "from the release's file "
                             "sizes" if known else "image sizes unknown until the archives are read", kept)

    def _size(self, path: str) -> int | None:
        assert self.release is not None
        if self.release.image_dir is not None and (self.release.image_dir / path).is_file():
            return (self.release.image_dir / path).stat().st_size
        return None

    # -------------------------------------------------------------------------------------- images

    def read_images(self, build: DatasetBuild, store: BudgetedStore[EncodedImage] | None) -> dict[str, Any]:
        assert self.release is not None
        started = time.perf_counter()
        total = 0

        def on_image(path: str, data: bytes) -> None:
            nonlocal total
            size = self.damaged.size(path, data, f"{path} (needed by {self.needed[path]})")
            if size is None:
                return  # skipped: the rows showing it are left out
            width, height = size
            image_info = ImageInfo(hashlib.sha256(data).hexdigest(), width, height)
            self.images[path] = image_info
            encoded = EncodedImage(data, image_info.sha256, width, height)
            total += len(data)
            if build.images is not None:
                build.images.add(encoded)
            else:
                assert store is not None
                store.put(path, encoded)

        with tqdm(total=len(self.needed), desc="read images", unit="img", disable=not self.progress) as bar:
            missing = self.release.read_images(self.needed, on_image, bar.update)
        if missing:
            shown = sorted(missing)[:MAX_REPORTED]
            named = "; ".join(f"{path} (needed by {self.needed[path]})" for path in shown)
            more = f" and {len(missing) - len(shown)} more" if len(missing) > len(shown) else ""
            raise BuildError(f"{len(missing)} image(s) not found in {self.release.where_images()}: {named}{more}")
        return {"distinct_images": len(self.images), "image_bytes": total, "damaged_images": len(self.damaged.reasons),
                "read_seconds": round(time.perf_counter() - started, 3)}

    # --------------------------------------------------------------------------------------- write

    def write(self, build: DatasetBuild) -> dict[str, Any]:
        store = None if build.images is not None else encoded_store(self.work / "images.spool", 0)
        try:
            stats = self.read_images(build, store)
            over_length: list[str] = []
            for cfg in tqdm(self.pending, desc="write configs", unit="config", disable=not self.progress):
                over_length += self._write_config(build, cfg, store)
        finally:
            if store is not None:
                store.close()
        if over_length:
            print(f"warning: {len(over_length)} row(s) count more tokens than their length label under "
                  f"{self.counter.name} + {contract.TOKEN_RULE}: " + "; ".join(over_length[:MAX_REPORTED])
                  + (" ..." if len(over_length) > MAX_REPORTED else ""), file=sys.stderr)
        return {**stats, "over_length_rows": len(over_length)}

    def after_write(self, build: DatasetBuild) -> None:
        if (limited := self.damaged.caveat()) is not None:
            build.add_caveat("limited", limited)
        if any(cfg.extended for cfg in self.pending):
            build.add_caveat("ours", OURS_CAVEAT)

    def _write_config(self, build: DatasetBuild, cfg: Config, store: BudgetedStore[EncodedImage] | None) -> list[str]:
        assert self.release is not None
        spool, _ = self.plans[cfg.name]
        over: list[str] = []
        images_total = count = 0
        with build.config_writer(cfg.name, features(build.image_storage)) as writer:
            for _, line in read_lines(spool):
                plan = PlannedRow.from_json(json.loads(line))
                if (reason := self.damaged.reason(plan.images)) is not None:
                    self.damaged.leave_out(cfg.name, plan.id, reason)
                    continue
                count += 1
                row = make_row(cfg, plan, self.images, self.counter)
                tokens = row[contract.TEXT_TOKENS] + sum(row[contract.IMAGE_TOKENS])
                if tokens > cfg.tokens:
                    over.append(f"{cfg.name} {plan.id}: {row[contract.TEXT_TOKENS]:,} text + "
                                f"{sum(row[contract.IMAGE_TOKENS]):,} image tokens > {cfg.tokens:,}")
                nbytes = len(plan.prompt)
                if store is not None:
                    encoded = [store.get(path) for path in plan.images]
                    row[contract.IMAGES] = [{"bytes": e.data, "path": path} for e, path in zip(encoded, plan.images, strict=True)]
                    nbytes += sum(len(e.data) for e in encoded)
                images_total += len(plan.images)
                writer.write(row, nbytes)
            self.damaged.check_config(cfg.name, count)
            build.add_config(writer.close(), {
                "file": cfg.file, "file_sha256": contract.file_sha256(self.release.text_path(cfg.file)),
                "over_length_rows": len(over), "mean_images": round(images_total / count, 2) if count else 0.0,
                **({"grown_from": cfg.leaf.file("128k"), **self.grown[cfg.name]} if cfg.name in self.grown else {}),
                **self.damaged.manifest_fields(cfg.name),
            })
        return over


def _read_claims(path: Path, name: str) -> dict[str, list[str]]:
    claims: dict[str, list[str]] = {}
    for number, line in read_lines(path, name):
        try:
            item = json.loads(line)
            claims[str(item["id"])] = [str(c) for c in item["claims"]]
        except (json.JSONDecodeError, KeyError, TypeError, RecursionError):
            raise BuildError(f"{name}:{number}: expected {{\"id\": ..., \"claims\": [...]}}") from None
    return claims

