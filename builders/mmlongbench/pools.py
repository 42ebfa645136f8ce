"""The release's own pools, which the configs past 128K draw their extra haystack from (`extend`).

Each pool is gathered from every release file of a leaf family (all lengths), deduplicated, in file order:

- VRAG: every 100-word passage of the VRAG files (by `doc_id`, else title and text);
- VH: per anchor object (the X of "For the image with X, is there ...?"), the images known not to contain it:
  those a row with that anchor shows as a negative. The release does not label needles, so a row's needles are
  found from its id's depth/permutation rows, where only the needles move: an image that is missing from one of
  them, or has other neighbours in one than in another, may be a needle (or stand beside one) and is never pooled;
- MM-NIAH: OBELICS passages and images of the haystacks, less whatever may be a needle (found as for VH: a
  passage holding a text needle differs between the depth rows, an image needle moves) and less every image of
  the image-counting files (their answers count the needle pasted into each image);
- DocVQA: every document's pages of the dataset, by the document's folder (the id its page labels show), in page order;
- ICL: per class of the 128K file, every exemplar image the release shows with that class: labels are integers
  drawn per file, so another file's class joins a 128K class through an exemplar image the two share; test
  images never join a pool.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from builders.core.contract import IMAGE_PLACEHOLDER
from builders.core.errors import BuildError
from builders.core.release_bounds import read_file
from builders.mmlongbench.bounds import MMLB_JSON_FILE
from builders.mmlongbench.leaves import LEAVES, LENGTHS, Leaf
from builders.mmlongbench.plan import parse_row
from builders.mmlongbench.release import Release, read_lines

Item = TypeVar("Item", bound=Hashable)  # a unit of a row (a passage, an image, a (text, images) pair)

ANCHOR = re.compile(r"for the image with (?:an? |the )?(.+?)\s*,", re.IGNORECASE)
PAGE_NUMBER = re.compile(r"(\d+)(?!.*\d)")


def family(leaf: Leaf) -> list[Leaf]:
    """The leaves whose files share one pool with `leaf`: VH-Single and VH-Multi draw from one COCO pool, the six
    MM-NIAH files from one OBELICS pool, the VRAG files from one passage pool; ICL and DocVQA keep to their dataset."""
    kind = _kind(leaf)
    own_dataset = kind in ("icl", "docqa")  # classes and documents stay within their dataset
    return [other for other in LEAVES if _kind(other) == kind and (not own_dataset or other.dataset == leaf.dataset)]


def _kind(leaf: Leaf) -> str:
    return "mmniah" if leaf.loader.startswith("mmniah") else leaf.loader


def family_files(leaf: Leaf) -> list[str]:
    return sorted({other.file(length) for other in family(leaf) for length in LENGTHS})


def numbered_rows(release: Release, relpath: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, row) of a release jsonl file; a line that is not a JSON object is a `BuildError` naming it."""
    for number, line in read_lines(release.text_path(relpath), relpath):
        yield number, parse_row(line, f"{relpath}:{number}")


def jsonl_rows(release: Release, relpath: str) -> Iterator[dict[str, Any]]:
    return (row for _, row in numbered_rows(release, relpath))


def passage_key(passage: object) -> Hashable:
    if isinstance(passage, dict):
        return passage.get("doc_id") or (str(passage.get("title")), str(passage.get("text")))
    return json.dumps(passage, sort_keys=True)


def moved(sequences: Sequence[Sequence[Hashable]]) -> set[Hashable]:
    """The items that may be needles among an id's depth/permutation rows: missing from one of them, or with other
    neighbours in one than in another. Negatives keep their order and only needles move, so this finds every needle
    that moves, and also the negatives beside a needle (left out too: the pool only needs to be safe)."""
    if len(sequences) < 2:
        return set()  # one row shows nothing about where its needle is: `pool_safe` leaves it all out
    common = set(sequences[0]).intersection(*map(set, sequences[1:]))
    out = {item for seq in sequences for item in seq if item not in common}
    around: dict[Hashable, tuple[Any, Any]] = {}
    for seq in sequences:
        for k, item in enumerate(seq):
            neighbours = (seq[k - 1] if k else None, seq[k + 1] if k + 1 < len(seq) else None)
            if around.setdefault(item, neighbours) != neighbours:
                out.add(item)
    return out


