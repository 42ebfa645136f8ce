"""The authors' release, read as they publish it (HF dataset `ZhaoweiWang/MMLongBench`).

A release folder holds, side by side, either the extracted folders or the archives (or a mix):

- text: `mmlb_data/` (the jsonl/json test files, `summ/*_claims.jsonl`) or `0_mmlb_data.tar.gz` (the Hub's
  name today; `mmlb_data.tar.gz` before);
- images: `mmlb_image/` or the archives `1_vrag_image.tar.gz`, `2_vh_image.tar.gz`, `2_mm-niah_image.tar.gz`,
  `3_icl_image.tar.gz`, `4_summ_image.tar.gz`, `5_docqa_image.tar.gz` (before: `vrag.tar.gz`, `vh.tar.gz`, ...),
  whose members extract into `mmlb_image/`.

`--source hf://ZhaoweiWang/MMLongBench[@REVISION]` downloads the text archive and only the image archives the asked
configs read (`hub_files`) into the Hub cache, and reads the snapshot folder as a release folder.

A test file names its images relative to `mmlb_image/` (the official `--image_file_root`). Archives are
streamed once and only the members a build needs are read (nothing is unpacked to disk); text files
inside `mmlb_data.tar.gz` are copied to the build's work folder (inside `--out`) for its two passes over them.
Every file is read within the bounds of `builders.core.release_bounds` (a jsonl line, a jsonl file, an image).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from builders.core.errors import BuildError
from builders.core.hub_source import HubFile, HubRelease
from builders.core.release_archive import archive_files
from builders.core.release_bounds import Bound, lines_of, open_release_file, read_file
from builders.core.release_json import parse_json
from builders.core.release_paths import ReleaseFolder, release_path
from builders.mmlongbench.bounds import MMLB_IMAGE, MMLB_JSON_FILE, MMLB_JSONL, MMLB_TEXT_FILE
from builders.mmlongbench.leaves import IMAGE_ARCHIVES, LOADER_IMAGES, TEXT_ARCHIVE, TEXT_ARCHIVES, Config

TEXT_DIR = "mmlb_data"
IMAGE_DIR = "mmlb_image"
IMAGE_ARCHIVE_NAMES = tuple(name for names in IMAGE_ARCHIVES.values() for name in names)

# No commit of the dataset repo could be found from here (its history pages are not indexed; the duplicate
# junhaoki/MMLongBench@8f12f60 shows today's file names): `main` is read, and the manifest records the commit it was.
HUB_RELEASE = HubRelease(
    "ZhaoweiWang/MMLongBench",
    "main",
    "not pinned: no commit of the dataset repo could be found; the manifest records the one read",
)


def hub_files(cfgs: Iterable[Config]) -> list[HubFile]:
    """The release files these configs read: the text archive, and the image archive of each config's images
    (a config past 128K grows from its leaf family's pools, whose images are in the same archive)."""
    folders = {LOADER_IMAGES[cfg.leaf.loader] for cfg in cfgs}
    files = [HubFile(TEXT_ARCHIVES, "the test files (mmlb_data)")]
    return files + [HubFile(IMAGE_ARCHIVES[f], f"the {f} images") for f in IMAGE_ARCHIVES if f in folders]


def member_path(name: str, top: str) -> str:
    """An archive member's path (normalised, `builders.core.release_archive`) relative to the release folder `top`
    (`mmlb_image/x/y.jpg` -> `x/y.jpg`)."""
    name = name.replace("\\", "/")
    prefix = top + "/"
    return name[len(prefix) :] if name.startswith(prefix) else name


class Release:
    """Where a build reads the release from; `close()` removes the temporary copies of archived text files."""

    def __init__(self, root: str | os.PathLike[str], work: Path) -> None:
        self.root = Path(root)
        self.work = work  # where copies of archived text files go: the build's work folder, inside --out
        if not self.root.is_dir():
            raise BuildError(
                f"release folder not found: {self.root} (expected a folder holding mmlb_data/ or "
                f"{' or '.join(TEXT_ARCHIVES)}, and mmlb_image/ or the image archives)"
            )
        self.text_dir = self.root / TEXT_DIR if (self.root / TEXT_DIR).is_dir() else None
        self.text_archive = next((self.root / n for n in TEXT_ARCHIVES if (self.root / n).is_file()), None)
        if self.text_dir is None and self.text_archive is None:
            raise BuildError(
                f"{self.root} holds neither {TEXT_DIR}/ nor {' nor '.join(TEXT_ARCHIVES)}: point --source "
                "at the folder where the release was downloaded"
            )
        self.image_dir = self.root / IMAGE_DIR if (self.root / IMAGE_DIR).is_dir() else None
        self.image_archives = [self.root / n for n in IMAGE_ARCHIVE_NAMES if (self.root / n).is_file()]
        self._spool: Path | None = None
        self._extracted: dict[str, Path] = {}

    def describe(self) -> str:
        parts = [f"{TEXT_DIR}/" if self.text_dir else (self.text_archive or Path(TEXT_ARCHIVE)).name]
        if self.image_dir:
            parts.append(f"{IMAGE_DIR}/")
        parts += [p.name for p in self.image_archives]
        return f"release {self.root} ({', '.join(parts)})"

    def where_images(self) -> str:
        places = ([str(self.image_dir)] if self.image_dir else []) + [str(p) for p in self.image_archives]
        return ", ".join(places) or f"nowhere: {self.root} has no {IMAGE_DIR}/ and no image archive"

    # ------------------------------------------------------------------------------------------ text

    def fetch_text(self, relpaths: Iterable[str]) -> None:
        """Make these text files readable by `text_path` (one pass over the text archive if there is one)."""
        wanted = {p for p in relpaths if p not in self._extracted}
        if self.text_dir is not None:
            for rel in wanted:
                self._extracted[rel] = release_path(self.text_dir, rel, f"{self.text_dir}: {rel}")
            return
        if not wanted:
            return
        assert self.text_archive is not None
        if self._spool is None:
            self._spool = Path(tempfile.mkdtemp(prefix="mmlongbench-text-", dir=self.work))
        for member in archive_files(self.text_archive):
            rel = member_path(member.name, TEXT_DIR)
            if rel in wanted:
                target = self._spool / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "wb") as dst:
                    if rel.endswith(".jsonl"):
                        member.copy_lines_to(dst, MMLB_JSONL, MMLB_TEXT_FILE)
                    else:
                        member.copy_to(dst, MMLB_JSON_FILE)
                self._extracted[rel] = target
        for rel in wanted - self._extracted.keys():
            self._extracted[rel] = self._spool / rel  # absent: `text_path` says so

    def text_path(self, relpath: str) -> Path:
        self.fetch_text([relpath])
        path = self._extracted[relpath]
        if not path.is_file():
            where = self.text_dir or self.text_archive
            raise BuildError(f"{relpath} is not in {where}: this release lacks the file the official config reads")
        return path

    def has_text(self, relpath: str) -> bool:
        self.fetch_text([relpath])
        return self._extracted[relpath].is_file()

    def close(self) -> None:
        if self._spool is not None:
            shutil.rmtree(self._spool, ignore_errors=True)
            self._spool = None
            self._extracted.clear()

    # ---------------------------------------------------------------------------------------- images

    def read_images(
        self,
        wanted: Mapping[str, str],
        on_image: Callable[[str, bytes], None],
        progress: Callable[[int], object] | None = None,
    ) -> set[str]:
        """Call `on_image(path, data)` once per wanted image path (relative to mmlb_image/; mapped to the row that
        names it, for messages); return the paths found nowhere. The folder is read first (a path leading out of
        it through a symbolic link is a `BuildError`); each archive is streamed once, for what is still missing."""
        missing = set(wanted)
        if self.image_dir is not None:
            folder = ReleaseFolder(self.image_dir)
            for rel in sorted(missing):
                file = folder.path(rel, f"{wanted[rel]}: image")
                if file.is_file():
                    on_image(rel, read_file(file, MMLB_IMAGE, f"{wanted[rel]}: image {file}"))
                    missing.discard(rel)
                    if progress:
                        progress(1)
        for archive in self.image_archives:
            if not missing:
                break
            for member in archive_files(archive):
                rel = member_path(member.name, IMAGE_DIR)
                if rel in missing:
                    on_image(rel, member.read(MMLB_IMAGE))
                    missing.discard(rel)
                    if progress:
                        progress(1)
                    if not missing:
                        break
        return missing

    def fingerprint(self, relpaths: Iterable[str]) -> dict[str, str]:
        """sha256 of each text file the build reads (what decides the rows besides the images)."""
        return {rel: _sha256(self.text_path(rel)) for rel in sorted(set(relpaths))}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open_release_file(path) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_lines(path: Path, name: str | None = None, total: Bound | None = MMLB_TEXT_FILE) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) of a jsonl file, blank lines skipped; a line that is not UTF-8, or over the
    bounds of a release's jsonl file (`MMLB_JSONL`; the whole file within `total`, checked on its size before a line
    is read), is a `BuildError` naming the file (`name`, as messages call it) and the line. A build's own spool,
    which may gather more than one release file's rows, passes `total=None`."""
    for number, raw in lines_of(path, MMLB_JSONL, name or str(path), total):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BuildError(
                f"{name or path}:{number}: not UTF-8 text ({exc.reason} at byte {exc.start} of the line)"
            ) from None
        if line.strip():
            yield number, line


def read_claims(path: Path, name: str) -> dict[str, list[str]]:
    """A claims file (`summ/gov_claims.jsonl`): each id's atomic claims, the summarization judge's recall list."""
    claims: dict[str, list[str]] = {}
    first_line: dict[str, int] = {}  # id -> the line that gave its claims
    for number, line in read_lines(path, name):
        item = parse_json(line, f"{name}:{number}")
        try:
            item_id, item_claims = str(item["id"]), [str(c) for c in item["claims"]]
        except (KeyError, TypeError):
            raise BuildError(f'{name}:{number}: expected {{"id": ..., "claims": [...]}}') from None
        if item_id in first_line:
            raise BuildError(
                f"{name}: id {item_id[:40]!r} twice, the records of lines {first_line[item_id]} and {number}; "
                "an id has one list of claims"
            )
        first_line[item_id], claims[item_id] = number, item_claims
    return claims
