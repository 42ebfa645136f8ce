"""Which file of the results folder a viewer URL may name: a relative path that stays inside the folder once every
link is followed, of a kind the viewer shows. Anything else is answered 404, never read."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

# What the report links and the viewer shows: its figures and its text.
SERVED = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".svg": "image/svg+xml",
    ".md": "text/plain; charset=utf-8",
}


def inside(root: Path, relative: str) -> Path | None:
    """The file `relative` names under `root`, or None: absolute, `..`, a NUL, a backslash, a link (anywhere on the
    way) that leads out of `root`, not a regular file, or not a kind in `SERVED`."""
    if not relative or "\x00" in relative or "\\" in relative:
        return None
    pure = PurePosixPath(relative)
    if (
        pure.is_absolute()
        or any(part in ("..", "") for part in relative.split("/"))
        or pure.suffix.lower() not in SERVED
    ):
        return None
    base = root.resolve()
    try:
        target = (base / pure).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not target.is_relative_to(base) or not target.is_file():
        return None
    return target
