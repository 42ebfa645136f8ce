"""Paths a release names, kept inside the release.

A builder reads the files a release names: fields of its jsonl/json files, entries of its folders, members of
its archives. Each such name is taken relative to a *base*: a folder the builder looks for by a fixed name
(`mmlb_image/`, a MileBench subset folder, COCO's `val2014/`), resolved first, so that the user may keep it on
another disk behind a symbolic link. Inside a base, a name must stay inside it:

- lexically (`relative_name`): not absolute, no `..` leading out after normalisation, no NUL byte;
- on disk (`release_path`): after following every symbolic link, the file is still under the base;
- in an archive (`builders.core.release_archive`): member names as above, and no symbolic or hard link
  member pointing out.

A violation is a `BuildError` naming where the path came from (file and line, record or member) and the path:
a hostile release must not make a build store another file of the machine in a dataset.
"""

from __future__ import annotations

import os
import posixpath
import stat
from pathlib import Path
from typing import cast

from builders.core.contract import relative_path_problem
from builders.core.errors import BuildError


def relative_name(name: object, where: str) -> str:
    """`name`, a path a release gives relative to some base, normalised (POSIX separators, no `.`/`..` steps);
    an absolute or escaping one is a `BuildError` naming `where` (the file and line it came from) and the path."""
    problem = relative_path_problem(name)
    if problem is not None:
        raise BuildError(f"{where}: {problem}"[:400])
    return posixpath.normpath(cast(str, name))  # no problem found: a str


def release_path(base: Path, name: object, where: str) -> Path:
    """The file `name` names under `base`, symbolic links followed; it must stay under `base` (itself resolved,
    so a base kept elsewhere behind a link is fine). Returns the resolved path, which is what is then read."""
    return ReleaseFolder(base).path(name, where)


class ReleaseFolder:
    """A base folder resolved once, for a build that reads thousands of files from it: `path` costs one `lstat` per
    level of the name (what `os.path.realpath` spends on every level of the whole path, in Python), and follows
    a link met on the way in full."""

    def __init__(self, base: Path) -> None:
        self.base = Path(base)
        self.root = os.path.realpath(base)
        self._inside = self.root.rstrip(os.sep) + os.sep

    def path(self, name: object, where: str) -> Path:
        """`release_path(base, name, where)`; `name` as a release gives it (anything but a safe relative path is an
        error)."""
        rel = relative_name(name, where)
        current = self.root
        for part in rel.split("/"):
            current = os.path.join(current, part)
            try:
                is_link = stat.S_ISLNK(os.lstat(current).st_mode)
            except OSError:  # nothing there (or not readable): nothing to follow; reading it will say what
                return Path(os.path.join(self.root, rel))
            if is_link:
                real = os.path.realpath(os.path.join(self.root, rel))
                if real != self.root and not real.startswith(self._inside):
                    raise BuildError(
                        f"{where}: path {name!r} leads out of {self.base} through a symbolic link (to {real})"[:600]
                    )
                return Path(real)
        return Path(current)


def release_files(folder: Path, suffix: str) -> list[str]:
    """The names of the files in `folder` whose name ends with `suffix` (any case), sorted; an entry that is a
    symbolic link leading out of `folder` is a `BuildError` naming it."""
    suffix = suffix.lower()
    names = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if not entry.name.lower().endswith(suffix):
                continue
            if entry.is_symlink():  # the only entries that can lead out; checked before anything follows them
                release_path(folder, entry.name, f"{folder}: entry {entry.name}")
            if entry.is_file():
                names.append(entry.name)
    return sorted(names)
