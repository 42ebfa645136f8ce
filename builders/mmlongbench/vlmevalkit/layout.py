"""Where VLMEvalKit's MMLongBench files are: the Hub repo's `vlmevalkit/` folder, or a local folder laid out as the Hub
snapshot or as VLMEvalKit's own data root.

- TSV: `vlmevalkit/MMLongBench_256K.tsv` (the Hub, `mmlongbench.py:25-30`), or `MMLongBench_256K.tsv` at the folder's
  top (VLMEvalKit's `$LMUData`, `_standard_tsv_path`, `:72-75`).
- Images: the archive `vlmevalkit/MMLongBench_256K_images.tar.gz` (`:41-46`) or the same name at the top, streamed,
  never unpacked; or an extracted image root `images/mmlb_image/` (`$LMUData/images/mmlb_image`) or `mmlb_image/`.
  Inside it an image path `p` of the TSV is looked up as VLMEvalKit's `_resolve_image_path` does (`:187-208`): under
  the length's folder first (`256K/p`), then as `p`; an archive's members are taken relative to `mmlb_image/` when
  its first member is under that folder (`_tar_has_top_level_mmlb_image`, `:115-123`), as its extraction would put
  them. VLMEvalKit's further fallbacks (a dataset-named or subset-named image folder) are not looked in.
"""

from __future__ import annotations

from pathlib import Path

from builders.core.errors import BuildError
from builders.core.hub_source import HubFile

HUB_FOLDER = "vlmevalkit"
IMAGE_ROOT = "mmlb_image"


def label(length: str) -> str:
    """VLMEvalKit's name of a length: `256k` -> `256K` (`MMLongBench_256K`)."""
    return length.upper()


def tsv_name(length: str) -> str:
    return f"MMLongBench_{label(length)}.tsv"


def archive_name(length: str) -> str:
    return f"MMLongBench_{label(length)}_images.tar.gz"


def hub_files(lengths: list[str]) -> list[HubFile]:
    """The Hub files a build of these lengths' configs reads: each length's TSV and image archive."""
    files = []
    for length in lengths:
        files.append(HubFile((f"{HUB_FOLDER}/{tsv_name(length)}",), f"VLMEvalKit's {label(length)} TSV"))
        files.append(HubFile((f"{HUB_FOLDER}/{archive_name(length)}",), f"VLMEvalKit's {label(length)} images"))
    return files


class OfficialSets:
    """A folder holding VLMEvalKit's files for some lengths (a Hub snapshot's view or a local copy)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise BuildError(f"folder not found: {self.root} (expected VLMEvalKit's MMLongBench TSVs in it)")

    def _first(self, name: str) -> Path | None:
        return next((p for p in (self.root / HUB_FOLDER / name, self.root / name) if p.is_file()), None)

    def tsv(self, length: str) -> Path:
        found = self._first(tsv_name(length))
        if found is None:
            raise BuildError(
                f"{self.root} holds neither {HUB_FOLDER}/{tsv_name(length)} nor {tsv_name(length)}: the "
                f"vlmevalkit_*_{length} configs read VLMEvalKit's TSV of that length (on the Hub: "
                f"ZhaoweiWang/MMLongBench, {HUB_FOLDER}/)"
            )
        return found

    def has_tsv(self, length: str) -> bool:
        return self._first(tsv_name(length)) is not None

    def archive(self, length: str) -> Path | None:
        return self._first(archive_name(length))

    def image_folder(self) -> Path | None:
        return next((p for p in (self.root / "images" / IMAGE_ROOT, self.root / IMAGE_ROOT) if p.is_dir()), None)

    def where_images(self, length: str) -> str:
        places = [str(p) for p in (self.image_folder(), self.archive(length)) if p is not None]
        return ", ".join(places) or (
            f"nowhere: {self.root} has neither {HUB_FOLDER}/{archive_name(length)} nor images/{IMAGE_ROOT}/ "
            f"nor {IMAGE_ROOT}/"
        )