def pool_safe(sequences: Sequence[Sequence[Item]]) -> Iterator[Item]:
    """The items of one id's depth/permutation rows that no comparison shows moving, in order; none from a lone
    row."""
    if len(sequences) < 2:
        return
    suspect = moved(sequences)
    yield from (item for item in sequences[0] if item not in suspect)


def anchor_of(question: str, where: str) -> str:
    found = ANCHOR.search(question)
    if found is None:
        raise BuildError(
            f"{where}: cannot find the anchor object in the question {question[:80]!r} (expected "
            "'For the image with X, ...'): the VH pool is kept per anchor"
        )
    return found.group(1).strip().lower()


@dataclass
class Pools:
    """One leaf family's pools, gathered once per build and shared by its 256K, 512K and 1M configs."""

    passages: list[Any] = field(default_factory=list)  # VRAG passages, MM-NIAH text units
    images: list[str] = field(default_factory=list)  # MM-NIAH images
    by_anchor: dict[str, list[str]] = field(default_factory=dict)  # VH negatives
    documents: dict[str, list[str]] = field(default_factory=dict)  # DocVQA folder -> pages
    classes: dict[tuple[str, Any], list[str]] = field(default_factory=dict)  # ICL (domain, 128K label) -> images
    test_images: set[str | None] = field(default_factory=set)  # a test example without an image gives None

    def image_paths(self) -> set[str]:
        """Every image a row may be grown with (their sizes are read in one pass over the release)."""
        groups = [self.images, *self.by_anchor.values(), *self.documents.values(), *self.classes.values()]
        return {path for group in groups for path in group}


def gather(leaf: Leaf, release: Release, base_file: str) -> Pools:
    files = family_files(leaf)
    release.fetch_text(files)
    present = [f for f in files if release.has_text(f)]
    pools = Pools()
    if leaf.loader == "vrag":
        seen: set[Hashable] = set()
        for relpath in present:
            for row in jsonl_rows(release, relpath):
                for passage in row.get("ctxs") or []:
                    if (key := passage_key(passage)) not in seen:
                        seen.add(key)
                        pools.passages.append(passage)
    elif leaf.loader == "vh":
        _gather_vh(release, present, pools)
    elif leaf.loader.startswith("mmniah"):
        _gather_mmniah(release, present, pools)
    elif leaf.loader == "docqa":
        for relpath in present:
            for row in jsonl_rows(release, relpath):
                for page in row.get("page_list") or []:
                    if isinstance(page, str):
                        pages = pools.documents.setdefault(page.rsplit("/", 1)[0], [])
                        if page not in pages:
                            pages.append(page)
        for pages in pools.documents.values():
            pages.sort(key=_page_order)
    elif leaf.loader == "icl":
        _gather_icl(release, present, base_file, pools)
    return pools


def _page_order(path: str) -> tuple[int, str]:
    found = PAGE_NUMBER.search(path.rsplit("/", 1)[-1].split("-1024")[0])
    return (int(found.group(1)) if found else 0, path)


def _variant_rows(release: Release, relpath: str) -> Iterator[list[dict[str, Any]]]:
    """The rows of each id of a file, run by run (the release writes an id's depth rows one after another; an id
    met again later is a run of its own). One run at a time in memory: a 128K VH file holds ~2 million paths."""
    run: list[dict[str, Any]] = []
    for row in jsonl_rows(release, relpath):
        if run and row.get("id") != run[0].get("id"):
            yield run
            run = []
        run.append(row)
    if run:
        yield run


def _gather_vh(release: Release, files: Iterable[str], pools: Pools) -> None:
    seen: dict[str, set[str]] = {}
    for relpath in files:
        for rows in _variant_rows(release, relpath):
            anchor = anchor_of(str(rows[0].get("question", "")), f"{relpath} (id {rows[0].get('id')!r})")
            pool, known = pools.by_anchor.setdefault(anchor, []), seen.setdefault(anchor, set())
            for image in pool_safe([list(r.get("ctxs") or []) for r in rows]):
                if isinstance(image, str) and image not in known:
                    known.add(image)
                    pool.append(image)


