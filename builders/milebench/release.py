"""Reading the authors' release: the subset folders, or the six `MileBench_part{0..5}.tar.gz` read in place.

The release (Hugging Face `FreedomIntelligence/MileBench`) unpacks to one folder per subset:
`<Name>/<Name>.json` (the test set), `<Name>/<Name>-adv.json` (the adversarial set), `<Name>/images/...` (the
files `images_path` names, relative to `images/`) and `<Name>/combined_1_images/...` (the Combined-image Set's
grids, named by `combined_1_images`). `--source` may point at the folder holding the subset folders, at its
parent (holding `MileBench/`), or at the folder holding the part archives; a subset found unpacked is read
from its folder, the others from the archives.

Archives are streamed (one sequential pass each, never unpacked; every member within its bound,
`builders.core.release_bounds`): their annotation files are read in the first pass, and the images met in that pass are handed to the builder at once (it keeps those it may need),
so an archive is read a second time only for images that pass did not offer.

`--source hf://FreedomIntelligence/MileBench[@REVISION]` downloads only the part archives holding the asked configs'
subsets (`hub_files`) into the Hub cache, and reads the snapshot folder as a release folder.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builders.core.errors import BuildError
from builders.core.hub_source import HubFile, HubRelease, PinnedFile
from builders.core.release_archive import archive_files
from builders.core.release_bounds import Bound, read_file
from builders.core.release_json import parse_json
from builders.core.release_paths import ReleaseFolder
from builders.milebench.bounds import MILEBENCH_ANNOTATION, MILEBENCH_IMAGE
from builders.milebench.subsets import SUBSET_BY_NAME, Config

ARCHIVE_PATTERN = "MileBench_part*.tar.gz"
RELEASE_FOLDER = "MileBench"
# The commit that added the six part archives, found in the repo's history, with the sha256 and size its LFS pointers
# give each (huggingface.co/datasets/FreedomIntelligence/MileBench/commit/a97b35f). Part 5's hash could not be read
# whole from here: that part is read unpinned (said, its sha256 recorded in the manifest) until it is added.
HUB_RELEASE = HubRelease(
    "FreedomIntelligence/MileBench",
    "a97b35fe11413b6dea4c3cdcc97ca3b181cfaa9d",
    "the commit that uploaded MileBench_part0..5.tar.gz",
    {
        "MileBench_part0.tar.gz": PinnedFile(
            "c7258cc553b2996cc466de32b99ad37c0d64976417abb8651eebf02bc1328b40", 3974906269
        ),
        "MileBench_part1.tar.gz": PinnedFile(
            "e90d5d4e83e256a6ddcecdc0cb0ce4335f600fdb54d79c966dcb88e87327090a", 2625281958
        ),
        "MileBench_part2.tar.gz": PinnedFile(
            "0e84fef4ae8bba6760499bf72159c4f8c62c82d9ae70112bf1a72aac949c9505", 2018154102
        ),
        "MileBench_part3.tar.gz": PinnedFile(
            "ac682d1967e17eb7fbecf849acff1266f1407f5de6662d5f16e14b81d68d2b16", 2461787975
        ),
        "MileBench_part4.tar.gz": PinnedFile(
            "05471d502f8fa0665eb54087f9dca438f3fe7f8df6f81793cac0695ae19209be", 2512746509
        ),
    },
)


def hub_files(cfgs: Iterable[Config]) -> list[HubFile]:
    """The part archives holding these configs' subsets (`Subset.archive`), in part order."""
    parts = sorted({cfg.subset.archive for cfg in cfgs})
    return [HubFile((f"MileBench_part{k}.tar.gz",), f"part {k} of the release") for k in parts]


# A file of the release: (subset name, path inside the subset's folder), e.g. ("ALFRED", "images/0/1.jpg").
Key = tuple[str, str]
OnImage = Callable[[Key, bytes], None]


@dataclass(frozen=True)
class Annotation:
    """One parsed annotation file: `{"meta_data": {...}, "data": [...]}`, its sha256 and where it was read."""

    content: dict[str, Any]
    sha256: str
    where: str


def member_key(name: str) -> Key | None:
    """An archive member's (subset, path inside it), wherever the subset folder sits in the archive; `name` is
    normalised and inside the archive (`builders.core.release_archive`)."""
    parts = name.split("/")
    for i, part in enumerate(parts[:-1]):
        if part in SUBSET_BY_NAME:
            return part, "/".join(parts[i + 1 :])
    return None


