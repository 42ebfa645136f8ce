"""Pages of a PDF as the official run renders them: `page.get_pixmap(dpi=resolution)` for each of the first
`max_pages` pages (pymupdf, `run_api.py:36-41`, `run_lvlm.py:29-38`), saved as PNG (`image.save(...png)`).

pymupdf is an optional dependency (`pip install pymupdf`): a build of the release needs it. Where it is missing,
only the offline fixture's PDFs can be read, by `fixture.fixture_pages`, which decodes the one image each of their
pages holds at the size pymupdf would render it; the request records which renderer made the pages.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from builders.core.errors import BuildError
from builders.core.image_check import image_size
from builders.core.images import EncodedImage


@dataclass(frozen=True)
class Renderer:
    """What turns a PDF into page PNGs: its name and version (the request's `renderer`) and the function."""

    name: str
    pages: Callable[[bytes, int, int, str], tuple[list[bytes], int]]  # the PNGs shown, the pages in all


def _pymupdf_pages(pdf: bytes, max_pages: int, resolution: int, where: str) -> tuple[list[bytes], int]:
    import fitz  # type: ignore[import-not-found,unused-ignore]  # pymupdf, optional

    try:
        with fitz.open(stream=pdf, filetype="pdf") as doc:
            return [page.get_pixmap(dpi=resolution).tobytes("png") for page in doc[:max_pages]], len(doc)
    except (RuntimeError, ValueError) as exc:  # pymupdf's FileDataError is a RuntimeError
        raise BuildError(f"{where}: pymupdf could not render it: {exc}") from None


def pymupdf_renderer() -> Renderer | None:
    """The official renderer, or None where pymupdf is not installed."""
    try:
        import fitz  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return Renderer(f"pymupdf {fitz.VersionBind}", _pymupdf_pages)


def need_pymupdf(what: str) -> BuildError:
    return BuildError(f"{what}: rendering the release's PDFs needs pymupdf (pip install pymupdf); it is not installed")


def encode_page(png: bytes, where: str) -> EncodedImage:
    """A rendered page as the rows store it: the PNG bytes as rendered."""
    try:
        width, height = image_size(png)
    except ValueError as exc:
        raise BuildError(f"{where}: the rendered page is not a whole PNG: {exc}") from None
    return EncodedImage(png, hashlib.sha256(png).hexdigest(), width, height)
