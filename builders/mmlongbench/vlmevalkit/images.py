"""The images of VLMEvalKit's rows of one length, each read once: from an extracted image root, then streamed from the
length's archive (`MMLongBench_256K_images.tar.gz`), never unpacked.

An image path `p` is looked up as VLMEvalKit's `_resolve_image_path` does after extracting the archive
(`mmlongbench.py:187-208`): `<length>/p` first (`256K/p`), then `p`, under `mmlb_image/`. An archive whose first
member lies under `mmlb_image/` has its members taken relative to that folder (`_tar_has_top_level_mmlb_image`,
`:115-123`, which also strips leading `.` and `/` characters off the name); any other archive extracts into
`mmlb_image/` whole (`_extract_image_archive`, `:125-131`). An archive that holds one image both ways (`256K/p` and
`p`) is refused: VLMEvalKit would show the length folder's, and this reader, which streams the archive once and keeps
what it reads, does not guess which a row meant.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from builders.core.errors import BuildError
from builders.core.release_archive import archive_files
from builders.core.release_bounds import read_file
from builders.core.release_paths import ReleaseFolder
from builders.mmlongbench.bounds import MMLB_IMAGE
from builders.mmlongbench.vlmevalkit.layout import IMAGE_ROOT, OfficialSets, label

OnImage = Callable[[str, bytes], None]


def _candidates(path: str, length: str) -> tuple[str, str]:
    return f"{label(length)}/{path}", path


def read_images(
    sets: OfficialSets,
    length: str,
    wanted: Mapping[str, str],
    on_image: OnImage,
    progress: Callable[[int], object] | None = None,
) -> set[str]:
    """Call `on_image(path, data)` once per wanted path (mapped to the row naming it, for messages); return the paths
    found nowhere."""
    missing = set(wanted)
    folder = sets.image_folder()
    if folder is not None:
        base = ReleaseFolder(folder)
        for path in sorted(missing):
            for candidate in _candidates(path, length):
                file = base.path(candidate, f"{wanted[path]}: image")
                if file.is_file():
                    on_image(path, read_file(file, MMLB_IMAGE, f"{wanted[path]}: image {file}"))
                    missing.discard(path)
                    if progress:
                        progress(1)
                    break
    archive = sets.archive(length)
    if archive is not None and missing:
        missing = _from_archive(archive, length, missing, wanted, on_image, progress)
    return missing


def _from_archive(
    archive: Path,
    length: str,
    missing: set[str],
    wanted: Mapping[str, str],
    on_image: OnImage,
    progress: Callable[[int], object] | None,
) -> set[str]:
    lookups: dict[str, list[str]] = {}
    for path in missing:
        for candidate in _candidates(path, length):
            lookups.setdefault(candidate, []).append(path)
    found: dict[str, str] = {}  # path -> the member it was read from
    prefix: str | None = None
    for member in archive_files(archive):
        if prefix is None:  # the first member decides, as VLMEvalKit's extraction does
            prefix = IMAGE_ROOT + "/" if member.name.lstrip("./").split("/", 1)[0] == IMAGE_ROOT else ""
        name = member.name
        if prefix:
            if not name.startswith(prefix):
                continue  # extracted beside mmlb_image/: no lookup of VLMEvalKit's reaches it
            name = name[len(prefix) :]
        paths = lookups.get(name)
        if not paths:
            continue
        data = member.read(MMLB_IMAGE)
        for path in paths:
            if path in found:
                raise BuildError(
                    f"{archive}: holds the image {path!r} twice, as {found[path]!r} and as {member.name!r} "
                    f"(VLMEvalKit would show {label(length)}/{path}); needed by {wanted[path]}"
                )
            found[path] = member.name
            on_image(path, data)
            if progress:
                progress(1)
    return missing - found.keys()