class Release:
    """Where each subset of a release is, and reading its files."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise BuildError(
                f"release folder not found: {self.root} (expected the folder holding the subset folders "
                f"or {ARCHIVE_PATTERN})"
            )
        folder = self.root / RELEASE_FOLDER if (self.root / RELEASE_FOLDER).is_dir() else self.root
        self.folders = {name: folder / name for name in SUBSET_BY_NAME if (folder / name).is_dir()}
        self._resolved = {name: ReleaseFolder(path) for name, path in self.folders.items()}  # files stay inside
        self.archives = sorted(self.root.glob(ARCHIVE_PATTERN))
        if not self.folders and not self.archives:
            raise BuildError(
                f"{self.root} holds no MileBench subset folder (ActionLocalization/, ...) and no "
                f"{ARCHIVE_PATTERN}: point --source at the downloaded release"
            )

    def describe(self) -> str:
        parts = [f"{len(self.folders)} subset folder(s)"] if self.folders else []
        parts += [p.name for p in self.archives]
        return f"release {self.root} ({', '.join(parts)})"

    def where(self, key: Key) -> str:
        """A file's location for messages: its path, or the archives it was looked for in."""
        subset, rel = key
        if subset in self.folders:
            return str(self.folders[subset] / rel)
        return f"{subset}/{rel} in {', '.join(p.name for p in self.archives) or 'no archive'}"

    # ------------------------------------------------------------------------------------- annotations

    def read_annotations(
        self, keys: Iterable[Key], early: OnImage | None = None, early_wanted: Callable[[Key], bool] | None = None
    ) -> dict[Key, Annotation]:
        """The parsed annotation files; a file the release lacks is absent from the result.

        Archive passes offer every image member for which `early_wanted(key)` holds to `early(key, data)`.
        """
        wanted = set(keys)
        out: dict[Key, Annotation] = {}
        for key in sorted(wanted):
            subset, rel = key
            if subset in self.folders:
                path = self._resolved[subset].path(rel, f"{self.folders[subset]}: annotation file")
                if path.is_file():
                    where = str(self.folders[subset] / rel)
                    out[key] = parse_annotation(read_file(path, MILEBENCH_ANNOTATION, where), where)
        rest = wanted - out.keys()
        if rest and self.archives:
            for archive in self.archives:
                for key, member, data in _members(archive):
                    if key in rest:
                        out[key] = parse_annotation(data(MILEBENCH_ANNOTATION), f"{archive.name}:{member}")
                    elif early is not None and early_wanted is not None and early_wanted(key):
                        early(key, data(MILEBENCH_IMAGE))
        return out

    # ------------------------------------------------------------------------------------------ images

    def read_images(
        self, wanted: Mapping[Key, str], on_image: OnImage, progress: Callable[[int], object] | None = None
    ) -> set[Key]:
        """`on_image(key, data)` once per wanted file (mapped to the record that names it, for messages); returns
        the files found nowhere. A path leading out of its subset folder through a symbolic link is a `BuildError`."""
        missing = set(wanted)
        for key in sorted(missing):
            subset, rel = key
            if subset in self.folders:
                path = self._resolved[subset].path(rel, f"{wanted[key]}: image")
                if path.is_file():
                    on_image(key, read_file(path, MILEBENCH_IMAGE, f"{wanted[key]}: image {path}"))
                    missing.discard(key)
                    if progress:
                        progress(1)
        for archive in self.archives:
            if not missing:
                break
            for key, _, data in _members(archive):
                if key in missing:
                    on_image(key, data(MILEBENCH_IMAGE))
                    missing.discard(key)
                    if progress:
                        progress(1)
                    if not missing:
                        break
        return missing


def _members(archive: Path) -> Iterator[tuple[Key, str, Callable[[Bound], bytes]]]:
    """(key, member name, read within a bound) for each file of an archive that belongs to a subset, in archive
    order."""
    for member in archive_files(archive):
        key = member_key(member.name)
        if key is not None:
            yield key, member.name, member.read


def parse_annotation(data: bytes, where: str) -> Annotation:
    """An annotation file: `{"meta_data": {...}, "data": [...]}`; anything else is a BuildError naming it."""
    parsed = parse_json(data, where)
    if (
        not isinstance(parsed, dict)
        or not isinstance(parsed.get("meta_data"), dict)
        or not isinstance(parsed.get("data"), list)
    ):
        raise BuildError(f"{where}: expected an object with 'meta_data' (an object) and 'data' (a list of records)")
    return Annotation(parsed, hashlib.sha256(data).hexdigest(), where)
