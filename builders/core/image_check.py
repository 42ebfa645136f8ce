"""Is a release's image whole? Checked when a builder reads it, before its bytes are stored.

Reading the header (`Image.open`) passes a JPEG cut in half, and so does `verify()`, which checks nothing for
JPEG; a full decode would catch everything but costs some 20x reading and hashing the file (about 1.3 ms against
0.06 ms for a 640 x 480 photo), and a release has hundreds of thousands of images. So each format gets the
cheapest check that catches a file cut short:

- JPEG: the markers are walked to the first scan, and an end-of-image marker must follow it (the scan's
  entropy-coded data cannot hold one: a 0xFF byte there is always followed by 0x00 or a restart marker);
- PNG: `verify()`, which checks every chunk's CRC up to the closing IEND chunk;
- any other format (rare in releases): a full decode.

`DamagedImages` decides what a damaged image does to a build: stop it with a `BuildError` naming the image and
the row that needs it, or, with `skip` (`--skip-bad-images`, `builders.core.options.skip_bad_images_option`),
leave out every row that shows it, list those rows in the manifest and flag the build `limited`.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Hashable, Iterable
from typing import Any

from PIL import Image, UnidentifiedImageError

from builders.core.errors import BuildError

SKIP_OPTION = "--skip-bad-images"
MAX_LISTED = 50  # skipped rows listed per config in the manifest (all are counted)
_EOI = b"\xff\xd9"
_STANDALONE = frozenset({0x01, 0xD8, *range(0xD0, 0xD8)})  # markers without a length field


def image_size(data: bytes) -> tuple[int, int]:
    """(width, height) of a whole image; a `ValueError` saying what is wrong with a damaged one."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            size = image.size
            if image.format == "JPEG":
                whole = _jpeg_ends(data)
                if whole is False:
                    raise ValueError("cut short: no end-of-image marker after its image data")
                if whole is None:
                    image.load()
            elif image.format == "PNG":
                image.verify()
            else:
                image.load()
    except ValueError:
        raise
    except UnidentifiedImageError:
        raise ValueError("not an image file Pillow can read") from None
    except Exception as exc:  # Pillow raises many types for a damaged file
        raise ValueError(str(exc) or type(exc).__name__) from None
    return size


def _jpeg_ends(data: bytes) -> bool | None:
    """Whether an end-of-image marker follows the first scan; None when the markers cannot be walked (then the
    caller decodes the file instead of guessing)."""
    i, end = 2, len(data)
    while i + 4 <= end:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
        elif marker in _STANDALONE:
            i += 2
        elif marker == 0xD9:
            return False  # the image ends before any scan
        elif marker == 0xDA:  # start of scan: the entropy-coded data follows its header
            # From the end: a whole file ends with the marker (or soon after), so the search is short.
            return data.rfind(_EOI, i + 2 + int.from_bytes(data[i + 2 : i + 4], "big")) >= 0
        else:
            i += 2 + int.from_bytes(data[i + 2 : i + 4], "big")
    return False  # cut short before the first scan


class DamagedImages:
    """A build's damaged images and the rows left out because of them."""

    def __init__(self, skip: bool) -> None:
        self.skip = skip
        self.reasons: dict[Hashable, str] = {}  # image key -> what is wrong with it
        self.skipped: dict[str, list[dict[str, str]]] = defaultdict(list)  # config -> rows left out

    def request(self) -> dict[str, bool]:
        """What skipping adds to the build's request (it decides the output); nothing when not skipping."""
        return {"skip_bad_images": True} if self.skip else {}

    def size(self, key: Hashable, data: bytes, name: str) -> tuple[int, int] | None:
        """The image's (width, height); a damaged one is a `BuildError` naming `name` (the image and the row
        that needs it), or, when skipping, remembered and None."""
        try:
            return image_size(data)
        except ValueError as exc:
            if not self.skip:
                raise BuildError(
                    f"image {name} is damaged ({exc}); pass {SKIP_OPTION} to leave out the rows that show it"
                ) from None
            self.reasons[key] = f"image {name} is damaged ({exc})"
            return None

    def reason(self, keys: Iterable[Hashable]) -> str | None:
        """Why a row showing these images is left out (None: it is not)."""
        return next((self.reasons[key] for key in keys if key in self.reasons), None)

    def leave_out(self, config: str, row_id: str, reason: str) -> None:
        self.skipped[config].append({"id": row_id, "reason": reason})

    def manifest_fields(self, config: str) -> dict[str, Any]:
        """What a config's manifest entry says of its rows left out (nothing when none was)."""
        rows = self.skipped.get(config)
        if not rows:
            return {}
        return {"skipped_rows": len(rows), "skipped": rows[:MAX_LISTED]}

    def check_config(self, config: str, kept: int) -> None:
        """A config all of whose rows were left out is an error, not an empty config."""
        if kept == 0 and self.skipped.get(config):
            raise BuildError(f"config {config}: every row shows a damaged image ({self.skipped[config][0]['reason']})")

    def caveat(self) -> str | None:
        """The build's `limited` caveat, when rows were left out."""
        total = sum(len(rows) for rows in self.skipped.values())
        if not total:
            return None
        return (
            f"{total} row(s) left out because an image they show is damaged ({SKIP_OPTION}; listed per config "
            "under `skipped`): fewer rows than the release holds"
        )
