"""Reading the authors' release (Hugging Face `OpenGVLab/MM-NIAH`): per split, `mm_niah_{split}/annotations/
{task}-{needle}.jsonl` and the images, unpacked under `mm_niah_{split}/images/` (the official scripts' image
root) or as the Hub publishes them, `mm_niah_{split}/images.tar.gz` (18 GB for val, 44 GB for test), streamed once
and never unpacked (`builders.core.release_archive`, each member within its bound). An image is named by its path
under `images/`, as the records' `images_list` and `choices_image_path` give it.

`--source hf://OpenGVLab/MM-NIAH[@REVISION]` downloads the asked configs' annotation files and their splits'
image archives into the Hub cache and reads that folder as a release folder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from builders.core.errors import BuildError
from builders.core.hub_source import HubFile, HubRelease, PinnedFile
from builders.core.release_archive import archive_files
from builders.core.release_bounds import Bound, MiB, read_file
from builders.core.release_paths import ReleaseFolder
from builders.mm_niah.configs import Config

# The newest annotation file holds one task's records of one split (about a thousand, the longest 72K tokens of
# text and images, a few hundred KB of text each): a few hundred MB at most.
MM_NIAH_ANNOTATION = Bound(512 * MiB, "an annotation file")
MM_NIAH_IMAGE = Bound(64 * MiB, "an image")
IMAGE_FOLDER = "images"
IMAGE_ARCHIVE = "images.tar.gz"
# A split's annotation files may come packed, `mm_niah_{split}/annotations.tar.gz` (InternVL's MM-NIAH guide unpacks
# one for the validation split): read from it where the loose file is absent.
ANNOTATION_ARCHIVE = "annotations.tar.gz"

# The Hub's history names `main`'s head only by its short hash (36ab1b8, "Update README.md"), so no commit is
# pinned: a build reads `main` and the manifest records the commit and every file's sha256. The image archives'
# LFS pointers (commits e0d6402 and 2ed5002, huggingface.co/datasets/OpenGVLab/MM-NIAH) give their bytes.
HUB_RELEASE = HubRelease(
    "OpenGVLab/MM-NIAH",
    "main",
    "no commit pinned: only main's short hash 36ab1b8 could be read",
    {
        "mm_niah_val/images.tar.gz": PinnedFile(
            "618ea953b5226ffc96dd8b37b0961fe6ccaaf0175bea748395ad5567ad7c532f", 17975626985
        ),
        "mm_niah_test/images.tar.gz": PinnedFile(
            "0474511ac52e3f8b46f29dbfa3de10577826473885226d551048b2746665a27e", 44341968142
        ),
    },
)


def hub_files(cfgs: Iterable[Config]) -> list[HubFile]:
    """The asked configs' annotation files and their splits' image archives."""
    cfgs = list(cfgs)
    files = [
        HubFile((cfg.annotation, f"{cfg.folder}/{ANNOTATION_ARCHIVE}"), f"the {cfg.official_name} annotations")
        for cfg in cfgs
    ]
    for folder in sorted({cfg.folder for cfg in cfgs}):
        files.append(HubFile((f"{folder}/{IMAGE_ARCHIVE}",), f"the {folder} images"))
    return files


OnImage = Callable[[tuple[str, str], bytes], None]  # ((split folder, image name), bytes)


class Release:
    """Where a release's files are, and reading them."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise BuildError(f"release folder not found: {self.root} (expected the folder holding mm_niah_val/)")

    def annotation(self, cfg: Config) -> bytes:
        path = self.root / cfg.annotation  # a name of ours, not the release's: read where it is (a Hub view links it)
        if path.is_file():
            return read_file(path, MM_NIAH_ANNOTATION, str(path))
        archive = self.root / cfg.folder / ANNOTATION_ARCHIVE
        if archive.is_file():
            name = cfg.annotation.rsplit("/", 1)[1]
            for member in archive_files(archive):
                if member.name.rsplit("/", 1)[-1] == name:
                    return member.read(MM_NIAH_ANNOTATION)
        raise BuildError(f"{path} not found (nor in {archive.name} beside it): config {cfg.name} reads it")

    def read_images(self, folder: str, wanted: set[str], on_image: OnImage) -> set[str]:
        """`on_image((folder, name), data)` once per wanted image of a split; returns those found nowhere."""
        missing = set(wanted)
        images = self.root / folder / IMAGE_FOLDER
        if images.is_dir():
            resolved = ReleaseFolder(images)
            for name in sorted(missing):
                path = resolved.path(name, f"{images}: image")
                if path.is_file():
                    on_image((folder, name), read_file(path, MM_NIAH_IMAGE, str(path)))
                    missing.discard(name)
        archive = self.root / folder / IMAGE_ARCHIVE
        if missing and archive.is_file():
            for member in archive_files(archive):
                found = _image_name(member.name, missing)
                if found is not None:
                    on_image((folder, found), member.read(MM_NIAH_IMAGE))
                    missing.discard(found)
                    if not missing:
                        break
        return missing

    def where(self, folder: str, name: str) -> str:
        return f"{self.root / folder}/{IMAGE_FOLDER}/{name} (or in {IMAGE_ARCHIVE})"


def _image_name(member: str, wanted: set[str]) -> str | None:
    """The wanted image an archive member is: its path less any leading folders (the archive may hold `images/...`
    or the names bare)."""
    parts = member.split("/")
    for start in range(len(parts)):
        name = "/".join(parts[start:])
        if name in wanted:
            return name
    return None
