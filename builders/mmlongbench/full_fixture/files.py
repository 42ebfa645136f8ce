"""The length-true release's files: each leaf family's generator over ids and lengths, the pools past 128K,
the claims files; written with their drawn images."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path

from builders.core.tokens import ApproxTokenCounter, TextTokenCounter
from builders.mmlongbench import full_images
from builders.mmlongbench.full_fixture.docqa import docqa_rows
from builders.mmlongbench.full_fixture.icl import icl_file
from builders.mmlongbench.full_fixture.mmniah import mmniah_rows
from builders.mmlongbench.full_fixture.summ import summ_docs, summ_rows
from builders.mmlongbench.full_fixture.units import (
    POOL_BASE,
    POOL_FILE,
    POOL_MARGIN,
    POOL_STRIDE,
    FixtureSource,
    Row,
    passage,
)
from builders.mmlongbench.full_fixture.vh import vh_rows
from builders.mmlongbench.full_fixture.vrag import vrag_rows
from builders.mmlongbench.leaves import CLAIMS_FILES, LEAVES, LENGTHS, Leaf
from builders.mmlongbench.pools import family
from builders.mmlongbench.release import IMAGE_DIR, TEXT_DIR

ROW_WRITERS: dict[str, Callable[[FixtureSource, Leaf, int, int], list[Row]]] = {
    "vrag": vrag_rows,
    "vh": vh_rows,
    "mmniah_text": mmniah_rows,
    "mmniah_image_count": mmniah_rows,
    "mmniah_image_mc": mmniah_rows,
    "govreport": summ_rows,
    "multilexsum": summ_rows,
    "docqa": docqa_rows,
}


def pool_ids(tokens: int, members: int, per_id: int) -> int:
    """Pool ids (ICL: exemplar sets) of about `per_id` tokens each, over a family of `members` leaves, that give
    a 128K row `tokens` to grow to, with POOL_MARGIN; 0 at 128K and below."""
    need = tokens - LENGTHS["128k"]
    return math.ceil(need * POOL_MARGIN / (per_id * members)) + 1 if need > 0 else 0


def full_source_files(
    ids_per_file: int = 1,
    lengths: Mapping[str, int] | None = None,
    leaves: Iterable[str] | None = None,
    counter: TextTokenCounter | None = None,
    only: Collection[tuple[str, str]] | None = None,
    pools: Mapping[str, int] | None = None,
) -> tuple[dict[str, bytes], FixtureSource]:
    """(text files under mmlb_data/ by relative path, the source whose `shown` images they name, not yet
    drawn)."""
    pools = pools or {}
    lengths = dict(LENGTHS if lengths is None else lengths)
    chosen = leaves_named(leaves)
    src = FixtureSource(counter or ApproxTokenCounter())
    texts: dict[str, bytes] = {}
    for length, tokens in lengths.items():
        for leaf in chosen:
            if only is not None and (leaf.name, length) not in only:
                continue
            name = leaf.pattern.format(k=tokens // 1024)
            pool = pools.get(leaf.name, 0)
            if leaf.loader == "icl":
                sets = pool_ids(pool, 1, LENGTHS["128k"]) if length == "128k" else 0
                texts[name] = json.dumps(icl_file(src, leaf, length, tokens, ids_per_file, sets), indent=1).encode()
                continue
            rows = [row for base in range(ids_per_file) for row in ROW_WRITERS[leaf.loader](src, leaf, tokens, base)]
            if length == POOL_FILE:
                with src.drawn_flat():
                    rows += [
                        row
                        for i in range(pool_ids(pool, len(family(leaf)), tokens))
                        for row in ROW_WRITERS[leaf.loader](src, leaf, tokens, POOL_BASE + POOL_STRIDE * i)
                    ]
            texts[name] = "".join(json.dumps(row) + "\n" for row in rows).encode()
    for leaf in chosen:
        if leaf.dataset in CLAIMS_FILES and any(leaf.pattern.format(k=t // 1024) in texts for t in lengths.values()):
            rng = random.Random(full_images.seed_of(f"{leaf.name}/claims"))
            ids = [f"{leaf.dataset}_{doc}" for doc in summ_docs(leaf, ids_per_file)]
            texts[CLAIMS_FILES[leaf.dataset]] = "".join(
                json.dumps({"id": row_id, "claims": [passage(rng, 12) for _ in range(5)]}) + "\n" for row_id in ids
            ).encode()
    return texts, src


def leaves_named(names: Iterable[str] | None) -> list[Leaf]:
    by_name = {leaf.name: leaf for leaf in LEAVES}
    if names is None:
        return list(LEAVES)
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"unknown MMLongBench leaves {unknown}: expected names from {', '.join(by_name)}")
    return [by_name[n] for n in names]


def write_full_source(
    root: str | Path,
    *,
    ids_per_file: int = 1,
    lengths: Mapping[str, int] | None = None,
    leaves: Iterable[str] | None = None,
    counter: TextTokenCounter | None = None,
    only: Collection[tuple[str, str]] | None = None,
    reuse_images: bool = False,
    pools: Mapping[str, int] | None = None,
) -> Path:
    """Write the length-true release into `root` (`mmlb_data/`, `mmlb_image/`) and return `root`.

    `ids_per_file`: ids per leaf file (ICL: test examples per domain); `lengths`: label -> tokens (default the
    paper's five, 8K-128K; files are named `K{tokens // 1024}` as the release names them); `leaves`: leaf names
    (`niah_vh_single`, ...; default all 19); `counter`: the text counter the rows must fit under (default the
    builder's `approx`); `only`: (leaf, length) pairs, to write just those files of leaves x lengths. A file's
    bytes do not depend on which others are written. `reuse_images`: keep an image file already in
    `root/mmlb_image/` rather than draw it again (an image's path fixes its bytes, so a folder this function
    filled before, for other ids or lengths, can be shared; `mmlb_image` may be a link to it). `pools`: leaf ->
    the longest length past 128K (tokens) its family's configs grow to: its 64K file (ICL: 128K file) then also
    carries the pool they grow from (see the package's doc), which changes those files; without it, none.
    """
    if ids_per_file < 1:
        raise ValueError(f"ids_per_file should be at least 1, got {ids_per_file}")
    root = Path(root)
    texts, src = full_source_files(ids_per_file, lengths, leaves, counter, only, pools)
    for rel, data in texts.items():
        path = root / TEXT_DIR / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for rel in sorted(src.shown):
        path = root / IMAGE_DIR / rel
        if reuse_images and path.is_file():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(src.draw(rel))
    return root
