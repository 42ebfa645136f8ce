"""The sizes of the release's images, from their headers: what growing a row past 128K counts its images by."""

from __future__ import annotations

import io
from collections.abc import Mapping

from PIL import Image

from builders.core.contract import image_tokens
from builders.core.errors import BuildError
from builders.mmlongbench.release import Release


class ImageSizes:
    """Image sizes from their headers (no pixel decoded), read from the release in batches; the build reads and
    checks every image whole later, and counts its row's tokens again from that."""

    def __init__(self, release: Release) -> None:
        self.release = release
        self.sizes: dict[str, tuple[int, int]] = {}

    def fetch(self, paths: Mapping[str, str]) -> None:
        wanted = {p: where for p, where in paths.items() if p not in self.sizes}
        if not wanted:
            return

        def on_image(path: str, data: bytes) -> None:
            try:
                with Image.open(io.BytesIO(data)) as image:
                    self.sizes[path] = image.size
            except Exception as exc:  # Pillow raises many types for a damaged header
                raise BuildError(f"{path} (needed by {wanted[path]}): not an image Pillow can read ({exc})") from None

        missing = self.release.read_images(wanted, on_image)
        if missing:
            path = sorted(missing)[0]
            raise BuildError(
                f"{len(missing)} image(s) not found in {self.release.where_images()}: {path} (needed by {wanted[path]})"
            )

    def tokens(self, path: str) -> int:
        return image_tokens(*self.sizes[path])
