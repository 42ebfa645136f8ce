"""What a file path a release or a manifest names may be: relative, and inside its folder."""

from __future__ import annotations

import posixpath


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
