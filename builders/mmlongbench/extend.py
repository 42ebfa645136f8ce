"""Configs past 128K (256K, 512K, 1M): ours, not the paper's. Each row is a 128K row of the release, same id and
same depth or permutation, with its haystack grown from the release's own pools (`pools`) under the paper's
length-control rules (spec §3.3), until one more unit would pass the length:

- VRAG: more 100-word passages, hard negatives ranked with BM25 (`bm25s`) for the entity name and the question
  over the release's passage pool, leaving out passages that contain an answer or the entity name;
- VH: more negative images of the row's anchor object (images known not to contain it, `pools`);
- MM-NIAH: more OBELICS passages and images, at the row's own ratio of passages to images (image-counting rows
  get a count of 0 for each image added);
- ICL: more demonstration rounds. Class rule: the 128K file's 50 classes and their integer labels stay (the
  paper grows classes 5 -> 50 up to 128K only to keep about 10 shots per class; the release holds no other
  class with a label), so each new round is one unseen exemplar per class, in a shuffled order, the last round
  cut to fit; rounds stop when a class has no unseen exemplar left;
- DocVQA: more negative documents, padded alternately left and right, the last one cut at page granularity.

New passages, images and negatives are spread evenly between the 128K row's units, so every unit of the 128K row
(needles included) keeps its relative place: a needle at depth d stays at depth d, a permutation stays.
Summarization has no config past 128K (`leaves.EXTENDED_LEAVES`). Draws come from a seed of (42, leaf, row),
so a row's 512K haystack continues its 256K one, and a build is deterministic. A row whose pool runs out ends
short of its length; the manifest counts such rows.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from builders.core.contract import IMAGE_PLACEHOLDER
from builders.core.errors import BuildError
from builders.core.tokens import TextTokenCounter
from builders.mmlongbench.image_sizes import ImageSizes
from builders.mmlongbench.leaves import Config
from builders.mmlongbench.pools import (
    NiahUnit,
    Pools,
    anchor_of,
    family,
    gather,
    icl_file,
    niah_units,
    numbered_rows,
    passage_key,
)
from builders.mmlongbench.prompts import ASSEMBLERS, PASSAGE_TEMPLATE, Assembled, assemble_icl
from builders.mmlongbench.release import Release
from builders.mmlongbench.sampling import OFFICIAL_SEED, row_seed, sampled_ids, shuffled_indices

SHUFFLED = frozenset({"docqa"})


@dataclass
class Growth:
    """A 128K row and how it grows: `build(k)` is the release row with the first k of `units` added."""

    units: list[Any]
    build: Callable[[int], dict[str, Any]]
    unit_text: Callable[[Any], str]
    unit_images: Callable[[Any], list[str]]


def stretch(base: list[Any], extra: list[Any]) -> list[Any]:
    """`base` with `extra` spread evenly over its gaps: unit i of n lands near i/(n-1) of the result, so the first
    and last stay first and last and every needle keeps its depth."""
    if len(base) < 2:
        return base + extra
    out: list[Any] = []
    gaps = len(base) - 1
    for i, unit in enumerate(base):
        out.append(unit)
        if i < gaps:
            out += extra[i * len(extra) // gaps : (i + 1) * len(extra) // gaps]
    return out


class Extender:
    """Grows one extended config's rows; `pools` are shared by a leaf family's configs."""

    def __init__(
        self, cfg: Config, release: Release, counter: TextTokenCounter, sizes: ImageSizes, pools: Pools
    ) -> None:
        self.cfg = cfg
        self.release = release
        self.counter = counter
        self.sizes = sizes
        self.pools = pools
        self.short = 0  # rows (ICL: exemplar sets) whose pool ran out before their length
        self.grown = 0
        self._bm25: Any = None
        self._lowered: list[str] = []  # the VRAG pool's passages, lower-cased once for the answer/entity filter

    def _rng(self, key: str) -> random.Random:
        return random.Random(row_seed(OFFICIAL_SEED, self.cfg.leaf.name, key))

    # ------------------------------------------------------------------ growth per loader

    def _vrag(self, row: dict[str, Any], where: str, key: str) -> Growth:
        ctxs = list(row.get("ctxs") or [])
        answers = row.get("answer")
        answers = [answers] if isinstance(answers, str) else [a for a in answers or [] if isinstance(a, str)]
        gold = row.get("positive_ctxs") or [c for c in ctxs if any(_contains(_passage_text(c), a) for a in answers)]
        entities = sorted({str(c.get("title", "")) for c in gold if isinstance(c, dict) and c.get("title")})
        banned = [a for a in answers if a.strip()] + entities
        query = " ".join([*entities, str(row.get("original_question") or row.get("question") or "")])
        shown = {passage_key(c) for c in ctxs}
        banned = [b.strip().lower() for b in banned if b.strip()]
        ranked = [
            self.pools.passages[i]
            for i in self._ranked(query)
            if passage_key(self.pools.passages[i]) not in shown and not any(b in self._lowered[i] for b in banned)
        ]
        return Growth(
            ranked,
            lambda k: {**row, "ctxs": stretch(ctxs, ranked[:k])},
            lambda p: PASSAGE_TEMPLATE.format(**p) + "\n\n",
            lambda p: [],
        )

    def _ranked(self, query: str) -> list[int]:
        """The pool's passages (their indices) by BM25 score for `query`, best first."""
        try:
            import bm25s
        except ImportError:
            raise BuildError("the VRAG configs past 128K rank hard negatives with bm25s: pip install bm25s") from None
        corpus = self.pools.passages
        if not corpus:
            return []
        if self._bm25 is None:
            texts = [_passage_text(p) for p in corpus]
            self._lowered = [t.lower() for t in texts]
            self._bm25 = bm25s.BM25()
            self._bm25.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        words = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
        scores = self._bm25.get_scores(words) if words else np.zeros(len(corpus))
        # Best first; ties keep the pool's order, so the ranking is deterministic.
        return [int(i) for i in np.lexsort((np.arange(len(corpus)), -np.asarray(scores)))]

    def _vh(self, row: dict[str, Any], where: str, key: str) -> Growth:
        ctxs = list(row.get("ctxs") or [])
        pool = self.pools.by_anchor.get(anchor_of(str(row.get("question", "")), where), [])
        shown = set(ctxs)
        extra = [i for i in pool if i not in shown]
        self._rng(key).shuffle(extra)
        return Growth(extra, lambda k: {**row, "ctxs": stretch(ctxs, extra[:k])}, lambda i: "\n", lambda i: [i])

    def _mmniah(self, row: dict[str, Any], where: str, key: str) -> Growth:
        units = niah_units(row)
        images = [image for _, shown in units for image in shown]
        if len(images) != len(row.get("image_list") or []) or not all(images):
            raise BuildError(
                f"{where}: its ctxs hold {len(images)} <image> places but image_list names "
                f"{len(row.get('image_list') or [])} images"
            )
        counts = row.get("answer") if self.cfg.leaf.loader == "mmniah_image_count" else None
        if counts is not None and (not isinstance(counts, list) or len(counts) != len(images)):
            raise BuildError(
                f"{where}: an image-counting answer should give one count per haystack image "
                f"({len(images)}), to add a 0 for each image added"
            )
        shown = {text for text, _ in units} | set(images)
        rng = self._rng(key)
        passages = [p for p in self.pools.passages if p not in shown]
        pictures = [p for p in self.pools.images if p not in shown]
        rng.shuffle(passages)
        rng.shuffle(pictures)
        passage_count = sum(1 for text, imgs in units if not imgs)
        extra = _interleave(passages, pictures, passage_count, len(images))
        added = set(pictures)

        def build(k: int) -> dict[str, Any]:
            ctxs, image_list, answer = [], [], []
            old = iter(counts or [])
            for text, imgs in stretch(units, extra[:k]):
                ctxs.append({"text": text})
                image_list += imgs
                if counts is not None:
                    answer += [0 if image in added else next(old) for image in imgs]
            out = {**row, "ctxs": ctxs, "image_list": image_list}
            if counts is not None:
                out["answer"] = answer
            return out

        return Growth(extra, build, lambda u: u[0] + "\n\n", lambda u: list(u[1]))

    def _docqa(self, row: dict[str, Any], where: str, key: str) -> Growth:
        pages = list(row.get("page_list") or [])
        shown = {p.rsplit("/", 1)[0] for p in pages if isinstance(p, str)}
        docs = [d for d in self.pools.documents if d not in shown]
        self._rng(key).shuffle(docs)
        units = [(side % 2, page) for side, doc in enumerate(docs) for page in self.pools.documents[doc]]

        def build(k: int) -> dict[str, Any]:
            right = [p for side, p in units[:k] if side == 1]
            return {**row, "page_list": _left_padding(units[:k]) + pages + right}

        return Growth(units, build, lambda u: f"Document {u[1].split('/')[-2]:.15} (page 000): \n\n", lambda u: [u[1]])

    # ------------------------------------------------------------------ fitting

    def fit(self, growth: Growth, where: str, limit: int, measure: Callable[[dict[str, Any]], int]) -> dict[str, Any]:
        """The row with as many units as fit in `limit` (counted as the build counts: text + image tokens): units
        are costed one by one until the next would not fit, then the whole row is counted and cut back if needed."""
        self.sizes.fetch({i: where for u in growth.units for i in growth.unit_images(u)})
        total = measure(growth.build(0))
        costs: list[int] = []
        for unit in growth.units:
            cost = self.counter.count(growth.unit_text(unit).replace(IMAGE_PLACEHOLDER, "")) + sum(
                self.sizes.tokens(i) for i in growth.unit_images(unit)
            )
            if total + cost > limit:
                break
            total += cost
            costs.append(cost)
        k = len(costs)
        mean_cost = max(1.0, sum(costs) / k) if k else 1.0
        while True:
            row = growth.build(k)
            tokens = measure(row)
            if tokens <= limit or k == 0:
                break
            k = max(0, k - max(1, math.ceil((tokens - limit) / mean_cost)))
        if tokens > limit:
            raise BuildError(f"{where}: the 128K row alone counts {tokens:,} tokens, over {limit:,}")
        self.grown += 1
        if k == len(growth.units) and limit - tokens > max(costs, default=0):
            self.short += 1  # the pool ran out well before the length
        return row

    def _measure(self, where: str) -> Callable[[dict[str, Any]], int]:
        assemble = ASSEMBLERS[self.cfg.leaf.loader]

        def measure(row: Mapping[str, object]) -> int:
            return self._tokens(assemble(row, where), where)

        return measure

    def _tokens(self, assembled: Assembled, where: str) -> int:
        """A row's tokens as the build counts them: its text by the build's counter, its images by their size."""
        self.sizes.fetch({i: where for i in assembled.images})
        return self.counter.count(assembled.prompt.replace(IMAGE_PLACEHOLDER, "")) + sum(
            self.sizes.tokens(i) for i in assembled.images
        )

    # ------------------------------------------------------------------ files

    def write(self, out: Path, full: bool) -> Path:
        """The extended config's rows, in the release's format, written to `out` (rows: the official sample of
        the 128K file in evaluation order, or all of it with `full`; ICL: the file with its exemplar sets
        grown). Plan it with `full=True`, except ICL (its draws are per row)."""
        if self.cfg.leaf.loader == "icl":
            out.write_text(json.dumps(self._icl()), encoding="utf-8")
            return out
        grow = {"vrag": self._vrag, "vh": self._vh, "docqa": self._docqa}.get(self.cfg.leaf.loader, self._mmniah)
        rows = self._base_rows(full)
        assemble = ASSEMBLERS[self.cfg.leaf.loader]
        # Every size in one pass (an archived release is streamed once, not once per row).
        self.sizes.fetch(
            {path: self.cfg.file for path in self.pools.image_paths()}
            | {
                path: f"{self.cfg.file}:{n}"
                for n, row in rows
                for path in assemble(row, f"{self.cfg.file}:{n} (id {row['id']!r})").images
            }
        )
        with open(out, "w", encoding="utf-8") as fh:
            for number, row in rows:
                where = f"{self.cfg.file}:{number} (id {row.get('id')!r}, grown to {self.cfg.length})"
                key = f"{row.get('id')}#{number}"
                grown = self.fit(grow(row, where, key), where, self.cfg.tokens, self._measure(where))
                fh.write(json.dumps(grown, ensure_ascii=False) + "\n")
        return out

    def _base_rows(self, full: bool) -> list[tuple[int, dict[str, Any]]]:
        # A row without an id is named by its line, as planning names it.
        rows = [(n, {**r, "id": r.get("id", f"line{n}")}) for n, r in numbered_rows(self.release, self.cfg.file)]
        n = None if full else self.cfg.leaf.sample
        if self.cfg.leaf.loader in SHUFFLED:
            return [rows[i] for i in shuffled_indices(len(rows), n)]
        try:
            keep = sampled_ids([r["id"] for _, r in rows], n)
        except TypeError:
            raise BuildError(
                f"{self.cfg.file}: ids mix strings and integers; the official sampler sorts them"
            ) from None
        return [(k, r) for k, r in rows if keep is None or r["id"] in keep]

    def _icl(self) -> dict[str, Any]:
        data = icl_file(self.release, self.cfg.file)
        self.sizes.fetch({path: self.cfg.file for path in self.pools.image_paths()})
        for domain, block in data.items():
            tests = [t for t in block.get("test_example", []) if isinstance(t, dict) and "image" in t]
            self.sizes.fetch({t["image"]: f"{self.cfg.file} (domain {domain!r})" for t in tests})
            widest = max(tests, key=lambda t: self.sizes.tokens(t["image"]), default=None)
            if widest is None:
                continue
            for s, exemplar_set in enumerate(block["exemplar_list"]):
                where = f"{self.cfg.file} (domain {domain!r}, exemplar set {s}, grown to {self.cfg.length})"
                growth = self._icl_rounds(domain, exemplar_set, f"{domain}/set{s}")

                def measure(candidate: dict[str, Any], where: str = where, widest: dict[str, Any] = widest) -> int:
                    shots = [item for demo_round in candidate["rounds"] for item in demo_round]
                    return self._tokens(assemble_icl(widest, shots, where), where)

                block["exemplar_list"][s] = self.fit(growth, where, self.cfg.tokens, measure)["rounds"]
        return data

    def _icl_rounds(self, domain: str, exemplar_set: list[list[dict[str, Any]]], key: str) -> Growth:
        labels = list(dict.fromkeys(item["id"] for demo_round in exemplar_set for item in demo_round))
        shown = {item["image"] for demo_round in exemplar_set for item in demo_round}
        rng = self._rng(key)
        unseen = {}
        for label in labels:
            unseen[label] = [i for i in self.pools.classes.get((domain, label), []) if i not in shown]
            rng.shuffle(unseen[label])
        depth = min((len(v) for v in unseen.values()), default=0)
        units = []
        for r in range(depth):  # one exemplar per class per round, the classes in a shuffled order
            order = list(labels)
            rng.shuffle(order)
            units += [(r, {"image": unseen[label][r], "id": label}) for label in order]

        def build(k: int) -> dict[str, Any]:
            rounds = [list(demo_round) for demo_round in exemplar_set]
            for r, item in units[:k]:
                if r + len(exemplar_set) == len(rounds):
                    rounds.append([])
                rounds[-1].append(item)
            return {"rounds": rounds}

        return Growth(units, build, lambda u: f"<image>\nlabel: {u[1]['id']}\n\n", lambda u: [u[1]["image"]])


