"""What a file path a release or a manifest names may be: relative, and inside its folder; and a path a user gives,
with its `~` expanded or one line saying why it cannot be."""

from __future__ import annotations

import os
import posixpath
from pathlib import Path


def expanded(path: str | os.PathLike[str]) -> Path:
    """`path` with a leading `~` or `~user` expanded as a shell does; a `~user` naming no user of this machine (or
    `~` where no home folder is known) is a ValueError saying so in one line (`Path.expanduser` raises a bare
    RuntimeError)."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        head = str(path).split("/", 1)[0]
        raise ValueError(f"{head} names no user's home folder on this machine (is the user name right?)") from None


def relative_path_problem(name: object, folder: str = "release") -> str | None:
    """Why `name` is not a file path relative to a `folder` that stays inside it, judged by its letters alone
    (absolute, a `..` leading out after normalisation, a NUL byte, empty), or None: the rule both a builder
    reading the paths a release names and the harness reading the paths a manifest names apply. A backslash is a
    separator to whoever made the files on Windows, so the path is judged both ways."""
    if not isinstance(name, str) or not name:
        return f"expected a relative file path, got {name!r}"
    if "\x00" in name:
        return f"path {name!r} holds a NUL byte"
    for spelling in {name, name.replace("\\", "/")}:
        if spelling.startswith("/") or (len(spelling) > 1 and spelling[1] == ":" and spelling[0].isalpha()):
            return f"path {name!r} is absolute; a {folder} names its files relative to its own folders"
        normal = posixpath.normpath(spelling)
        if normal == ".." or normal.startswith("../"):
            return f"path {name!r} leads out of the {folder} (through '..')"
    if posixpath.normpath(name) == ".":
        return f"expected a file path, got {name!r}"
    return None
