"""The offline stand-in: a tiny release in the release's own layout (`samples.json`, `documents/*.pdf`), written
on the spot with pymupdf, deterministic (no ids or dates: two writes are byte-identical). As in the release's
documents, some pages are text (drawn with a standard font) and some are one picture over the page (a chart, a
scanned page), so that rendering them takes pymupdf's text and image paths.

The questions cover every answer format (Str, Int, Float, List and "Not answerable" as None), single- and cross-page
evidence, and several evidence sources and document types, as the release's do.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from PIL import Image, ImageDraw

from builders.mmlongbench_doc.render import import_pymupdf

FIXTURE_VERSION = "2"
PAGE_POINTS = (200, 260)  # the official 144 dpi renders a page at twice its size in points (72 an inch): 400 x 520
TEXT, PICTURE = "text", "picture"
Page = tuple[str, list[str]]  # TEXT or PICTURE, and its lines

# doc_id -> (doc_type, each page: how it is drawn and its lines)
DOCUMENTS: dict[str, tuple[str, list[Page]]] = {
    "fixture-report.pdf": (
        "Research report / Introduction",
        [
            (TEXT, ["Survey of reading", "2016 report"]),
            (PICTURE, ["Readers: 52%", "Non-readers: 48%"]),
            (TEXT, ["Age groups", "18-29, 30-49, 50+"]),
            (TEXT, ["Contact", "https://example.org"]),
        ],
    ),
    "fixture-paper.pdf": (
        "Academic paper",
        [
            (TEXT, ["A tiny model", "Table 1: accuracy 91.5"]),
            (TEXT, ["Layers: 12", "Heads: 8"]),
            (PICTURE, ["References", "3 works cited"]),
        ],
    ),
    "fixture-guide.pdf": (
        "Guidebook",
        [(PICTURE, ["Campus guide", "Library opens 9 a.m."]), (TEXT, ["Cafes: 3", "Gyms: 2"])],
    ),
}
SAMPLES = [
    ("fixture-report.pdf", "What share of people read?", "52%", "[2]", "['Chart']", "Float"),
    ("fixture-report.pdf", "Which age groups are listed?", "['18-29', '30-49', '50+']", "[3]", "['Table']", "List"),
    (
        "fixture-report.pdf",
        "What is the contact website?",
        "https://example.org",
        "[4]",
        "['Pure-text (Plain-text)']",
        "Str",
    ),
    ("fixture-report.pdf", "How many pages does the appendix have?", "Not answerable", "[]", "[]", "None"),
    ("fixture-paper.pdf", "What accuracy does Table 1 report?", "91.5", "[1]", "['Table']", "Float"),
    ("fixture-paper.pdf", "How many layers and heads in all?", "20", "[2]", "['Pure-text (Plain-text)']", "Int"),
    ("fixture-paper.pdf", "What is the title?", "A tiny model", "[1]", "['Generalized-text (Layout)']", "Str"),
    (
        "fixture-paper.pdf",
        "How many works are cited and how many layers?",
        "15",
        "[2, 3]",
        "['Pure-text (Plain-text)']",
        "Int",
    ),
    ("fixture-guide.pdf", "When does the library open?", "9 a.m.", "[1]", "['Figure']", "Str"),
    ("fixture-guide.pdf", "How many cafes and gyms are there?", "5", "[2]", "['Table', 'Chart']", "Int"),
    ("fixture-guide.pdf", "Who is the dean?", "Not answerable", "[]", "[]", "None"),
]


def _picture(lines: list[str], page: int) -> bytes:
    """A page-sized picture (PNG) at the pixels 144 dpi renders the page at, its lines drawn in."""
    size = (PAGE_POINTS[0] * 2, PAGE_POINTS[1] * 2)
    image = Image.new("RGB", size, (250, 248, 240))
    draw = ImageDraw.Draw(image)
    draw.rectangle((16, 16, size[0] - 16, size[1] - 16), outline=(60, 90, 160), width=3)
    for i, line in enumerate(lines):
        draw.text((32, 40 + 28 * i), line, fill=(20, 20, 20))
    draw.text((32, size[1] - 40), f"- {page} -", fill=(90, 90, 90))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def write_pdf(pages: list[Page]) -> bytes:
    """A PDF of the pages, each a text page or a picture over the whole page, as deterministic bytes."""
    pymupdf = import_pymupdf("writing the fixture's PDFs")
    with pymupdf.open() as doc:
        for number, (kind, lines) in enumerate(pages, 1):
            page = doc.new_page(width=PAGE_POINTS[0], height=PAGE_POINTS[1])
            if kind == PICTURE:
                page.insert_image(page.rect, stream=_picture(lines, number))
            else:
                page.insert_text((16, 32), "\n".join(lines), fontsize=11, fontname="helv")
                page.insert_text((16, PAGE_POINTS[1] - 16), f"- {number} -", fontsize=8, fontname="helv")
        return bytes(doc.tobytes(garbage=3, deflate=True, no_new_id=True))  # no_new_id: no random /ID


def write_fixture(folder: Path) -> Path:
    """Write the fixture release into `folder` (samples.json, documents/) and return it."""
    (folder / "documents").mkdir(parents=True, exist_ok=True)
    for doc_id, (_, pages) in DOCUMENTS.items():
        (folder / "documents" / doc_id).write_bytes(write_pdf(pages))
    keys = ("doc_id", "doc_type", "question", "answer", "evidence_pages", "evidence_sources", "answer_format")
    samples = [dict(zip(keys, (s[0], DOCUMENTS[s[0]][0], *s[1:]), strict=True)) for s in SAMPLES]
    (folder / "samples.json").write_text(json.dumps(samples, indent=4) + "\n")
    return folder
