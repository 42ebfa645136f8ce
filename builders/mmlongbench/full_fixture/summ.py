"""The summarization files: a report's (or two case documents') pages from their start, cut from the end."""

from __future__ import annotations

import random

from builders.mmlongbench import full_images
from builders.mmlongbench.full_fixture.units import (
    FixtureSource,
    Row,
    checked,
    counted,
    fit,
    page_cost,
    page_images,
    passage,
)
from builders.mmlongbench.leaves import Leaf


def govreport_pages(base: int) -> int:
    """Pages of the id's report: 52-60, long enough for 128K and within the paper's 128K + 24K cut (§2.4)."""
    return 52 + (base * 5) % 9


def summ_docs(leaf: Leaf, ids: int) -> list[str]:
    return [f"gao-{12 + base}-{156 + base}" if leaf.loader == "govreport" else f"case-{base}" for base in range(ids)]


def summ_rows(src: FixtureSource, leaf: Leaf, tokens: int, base: int) -> list[Row]:
    """The document's pages from its start, cut from the end (Multi-LexSum: its two documents cut evenly)."""
    rng = random.Random(full_images.seed_of(f"{leaf.name}/{base}"))
    root = f"summ/{leaf.dataset}"
    doc = summ_docs(leaf, base + 1)[base]
    if leaf.loader == "govreport":
        docs = [page_images(src, root, doc, govreport_pages(base))]
        row: Row = {
            "id": f"{leaf.dataset}_{doc}",
            "summary": [
                {"section_title": "Why GAO Did This Study", "paragraphs": [passage(rng, 60)]},
                {"section_title": "What GAO Found", "paragraphs": [passage(rng, 80), passage(rng, 50)]},
                {"section_title": "What GAO Recommends", "paragraphs": [passage(rng, 30)]},
            ],
        }
    else:
        docs = [page_images(src, root, f"{doc}-d{d}", 27 + (base * 3 + d) % 8) for d in range(2)]
        row = {"id": f"{leaf.dataset}_{doc}", "summary": passage(rng, 220)}
    # Pages join in turn from each document's start, so a cut falls evenly on the documents' ends.
    order = [doc_pages[k] for k in range(max(map(len, docs))) for doc_pages in docs if k < len(doc_pages)]
    fixed = counted(src, leaf, {**row, "image_list": []})
    shown = set(order[: fit(tokens - fixed, (page_cost(src, p, 1) for p in order))])
    row["image_list"] = [p for doc_pages in docs for p in doc_pages if p in shown]
    exhausted = len(shown) == len(order)
    return checked(src, leaf, tokens, [row], max(page_cost(src, p, 1) for p in order), exhausted)