NiahUnit = tuple[str, tuple[str, ...]]  # a haystack entry's text and the images its `<image>` places show


def niah_units(row: dict[str, Any]) -> list[NiahUnit]:
    """A MM-NIAH haystack as units in order: each `ctxs` entry with the images of `image_list` its places take."""
    images = iter(row.get("image_list") or [])
    units: list[NiahUnit] = []
    for ctx in row.get("ctxs") or []:
        text = str(ctx.get("text", "")) if isinstance(ctx, dict) else str(ctx)
        units.append((text, tuple(str(next(images, "")) for _ in range(text.count(IMAGE_PLACEHOLDER)))))
    return units


def _gather_mmniah(release: Release, files: Iterable[str], pools: Pools) -> None:
    seen: set[str] = set()
    for relpath in files:
        counting_images = "counting-image" in relpath
        for rows in _variant_rows(release, relpath):
            for text, images in pool_safe([niah_units(r) for r in rows]):
                if not images and text and IMAGE_PLACEHOLDER not in text and text not in seen:
                    seen.add(text)
                    pools.passages.append(text)
                elif text.strip() == IMAGE_PLACEHOLDER and images[0] and images[0] not in seen and not counting_images:
                    # (an image-counting file's images each show the pasted needle: never a clean haystack image)
                    seen.add(images[0])
                    pools.images.append(images[0])


def _gather_icl(release: Release, files: list[str], base_file: str, pools: Pools) -> None:
    data = {relpath: icl_file(release, relpath) for relpath in files}
    class_of_image: dict[str, tuple[str, Any]] = {}
    for domain, block in data[base_file].items():
        for exemplar_set in block.get("exemplar_list", []):
            for demo_round in exemplar_set:
                for item in demo_round:
                    key = (domain, item["id"])
                    class_of_image.setdefault(item["image"], key)
                    pool = pools.classes.setdefault(key, [])
                    if item["image"] not in pool:
                        pool.append(item["image"])
    for block in (b for d in data.values() for b in d.values()):
        pools.test_images |= {t.get("image") for t in block.get("test_example", []) if isinstance(t, dict)}
    for relpath in files:
        if relpath == base_file:
            continue
        for domain, block in data[relpath].items():
            members: dict[Any, list[str]] = {}
            for exemplar_set in block.get("exemplar_list", []):
                for demo_round in exemplar_set:
                    for item in demo_round:
                        members.setdefault(item["id"], []).append(item["image"])
            for images in members.values():
                joined = next(
                    (class_of_image[i] for i in images if i in class_of_image and class_of_image[i][0] == domain), None
                )
                if joined is not None:
                    pool = pools.classes[joined]
                    pool += [i for i in dict.fromkeys(images) if i not in pool]
    for key, pool in pools.classes.items():
        pools.classes[key] = [i for i in pool if i not in pools.test_images]


def icl_file(release: Release, relpath: str) -> dict[str, Any]:
    """An ICL file of the release, read within its bound, parsed, and checked to hold exemplars that each name an
    image and a class id; anything else is a `BuildError` naming it."""
    path: Path = release.text_path(relpath)
    try:
        data = json.loads(read_file(path, MMLB_JSON_FILE, relpath))
        for block in data.values():
            for exemplar_set in block["exemplar_list"]:
                for demo_round in exemplar_set:
                    for item in demo_round:
                        item["image"], item["id"]  # noqa: B018 - checked here so the join can index them
    # ValueError: not JSON, or an integer past the int(str) digit limit
    except (ValueError, AttributeError, KeyError, TypeError, RecursionError) as exc:
        raise BuildError(
            f"{relpath}: expected {{domain: {{exemplar_list: [[[{{image, id}}]]], test_example}}}} "
            f"({type(exc).__name__}: {exc})"
        ) from None
    return data
