"""The offline stand-in: a tiny release in the release's own layout (`samples.json`, `documents/*.pdf`), written
on the spot, deterministic. Each PDF page is one drawn image (a JPEG, its page sized so that the official 144 dpi
renders it at its pixel size), so that `fixture_pages` can read the pages back where pymupdf is not installed.

The questions cover every answer format (Str, Int, Float, List and "Not answerable" as None), single- and cross-page
evidence, and several evidence sources and document types, as the release's do.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from PIL import Image, ImageDraw

from builders.core.errors import BuildError
from builders.core.images import JPEG_SETTINGS

FIXTURE_VERSION = "1"
PRODUCER = b"mmlongeval MMLongBench-Doc fixture"
PAGE_PIXELS = (240, 320)  # 120 x 160 points: the official 144 dpi renders 240 x 320
POINTS_PER_INCH = 72
FIXTURE_DPI = 144

# doc_id -> (doc_type, the text of each page)
DOCUMENTS: dict[str, tuple[str, list[list[str]]]] = {
    "fixture-report.pdf": (
        "Research report / Introduction",
        [
            ["Survey of reading", "2016 report"],
            ["Readers: 52%", "Non-readers: 48%"],
            ["Age groups", "18-29, 30-49, 50+"],
            ["Contact", "https://example.org"],
        ],
    ),
    "fixture-paper.pdf": (
        "Academic paper",
        [["A tiny model", "Table 1: accuracy 91.5"], ["Layers: 12", "Heads: 8"], ["References", "3 works cited"]],
    ),
    "fixture-guide.pdf": (
        "Guidebook",
        [["Campus guide", "Library opens 9 a.m."], ["Cafes: 3", "Gyms: 2"]],
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


def _page_jpeg(lines: list[str], page: int) -> bytes:
    image = Image.new("RGB", PAGE_PIXELS, (255, 255, 255))
    draw = ImageDraw.Draw(image)
    for i, line in enumerate(lines):
        draw.text((12, 20 + 24 * i), line, fill=(20, 20, 20))
    draw.text((12, PAGE_PIXELS[1] - 24), f"- {page} -", fill=(90, 90, 90))
    out = io.BytesIO()
    image.save(out, "JPEG", **JPEG_SETTINGS)
    return out.getvalue()


def write_pdf(pages: list[bytes]) -> bytes:
    """A PDF of image-only pages (each page one DCT-encoded image over the whole page), deterministic bytes."""
    width, height = (size * POINTS_PER_INCH // FIXTURE_DPI for size in PAGE_PIXELS)
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]  # the page tree is filled in below
    kids = []
    for jpeg in pages:
        image_no, content_no, page_no = len(objects) + 1, len(objects) + 2, len(objects) + 3
        draw = f"q {width} 0 0 {height} 0 0 cm /Im0 Do Q".encode()
        objects.append(
            b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceRGB /BitsPerComponent 8 "
            b"/Filter /DCTDecode /Length %d >>\nstream\n%s\nendstream" % (*PAGE_PIXELS, len(jpeg), jpeg)
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(draw), draw))
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Resources << /XObject << /Im0 %d 0 R >> >> "
            b"/Contents %d 0 R >>" % (width, height, image_no, content_no)
        )
        kids.append(b"%d 0 R" % page_no)
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    objects.append(b"<< /Producer (%s) >>" % PRODUCER)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        len(objects),
        xref,
    )
    return bytes(out)


def write_fixture(folder: Path) -> Path:
    """Write the fixture release into `folder` (samples.json, documents/) and return it."""
    (folder / "documents").mkdir(parents=True, exist_ok=True)
    for doc_id, (_, pages) in DOCUMENTS.items():
        pdf = write_pdf([_page_jpeg(lines, i + 1) for i, lines in enumerate(pages)])
        (folder / "documents" / doc_id).write_bytes(pdf)
    keys = ("doc_id", "doc_type", "question", "answer", "evidence_pages", "evidence_sources", "answer_format")
    samples = [dict(zip(keys, (s[0], DOCUMENTS[s[0]][0], *s[1:]), strict=True)) for s in SAMPLES]
    (folder / "samples.json").write_text(json.dumps(samples, indent=4) + "\n")
    return folder


_IMAGE = re.compile(rb"/Subtype /Image /Width (\d+) /Height (\d+) .*?/Length (\d+) >>\nstream\n", re.S)


def fixture_pages(pdf: bytes, max_pages: int, resolution: int, where: str) -> tuple[list[bytes], int]:
    """The fixture's pages where pymupdf is missing: each page's image, resized to what `resolution` dpi renders
    (its pixel size at 144 dpi), as PNG. Only the fixture's own PDFs are read this way."""
    if PRODUCER not in pdf:
        raise BuildError(f"{where}: not a fixture PDF, and rendering other PDFs needs pymupdf (pip install pymupdf)")
    pages = []
    for match in _IMAGE.finditer(pdf):
        start, length = match.end(), int(match.group(3))
        with Image.open(io.BytesIO(pdf[start : start + length])) as image:
            page = image.convert("RGB")
        size = (round(page.width * resolution / FIXTURE_DPI), round(page.height * resolution / FIXTURE_DPI))
        if size != page.size:
            page = page.resize(size, Image.Resampling.BILINEAR)
        out = io.BytesIO()
        page.save(out, "PNG", compress_level=6)
        pages.append(out.getvalue())
    return pages[:max_pages], len(pages)
