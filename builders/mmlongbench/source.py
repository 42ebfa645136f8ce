"""MMLongBench's source: the authors' release (a folder, its archives, or the Hub) with VLMEvalKit's sets beside it, or
an offline fixture written into the work folder (`fixture`, `fixture:archives`, V1.1's layout `fixture:v1.1`, the
length-true `fixture:full`), and the card's licence that goes with it."""

from __future__ import annotations

from pathlib import Path

from builders.core.errors import BuildError
from builders.core.hub_source import FetchedRelease, fetch_release, parse_hub_source
from builders.core.tokens import TextTokenCounter
from builders.mmlongbench.fixture import FIXTURE_VERSION, write_fixture
from builders.mmlongbench.fixture_v1_1 import FIXTURE_V1_1_VERSION, write_v1_1_fixture
from builders.mmlongbench.full_fixture import FULL_FIXTURE_VERSION, write_full_source
from builders.mmlongbench.leaves import ALL_CONFIGS, LEAVES, LENGTHS, VLMEVALKIT, Config
from builders.mmlongbench.pools import family
from builders.mmlongbench.release import HUB_RELEASE, Release, hub_files
from builders.mmlongbench.vlmevalkit.fixture import write_vlmevalkit_fixture
from builders.mmlongbench.vlmevalkit.layout import hub_files as vlmevalkit_hub_files

# The card's licence fields: a release build is the authors' gathering of sources under their own terms.
RELEASE_CARD_LICENCE = {
    "license": "other",
    "license_name": "mmlongbench-sources",
    "license_link": "https://huggingface.co/datasets/ZhaoweiWang/MMLongBench",
}
RELEASE_LICENCE = (
    "The release gathers public datasets, each under its own terms, and the authors' terms of use cover the whole "
    "(the [dataset page](https://huggingface.co/datasets/ZhaoweiWang/MMLongBench) and the [code repository]"
    '(https://github.com/EdinburghNLP/MMLongBench)\'s "Misuse for malicious purposes"). Known terms of its sources: '
    "the Wikipedia passages (KILT's 2019 dump) are [CC BY-SA 3.0](https://creativecommons.org/licenses/by-sa/3.0/); "
    "Visual Haystack's images are MS COCO images, under their Flickr owners' terms ([COCO terms of use]"
    "(https://cocodataset.org/#termsofuse)); MM-NIAH's web pages come from [OBELICS]"
    "(https://huggingface.co/datasets/HuggingFaceM4/OBELICS) (CC BY 4.0); InfoSeek, ViQuAE, Stanford Cars, Food-101, "
    "SUN397, iNaturalist 2021, GovReport, Multi-LexSum, MMLongBench-Doc, LongDocURL and SlideVQA are under the terms "
    "their authors publish with them (see the Citation section). The benchmark's code is MIT-licensed. Check each "
    "source's terms before redistributing."
)
FULL_SOURCE = "fixture:full"
V1_1_SOURCE = "fixture:v1.1"
DEFAULT_FULL_IDS = 1


def open_release(
    source: str,
    workdir: Path,
    counter: TextTokenCounter | None = None,
    fixture_ids: int | None = None,
    cfgs: list[Config] | None = None,
) -> tuple[Release, str, dict[str, str]]:
    """`fixture`, `fixture:full` (written offline into `workdir`) or `release=DIR` / DIR -> (release, request id,
    caveats). `fixture_ids`: ids per file of `fixture:full`, whose rows fit their lengths under `counter`; it
    writes only the files `cfgs` read (each file is the same whichever others are written)."""
    root, source_id, caveats = open_source(source, workdir, counter, fixture_ids, cfgs)
    return Release(root, workdir), source_id, caveats


