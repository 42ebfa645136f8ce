"""Where a build lives: a local folder, or a pushed build named `hf://ORG/NAME@REVISION` (`load_images` and the
harness's `--data_dir` read the same strings the same way)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

HUB_PREFIX = "hf://"
# What `huggingface_hub.utils.validate_repo_id` accepts of an owner or a repo name (it raises HFValidationError on the
# rest: a traceback where it was met first).
HUB_NAME = re.compile(r"[\w.-]{1,96}")


@dataclass(frozen=True)
class HubLocation:
    """`hf://ORG/NAME@REVISION` in parts; `name` None: `hf://ORG`, a repo per benchmark (`ORG/<benchmark>`)."""

    org: str
    name: str | None
    revision: str | None

    def repo_for(self, dataset_path: str) -> str:
        benchmark = Path(dataset_path).name
        if self.name is not None and self.name != benchmark:
            raise ValueError(f"{self}: holds dataset {self.name!r}, the task reads {benchmark!r}")
        return f"{self.org}/{self.name or benchmark}"

    def __str__(self) -> str:
        return f"{HUB_PREFIX}{self.org}{'/' + self.name if self.name else ''}{'@' + self.revision if self.revision else ''}"


def parse_hub_location(text: str | Path | None) -> HubLocation | None:
    """`hf://ORG[/NAME][@REVISION]` -> its parts; anything else -> None (a local folder). ValueError for an
    `hf://` string of another shape."""
    if text is None or not str(text).startswith(HUB_PREFIX):
        return None
    body = str(text)[len(HUB_PREFIX) :]
    path, _, revision = body.partition("@")
    parts = [p for p in path.split("/") if p]
    if not 1 <= len(parts) <= 2 or (revision == "" and "@" in body):
        raise ValueError(f"{text!r}: expected hf://ORG/NAME@REVISION (or hf://ORG[@REVISION])")
    for part in parts:
        if not HUB_NAME.fullmatch(part) or part[0] in "-." or part[-1] in "-." or "--" in part or ".." in part:
            raise ValueError(
                f"{text!r}: {part!r} is not a name the Hub gives an owner or a repo (letters, digits, '-', '_' and "
                "'.', at most 96, not starting or ending with '-' or '.')"
            )
    return HubLocation(parts[0], parts[1] if len(parts) == 2 else None, revision or None)
