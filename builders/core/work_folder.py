"""A build's work folder in its output folder, and the lock that makes a killed build's leftovers safe to remove.

    with work_folder(out_dir, "mmlongbench") as work:
        ...  # spools, the offline fixture, copies of archived text files

A build of NAME into OUT holds `OUT/.NAME.lock` while it works. The lock is `flock`: the system releases it when
the process ends, however it ends, so a killed build never blocks the next one, and a second build of NAME into
OUT while the first runs stops at once, naming the first's pid. Holding the lock, a build knows that no other
build of NAME works in OUT, so every `OUT/.NAME-work-*` folder there was left by a killed one: it removes them
before making its own, which it removes when it ends. The lock file holds the pid only (never a command line,
which may carry a secret) and is removed on the way out, with OUT itself when the build made it and left nothing in it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from builders.core import contract
from builders.core.errors import BuildError


def lock_path(out_dir: Path, name: str) -> Path:
    return Path(out_dir) / f".{name}.lock"


def work_prefix(name: str) -> str:
    return f".{name}-work-"


@contextmanager
def build_lock(out_dir: Path, name: str) -> Iterator[None]:
    """Hold `OUT/.NAME.lock` (OUT is made if need be, and removed again if the build leaves it empty: a build that
    fails writes nothing); a `BuildError` naming the holder when another build of NAME holds it."""
    made = not os.path.lexists(out_dir)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    try:
        with _holding(out_dir, name):
            yield
    finally:
        if made:
            with suppress(OSError):  # not empty (the build is there, or another build's files): kept
                os.rmdir(out_dir)


@contextmanager
def _holding(out_dir: Path, name: str) -> Iterator[None]:
    path = lock_path(out_dir, name)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "starting"
            os.close(fd)
            raise BuildError(
                f"{out_dir} is in use by another build of {name} (pid {holder}, holding {path}); wait "
                "for it to finish, or build into another --out"
            ) from None
        # The holder we waited for may have removed the file meanwhile: hold the lock of the file that is there.
        try:
            current = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            current = False
        if current:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        with suppress(OSError):
            os.unlink(path)  # before unlocking: a build that opens it now makes a file of its own
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def remove_leftovers(out_dir: Path, name: str) -> list[Path]:
    """Remove the work folders of NAME in OUT (call it holding the lock: then no build of NAME is using any);
    returns what was removed."""
    removed = []
    for entry in Path(out_dir).iterdir():
        if entry.name.startswith(work_prefix(name)) and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


@contextmanager
def work_folder(out_dir: str | os.PathLike[str], name: str) -> Iterator[Path]:
    """Hold the lock of NAME in OUT, remove what killed builds left there, and yield a fresh work folder
    (`OUT/.NAME-work-<pid>-<random>`), removed on the way out."""
    out = Path(out_dir)
    with build_lock(out, name):
        remove_leftovers(out, name)
        work = Path(tempfile.mkdtemp(prefix=f"{work_prefix(name)}{os.getpid()}-", dir=out))
        try:
            yield work
        finally:
            contract.release_pins(work)  # the verified Hub files its view of a release read (`contract.regular_files`)
            shutil.rmtree(work, ignore_errors=True)