def open_source(
    source: str,
    workdir: Path,
    counter: TextTokenCounter | None = None,
    fixture_ids: int | None = None,
    cfgs: list[Config] | None = None,
) -> tuple[Path, str, dict[str, str]]:
    """`open_release`'s folder: the release's (and VLMEvalKit's sets beside it), written offline for a fixture. The
    fixtures `fixture`, `fixture:archives` and `fixture:v1.1` stand in for the whole Hub repo: VLMEvalKit's
    `vlmevalkit/` folder is written too when `cfgs` hold its configs, made from the fixture's own rows."""
    if fixture_ids is not None and source != FULL_SOURCE:
        raise BuildError(f"--fixture-ids sets the ids per file of --source {FULL_SOURCE}, not of --source {source}")
    tsv_lengths = list(dict.fromkeys(c.length for c in cfgs or [] if c.version == VLMEVALKIT))
    if source == FULL_SOURCE:
        if tsv_lengths:
            raise BuildError(
                f"--source {FULL_SOURCE} has no stand-in of VLMEvalKit's sets: build the vlmevalkit_* configs from "
                "--source fixture (or fixture:archives, fixture:v1.1), or from hf://ZhaoweiWang/MMLongBench"
            )
        ids = DEFAULT_FULL_IDS if fixture_ids is None else fixture_ids
        if ids < 1:
            raise BuildError(f"--fixture-ids should be at least 1, got {ids}")
        cfgs = cfgs or list(ALL_CONFIGS.values())
        pools = _pool_tokens(cfgs)
        root = write_full_source(
            workdir / "fixture-full", ids_per_file=ids, counter=counter, only=_full_files(cfgs), pools=pools
        )
        caveat = (
            f"the length-true offline fixture (builder fixture:full v{FULL_FIXTURE_VERSION}, {ids} id(s) per "
            "file): drawn photos and pages, and passages of random words, filling each row to its length; "
            "scores on it are not comparable with the paper's"
        )
        # The pools change the files they go in: a build with them is another source.
        pooled = f"-pools{max(pools.values()) // 1024}k" if pools else ""
        return root, f"fixture-full-v{FULL_FIXTURE_VERSION}-ids{ids}{pooled}", {"synthetic": caveat}
    if source in ("fixture", "fixture:archives"):
        root = write_fixture(workdir / "fixture", archives=source.endswith("archives"))
        caveat = (
            f"the offline fixture release (builder fixture v{FIXTURE_VERSION}): a few drawn images and "
            "nonsense text in the release's formats; scores on it are not comparable with the paper's"
        )
        source_id = f"fixture-v{FIXTURE_VERSION}"
    elif source == V1_1_SOURCE:
        root = write_v1_1_fixture(workdir / "fixture")
        caveat = (
            f"the offline fixture release in V1.1's layout (builder fixture:v1.1 v{FIXTURE_V1_1_VERSION}): the "
            "fixture's drawn images and nonsense text under the Hub's archive names, each VRAG file with one example "
            "whose image path holds a double quote; scores on it are not comparable with any published number"
        )
        source_id = f"fixture-v1.1-v{FIXTURE_V1_1_VERSION}"
    else:
        folder = source.split("=", 1)[1] if source.startswith("release=") else source
        return Path(folder), "release", {}
    if tsv_lengths:
        write_vlmevalkit_fixture(root, workdir, tsv_lengths)
    return root, source_id, {"synthetic": caveat}


def fetch_hub_release(source: str, cfgs: list[Config], view: Path, progress: bool = True) -> FetchedRelease:
    """`hf://ORG/NAME[@REVISION]`: the release files these configs read (VLMEvalKit's configs: their lengths' TSVs and
    image archives under `vlmevalkit/`), downloaded into the Hub cache, verified, and linked into the folder `view`
    (in the work folder), which is then read as the release folder."""
    release_cfgs = [c for c in cfgs if c.version != VLMEVALKIT]
    tsv_lengths = list(dict.fromkeys(c.length for c in cfgs if c.version == VLMEVALKIT))
    files = (hub_files(release_cfgs) if release_cfgs or not tsv_lengths else []) + vlmevalkit_hub_files(tsv_lengths)
    return fetch_release(parse_hub_source(source), HUB_RELEASE, files, progress=progress, view=view)


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
