"""The DocVQA files: a document around its answer page, padded with other documents."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count

from builders.mmlongbench.full_fixture.units import (
    FixtureSource,
    Row,
    checked,
    counted,
    page_cost,
    page_images,
)
from builders.mmlongbench.leaves import Leaf

DOC_PREFIX = {"mmlongbench_doc": "mmdoc", "longdocurl": "ldurl", "slidevqa": "deck"}  # no "page": see page_label
DOCQA_ANSWERS = (
    ("3", "Integer"),
    ("12.5", "Float"),
    ("harbour council", "String"),
    ("Not answerable", "None"),
    ('["railway", "2019"]', "List"),
)


def docqa_rows(src: FixtureSource, leaf: Leaf, tokens: int, base: int) -> list[Row]:
    """The id's document around its answer page, cut evenly from both sides; a document too short for the length
    is padded with other documents, alternately on the left and the right, the last one cut at a page."""
    slides = leaf.dataset == "slidevqa"
    root = f"docqa/{leaf.dataset}"
    own_pages = 20 if slides else (24 + (base * 7) % 20 if leaf.dataset == "mmlongbench_doc" else 30 + (base * 11) % 30)
    prefix = DOC_PREFIX[leaf.dataset]
    doc = f"{prefix}-{base:04d}"
    pages = page_images(src, root, doc, own_pages, slides)
    answer_page = (base * 5 + 3) % own_pages
    answer, answer_format = DOCQA_ANSWERS[base % len(DOCQA_ANSWERS)]
    row: Row = {
        "id": doc,
        "doc_name": doc,
        "question": f"What does the table on page {answer_page + 1} report?",
        "answer": answer,
        "answer_format": answer_format,
        "ans_page_list": [answer_page],
    }
    # Growth events: ("L" | "R", page); the row shows the answer page and the first events that fit.
    events: list[tuple[str, str]] = []
    left, right = answer_page - 1, answer_page + 1
    while left >= 0 or right < own_pages:
        if right < own_pages and (left < 0 or len(events) % 2 == 1):
            events.append(("R", pages[right]))
            right += 1
        else:
            events.append(("L", pages[left]))
            left -= 1

    def padding() -> Iterator[tuple[str, str]]:
        # Other documents of the dataset (shared by the ids: id b starts at the b-th), left, right, left, ...;
        # a left one joins from its end, so whichever side a cut falls on, the pages shown are contiguous.
        for j in count():
            neg = f"{prefix}-x{base + j:03d}"
            neg_pages = page_images(src, root, neg, 20 if slides else 8 + ((base + j) * 5) % 17, slides)
            side = "L" if j % 2 == 0 else "R"
            yield from ((side, p) for p in (reversed(neg_pages) if side == "L" else neg_pages))

    split = -1
    fixed = counted(src, leaf, {**row, "page_list": [pages[answer_page]]})

    def all_events() -> Iterator[tuple[str, str]]:
        yield from events
        yield from padding()

    chosen: list[tuple[str, str]] = []
    used = 0
    for side, path in all_events():
        cost = page_cost(src, path, split)
        if used + cost > tokens - fixed:
            break
        chosen.append((side, path))
        used += cost
    lefts = [p for side, p in chosen if side == "L"]
    rights = [p for side, p in chosen if side == "R"]
    row["page_list"] = lefts[::-1] + [pages[answer_page]] + rights
    unit = max(page_cost(src, p, split) for p in row["page_list"])
    return checked(src, leaf, tokens, [row], unit)