def _interleave(passages: list[str], pictures: list[str], n_text: int, n_images: int) -> list[NiahUnit]:
    """Pool passages and images merged at the row's own ratio (an image after every n_text / n_images passages)."""
    if not pictures or not n_images:
        return [(p, ()) for p in passages]
    every = max(1.0, n_text / n_images)
    out: list[NiahUnit] = []
    images = iter(pictures)
    owed = 0.0
    for passage in passages:
        out.append((passage, ()))
        owed += 1
        if owed >= every and (image := next(images, None)) is not None:
            out.append((IMAGE_PLACEHOLDER, (image,)))
            owed -= every
    return out


def _left_padding(units: list[tuple[int, str]]) -> list[str]:
    """Left-padded documents, the latest outermost (each new one is added at the left edge)."""
    docs: list[list[str]] = []
    last = None
    for side, page in units:
        if side != 0:
            last = None
            continue
        folder = page.rsplit("/", 1)[0]
        if folder != last:
            docs.append([])
            last = folder
        docs[-1].append(page)
    return [page for doc in reversed(docs) for page in doc]


def _passage_text(passage: object) -> str:
    if isinstance(passage, dict):
        return f"{passage.get('title', '')} {passage.get('text', '')}"
    return str(passage)


def _contains(text: str, needle: str) -> bool:
    return bool(needle.strip()) and needle.strip().lower() in text.lower()


def extended_file(
    cfg: Config,
    release: Release,
    counter: TextTokenCounter,
    sizes: ImageSizes,
    pools: dict[str, Pools],
    work: Path,
    full: bool,
) -> tuple[Path, dict[str, int]]:
    """Write an extended config's release-format file into `work`; (its path, manifest counts)."""
    family_key = ",".join(leaf.name for leaf in family(cfg.leaf))
    if family_key not in pools:
        pools[family_key] = gather(cfg.leaf, release, cfg.file)
    extender = Extender(cfg, release, counter, sizes, pools[family_key])
    path = extender.write(work / f"{cfg.name}.grown.jsonl", full)
    unit = "exemplar_sets" if cfg.leaf.loader == "icl" else "rows"
    return path, {f"grown_{unit}": extender.grown, f"{unit}_short_of_length": extender.short}
