"""Verify what the harness reads: a build's data files against its manifest, an image's bytes against the hash
its row declares (and that they decode).

Each Parquet file a task reads is opened once and memory-mapped (`DataFile`); its sha256 is computed from that
mapping, so the bytes hashed are the bytes the rows are then read from (a file replaced on disk afterwards is
not what the run reads; one changed in place is noticed before its next read). A file's sha256 is remembered by
its identity (device, inode, size, modification and change times) in `file_hashes.json` under the harness's
cache folder (`$MMLONGEVAL_HASH_CACHE`, default `~/.cache/mmlongeval/file_hashes.json`): writing to a file moves
its change time, which no user can set back, so a file is hashed again after any change.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import io
import json
import mmap
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from builders.core import contract
from harness.errors import UserError
from harness.file_writing import LinkRefused, create_exclusive, read_bytes

HASH_CACHE_ENV = "MMLONGEVAL_HASH_CACHE"
DEFAULT_HASH_CACHE = Path("~/.cache/mmlongeval/file_hashes.json")
_HASH_BLOCK = 8 * 1024 * 1024
HASH_CACHE_MOST = 64 * contract.MiB  # some 300,000 files' hashes
_LOCK = threading.Lock()


class ImageIntegrityError(ValueError):
    """An image whose bytes do not hash to the sha256 its row declares (its sample is `invalid_input`)."""


def check_image_bytes(data: bytes, declared: str) -> bytes:
    actual = hashlib.sha256(data).hexdigest()
    if actual != declared:
        raise ImageIntegrityError(
            f"image {declared[:12]}: its bytes hash to {actual[:12]}, not to the sha256 its "
            "row declares (the data changed after it was built)"
        )
    return data


_HEADER_LOCK = threading.Lock()  # Python's warning filters are the process's: one header read changes them at a time


def check_image_size(data: bytes, declared: tuple[int, int], sha256: str | None) -> bytes:
    """`data`, where its header (read before a pixel is decoded) says the size its row declares (`image_sizes`:
    [width, height]), or where it is no image Pillow opens (decoding it says so: `image_problem`); else an
    `ImageIntegrityError`, so that no image larger than its row says is ever decoded."""
    import warnings

    from PIL import Image

    try:
        with _HEADER_LOCK, warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # the size is compared, here
            with Image.open(io.BytesIO(data)) as picture:
                size = picture.size
    except Image.DecompressionBombError as err:  # past twice Pillow's bound: the header's size is in its words
        size = None
        said = str(err).split(" exceeds")[0]
    except Exception:  # Pillow raises many types for broken files
        return data
    if size is not None and list(size) == list(declared):
        return data
    said = f"{size[0]} x {size[1]}" if size is not None else said
    raise ImageIntegrityError(
        f"image {(sha256 or '')[:12] or 'of the row'}: its header says {said}, where its row's image_sizes declares "
        f"{' x '.join(map(str, declared))}; not decoded"
    )


def image_problem(image: Any, position: int, *, decode: bool = True) -> str | None:
    """Why the `position`-th image of a request (`harness.api.ImageRef`) must not be shown to a model or named in
    a cache key: its bytes do not hash to the sha256 its row declares (`load` checks them: `harness.running.task.task`; an input
    policy's scaled image checks its source's), cannot be read, or (with `decode`) do not decode; None when they are
    sound. `decode=False` for a backend that decodes each image itself and refuses one that fails
    (`harness.api.ModelFacts.decodes_images`): the bytes are checked here and decoded once, by the backend."""
    try:
        data = image.data()
    except (ValueError, KeyError) as err:  # an OSError (the disk failed to read) is not the bytes' fault: raised
        return str(err)
    if not decode:
        return None
    from PIL import Image

    try:
        # A JPEG is decoded at its smallest DCT scale (`draft`): every byte of it is still read, so a cut-short file
        # fails, at a fraction of the cost.
        with Image.open(io.BytesIO(data)) as picture:
            picture.draft(picture.mode, (1, 1))
            picture.load()
    except Exception as err:  # Pillow raises many types for broken files
        return f"image {position} (sha256 {image.sha256[:12]}) does not decode: {type(err).__name__}: {err}"
    return None


# ----------------------------------------------------------------------------------- paths


def resolve_inside(root: Path, relative: str, allowed: Path | None = None) -> Path:
    """`root / relative`, resolved, when it stays inside `allowed` (default: `root`) after following links;
    else ValueError. `relative` must be a plain relative path (no `..`, not absolute)."""
    parts = Path(relative).parts
    if not relative or Path(relative).is_absolute() or ".." in parts or "\\" in relative:
        raise ValueError(f"{relative!r} is not a relative path inside the folder")
    path = (root / relative).resolve()
    if not path.is_relative_to((allowed or root).resolve()):
        raise ValueError(f"{relative!r} leads outside the folder (to {path})")
    return path


# ------------------------------------------------------------------------------ data files


def _identity(path: Path, stat: os.stat_result) -> str:
    return f"{path}|{stat.st_dev}|{stat.st_ino}|{stat.st_size}|{stat.st_mtime_ns}|{stat.st_ctime_ns}"


def _load_hashes(cache: Path) -> dict[str, str]:
    """The hashes kept, read as the run's journal is (no link, a regular file, within `HASH_CACHE_MOST` bytes); a cache
    that cannot be read so is empty (its files are hashed again, and the cache written anew)."""
    try:
        value = json.loads(read_bytes(cache, HASH_CACHE_MOST, "a hash cache"))
    except (OSError, UserError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _save_hashes(cache: Path, entries: Mapping[str, str]) -> None:
    tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        with os.fdopen(create_exclusive(tmp), "w", encoding="utf-8") as handle:  # never through a planted link
            handle.write(json.dumps(entries, sort_keys=True))
        tmp.replace(cache)
    except (OSError, LinkRefused):  # a read-only or full home: the files are hashed again next time
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


class DataFile:
    """One data file, opened and memory-mapped once: its sha256 is that of the mapped bytes, and its rows are
    read from the same mapping (`parquet()`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # Opened without blocking, a regular file only (a FIFO planted as a data file is refused at once); the mapping
        # (None for an empty file) keeps the file (its inode) for as long as it is read.
        with contract.open_regular(path) as file:
            self._stat = os.fstat(file.fileno())
            self.mapping = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) if self._stat.st_size else None
        self.size = self._stat.st_size
        self.sha256 = ""
        self._check_lock = threading.Lock()

    def hash(self, known: dict[str, str]) -> str:
        """The mapped bytes' sha256 (taken from `known` when this very file was hashed before); records it."""
        key = _identity(self.path, self._stat)
        if key not in known:
            known[key] = self._digest()
        self.sha256 = known[key]
        return self.sha256

    def _digest(self) -> str:
        digest = hashlib.sha256()
        view = memoryview(self.mapping) if self.mapping is not None else memoryview(b"")
        for start in range(0, len(view), _HASH_BLOCK):
            digest.update(view[start : start + _HASH_BLOCK])
            self._release(start, _HASH_BLOCK)
        view.release()
        return digest.hexdigest()

    def _release(self, start: int = 0, length: int | None = None) -> None:
        """Drop the process's hold on the mapped pages of `start:start+length` (all by default). They stay in the
        page cache and read back unchanged when touched again (a shared, read-only file mapping), but no longer
        count in this process's memory: a build's files, hashed whole and read image by image, would otherwise
        stay resident in full, and the run's peak RSS grow with the rows it has read."""
        if self.mapping is None or not hasattr(mmap, "MADV_DONTNEED"):
            return
        length = self.size - start if length is None else min(length, self.size - start)
        if length > 0:
            self.mapping.madvise(mmap.MADV_DONTNEED, start, length)

    def unchanged(self) -> bool:
        """Whether the file at this path is still the one hashed, untouched."""
        try:
            return self._same_identity(os.stat(self.path))
        except OSError:
            return False

    def check_unchanged(self, _: object = None) -> None:
        """ValueError when the file's bytes changed since they were hashed (they are no longer verified). A file
        replaced or removed on disk is not: the mapping still holds the inode that was hashed. A change of its
        metadata alone (`chmod`, a hard link, `touch`: a new ctime or mtime) has the mapped bytes hashed again,
        once: the same bytes are verified as before and the run goes on."""
        try:
            now = os.stat(self.path)
        except OSError:
            return
        if (now.st_dev, now.st_ino) != (self._stat.st_dev, self._stat.st_ino) or self._same_identity(now):
            return
        with self._check_lock:
            if self._same_identity(now):  # another thread has just verified it again
                return
            if now.st_size != self.size or self._digest() != self.sha256:
                raise ValueError(f"{self.path} changed while the run read it; its rows are no longer the verified ones")
            self._stat = now

    def _same_identity(self, now: os.stat_result) -> bool:
        return _identity(self.path, now) == _identity(self.path, self._stat)

    def parquet(self) -> Any:
        """The file as a `pyarrow.parquet.ParquetFile` reading the mapped bytes (no copy of the file)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self.mapping is None:
            raise ValueError(f"{self.path} is empty, not a Parquet file")
        return pq.ParquetFile(pa.BufferReader(pa.py_buffer(self.mapping)))


# The files this process has open, by path: the tasks of one build (a config's positives and negatives, every
# config's image table) share one mapping of each file, as long as it is unchanged.
_OPEN: dict[Path, DataFile] = {}


class WrongSize(Exception):
    """A data file whose size is not the one the manifest records: refused before it is hashed."""

    def __init__(self, path: Path, size: int) -> None:
        super().__init__(f"{path}: {size} bytes")
        self.path = path
        self.size = size


# False inside `hashes_not_saved()`: the cache is read, never written (`harness view` writes nothing anywhere).
_SAVE_HASHES: contextvars.ContextVar[bool] = contextvars.ContextVar("save_hashes", default=True)


@contextlib.contextmanager
def hashes_not_saved() -> Iterator[None]:
    """Within this block (this thread's), files are hashed as always and the hash cache is read, never written."""
    token = _SAVE_HASHES.set(False)
    try:
        yield
    finally:
        _SAVE_HASHES.reset(token)


def open_files(paths: list[Path], sizes: Sequence[int] | None = None) -> list[DataFile]:
    """Open, map and hash `paths` (hashes remembered across runs by each file's identity); with `sizes`, a file of
    another size is refused before a byte of it is hashed (`WrongSize`)."""
    cache = Path(os.environ.get(HASH_CACHE_ENV) or DEFAULT_HASH_CACHE).expanduser()
    with _LOCK:
        known = _load_hashes(cache)
        before = len(known)
        files: list[DataFile] = []
        for path in paths:
            file = _OPEN.get(path)
            if file is None or not file.unchanged():
                try:
                    file = _OPEN[path] = DataFile(path)
                except OSError as err:
                    raise UserError(f"{path}: cannot read it: {err.strerror or err}") from None
            if sizes is not None and file.size != sizes[len(files)]:
                raise WrongSize(path, file.size)
            file.hash(known)
            files.append(file)
        if len(known) != before and _SAVE_HASHES.get():
            _save_hashes(cache, known)
    return files


def release_mapped_pages() -> None:
    """Let go of the pages every open data file has read so far (`DataFile._release`): called between batches,
    so that a run holds the images of one batch, not of every row it has read."""
    with _LOCK:
        files = list(_OPEN.values())
    for file in files:
        file._release()


def verify_files(
    folder: Path, entries: Sequence[Mapping[str, Any]], manifest_path: Path, allowed: Path | None = None
) -> list[DataFile]:
    """Open the manifest's file `entries` (paths inside `folder`, or `allowed` for a Hub snapshot's links) and
    check each against its sha256 and size: a file that differs stops the run, naming it."""
    paths = []
    for entry in entries:
        try:
            path = resolve_inside(folder, entry["path"], allowed)
        except ValueError as err:
            raise UserError(f"{manifest_path}: file {err}") from None
        if not path.exists():  # a FIFO or a device is there, and refused when it is opened
            raise UserError(f"{folder / entry['path']}: missing; the build manifest {manifest_path} lists it")
        paths.append(path)
    try:
        files = open_files(paths, [entry["num_bytes"] for entry in entries])
    except WrongSize as err:
        entry = entries[paths.index(err.path)]
        raise UserError(
            f"{folder / entry['path']}: {err.size} bytes, where the build manifest {manifest_path} records "
            f"{entry['num_bytes']}: the file changed after the build (not hashed); rebuild it or restore it"
        ) from None
    for file, entry in zip(files, entries, strict=True):
        if file.sha256 != entry["sha256"] or file.size != entry["num_bytes"]:
            raise UserError(
                f"{folder / entry['path']}: sha256 {file.sha256[:16]}... ({file.size} bytes) does not match "
                f"the build manifest's {entry['sha256'][:16]}... ({entry['num_bytes']} bytes): the file "
                "changed after the build; rebuild it or restore it"
            )
    return files
