"""Pages of a PDF as the official run renders them: `page.get_pixmap(dpi=resolution)` for each of the first
`max_pages` pages (pymupdf, `run_api.py:36-41`, `run_lvlm.py:29-38`), saved as PNG (`image.save(...png)`).

pymupdf is the `pdf` extra (`pip install -e '.[pdf]'`); the request records its version, which the PNGs depend on.
"""

from __future__ import annotations

import hashlib
import sys
from types import ModuleType

from builders.core.errors import BuildError
from builders.core.image_check import image_size
from builders.core.images import EncodedImage


def import_pymupdf(what: str) -> ModuleType:
    """pymupdf, or one line naming the need where it is missing (an extra, so that other builds go without it)."""
    try:
        import pymupdf  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        raise BuildError(f"{what} needs pymupdf: pip install -e '.[pdf]'") from None
    return pymupdf


def renderer_name() -> str:
    """The renderer as the request records it."""
    return f"pymupdf {import_pymupdf('rendering the PDFs').VersionBind}"


def render_pages(pdf: bytes, max_pages: int, resolution: int, where: str) -> tuple[list[bytes], int]:
    """The first `max_pages` pages as PNGs rendered at `resolution` dpi, and the PDF's pages in all."""
    pymupdf = import_pymupdf("rendering the PDFs")
    try:
        with pymupdf.open(stream=pdf, filetype="pdf") as doc:
            if doc.is_repaired:  # cut short or damaged: rendered as the official run's fitz renders it, and said
                print(f"{where}: damaged (mupdf repaired it to render it; its pages may differ from an intact copy's)",
                      file=sys.stderr)  # fmt: skip
            return [page.get_pixmap(dpi=resolution).tobytes("png") for page in doc[:max_pages]], len(doc)
    # pymupdf's FileDataError is a RuntimeError; mupdf's own errors (FzErrorLimit: a page too large to render) are not
    except (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase) as exc:
        raise BuildError(f"{where}: pymupdf could not render it: {exc}") from None


def encode_page(png: bytes, where: str) -> EncodedImage:
    """A rendered page as the rows store it: the PNG bytes as rendered."""
    try:
        width, height = image_size(png)
    except ValueError as exc:
        raise BuildError(f"{where}: the rendered page is not a whole PNG: {exc}") from None
    return EncodedImage(png, hashlib.sha256(png).hexdigest(), width, height)
