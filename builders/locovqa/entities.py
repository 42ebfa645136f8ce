"""Entity lists per image, for the collision filter (spec §1.4): pluggable listers, cached per image.

The paper asks GPT-4 "Please list at most 5 entities in this image" for every context image and treats two
images that share an entity as a collision. A lister here returns, per image, its entities or why it could
not list them (a per-image failure, never a silent empty list: an image with no entity listed, such as a COCO
image without instance annotations, is unlisted too, since it could never be found to collide):

- `none`: no lists; the filter is off (recorded as such);
- `coco`: COCO instance annotations (`COCO_DIR/annotations/instances_val2014.json`): the category names an
  image shows, largest area first, at most 5; offline, for OK-VQA's COCO images;
- `cache:FILE`: lists made earlier (JSON lines `{"sha256", "entities"}`, keyed by the image bytes' sha256),
  e.g. by a VLM run or shipped with a source;
- `vlm:MODEL`: any `harness` backend or alias (`--entity-lister-args` are its `--model_args`) asked the
  paper's query, one image per request (through `builders.core.image_questions`: the builder never imports the
  harness); its answers are parsed into entities and appended to
  `--entity-cache`, so a rebuild asks nothing again.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builders.core.errors import BuildError
from builders.core.image_questions import (
    ENTRY_POINT_GROUP,
    AskerFactory,
    ImageQuestion,
    installed_asker_factory,
)
from builders.core.release_json import parse_json
from builders.locovqa.images import SourceImage

QUERY = "Please list at most 5 entities in this image"  # Appendix C / Figure 8, verbatim
MAX_ENTITIES = 5


@dataclass(frozen=True)
class Unlisted:
    """An image the lister could not list (the reason is recorded; such an image is never a distractor, and as
    a content image it fails its item)."""

    reason: str


Entities = frozenset[str] | Unlisted

_ARTICLE = re.compile(r"^(?:a|an|the|some|two|three|several|many)\s+")


def normalise(entity: str) -> str:
    """Case-, space- and plural-folded: "Oranges" and " orange " are one entity; "Boxes" is "box"."""
    text = re.sub(r"[^\w\s-]", " ", entity.lower()).replace("_", " ")
    text = _ARTICLE.sub("", re.sub(r"\s+", " ", text).strip())
    words = text.split(" ")
    last = words[-1]
    if len(last) > 4 and last.endswith("ies"):
        last = last[:-3] + "y"
    elif len(last) > 3 and last.endswith(("ches", "shes", "xes", "zes", "sses")):
        last = last[:-2]
    elif len(last) > 3 and last.endswith("s") and not last.endswith(("ss", "us", "is")):
        last = last[:-1]
    return " ".join([*words[:-1], last]).strip()


def entity_set(entities: Sequence[str]) -> frozenset[str]:
    return frozenset(e for e in (normalise(x) for x in entities) if e)


def listed_entities(entities: Sequence[str], where: str) -> Entities:
    """An image's entity set, or `Unlisted` when none is known: an empty list (a COCO image without instance
    annotations, an empty answer) says nothing about what the image shows, and an empty set would never
    collide, so such an image would always pass the filter."""
    found = entity_set(entities)
    return found if found else Unlisted(f"{where} lists no entity for it (its entities are unknown)")


_BULLET = re.compile(r"^\s*(?:\d+\s*[.):]|[-*\u2022])\s*")


def parse_entities(text: str) -> list[str]:
    """A lister's free-text answer -> at most 5 entities: one per line, or comma/semicolon-separated on one line;
    numbering, bullets, a trailing period and a lead-in line ending in a colon ("Here are 5 entities:") dropped."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if lines and lines[0].rstrip().endswith(":") and len(lines) > 1:
        lines = lines[1:]
    parts = lines if len(lines) > 1 else re.split(r"[,;]", lines[0] if lines else "")
    out = []
    for part in parts:
        item = _BULLET.sub("", part).strip().strip(".").strip()
        item = re.sub(r"\*\*", "", item).split(":")[0].strip()  # "**Cake**: a layered cake" -> "Cake"
        if item:
            out.append(item)
    return out[:MAX_ENTITIES]


class Lister:
    """Lists entities of images; `name` goes into the build request and every row."""

    name = "none"
    enabled = False  # whether there is a filter at all

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}

    def list(self, images: Sequence[SourceImage]) -> dict[str, Entities]:
        """Per image key: its entity set, or `Unlisted` with the reason."""
        return {image.key: frozenset() for image in images}

    def close(self) -> None:
        """Flush caches, release models."""


class TableLister(Lister):
    """Lists from a table made beforehand (COCO annotations by file name)."""

    enabled = True

    def __init__(self, name: str, table: Mapping[str, Sequence[str]], where: str) -> None:
        self.name = name
        self.table = table
        self.where = where

    def describe(self) -> dict[str, Any]:
        digest = hashlib.sha256(json.dumps(sorted((k, list(v)) for k, v in self.table.items())).encode())
        return {"name": self.name, "from": Path(self.where).name, "sha256": digest.hexdigest()}

    def list(self, images: Sequence[SourceImage]) -> dict[str, Entities]:
        out: dict[str, Entities] = {}
        for image in images:
            file = image.key.split("/", 1)[-1]
            entries = self.table.get(file)
            out[image.key] = (
                listed_entities(entries, f"{self.where} ({file})")
                if entries is not None
                else Unlisted(f"{file} is not in {self.where}")
            )
        return out


def read_cache(path: Path) -> dict[str, dict[str, Any]]:
    """sha256 -> cache entry (the last one per image wins); a malformed line is an error naming it."""
    entries: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return entries
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise BuildError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        entry = parse_json(line, f"{path}:{number}")
        try:
            sha = str(entry["sha256"])
            if not isinstance(entry["entities"], list):
                raise TypeError("entities is not a list")
        except (KeyError, TypeError) as exc:
            raise BuildError(f'{path}:{number}: expected {{"sha256": ..., "entities": [...]}} ({exc})') from None
        entries[sha] = entry
    return entries


class CacheLister(Lister):
    """Lists read from an entity cache file, by the sha256 of each image's bytes."""

    enabled = True

    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.is_file():
            raise BuildError(f"entity cache not found: {path}")
        self.entries = read_cache(path)
        self.name = f"cache:{path.name}"

    def describe(self) -> dict[str, Any]:
        digest = hashlib.sha256(json.dumps(sorted((k, v["entities"]) for k, v in self.entries.items())).encode())
        return {"name": self.name, "entries": len(self.entries), "sha256": digest.hexdigest()}

    def list(self, images: Sequence[SourceImage]) -> dict[str, Entities]:
        out: dict[str, Entities] = {}
        for image in images:
            sha = hashlib.sha256(image.read()).hexdigest()
            entry = self.entries.get(sha)
            out[image.key] = (
                listed_entities(entry["entities"], f"{self.path} (sha256 {sha[:12]}...)")
                if entry is not None
                else Unlisted(f"no entry for sha256 {sha[:12]}... in {self.path}")
            )
        return out


class VlmLister(Lister):
    """The paper's lister: a vision-language model asked `QUERY` about each image, through any harness backend
    (`asker_factory`, by default the one the installed harness registers)."""

    enabled = True

    def __init__(
        self,
        model: str,
        model_args: str = "",
        cache: Path | None = None,
        batch_size: int = 8,
        max_gen_toks: int = 64,
        asker_factory: AskerFactory | None = None,
    ) -> None:
        factory = asker_factory or installed_asker_factory()
        if factory is None:
            raise BuildError(
                f"entity lister vlm:{model}: no model backend is installed to ask (the harness registers "
                f"its backends under the entry point group {ENTRY_POINT_GROUP}: pip install -e .)"
            )
        try:
            self.asker = factory(model, model_args, batch_size)
        except ValueError as err:
            raise BuildError(f"entity lister vlm:{model}: {err}") from None
        self.spec = model
        self.identity = self.asker.identity()
        self.name = f"vlm:{model}"
        self.cache = cache
        self.max_gen_toks = max_gen_toks
        self.entries = read_cache(cache) if cache is not None else {}
        self.asked = 0

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.identity, "query": QUERY, "max_gen_toks": self.max_gen_toks}

    def _cached(self, sha: str) -> list[str] | None:
        entry = self.entries.get(sha)
        return entry["entities"] if entry is not None and entry.get("lister") == self.name else None

    def list(self, images: Sequence[SourceImage]) -> dict[str, Entities]:
        out: dict[str, Entities] = {}
        questions = []
        for image in images:
            encoded = image.encoded()
            cached = self._cached(encoded.sha256)
            if cached is not None:
                out[image.key] = listed_entities(cached, f"{self.name} (cached)")
                continue
            questions.append(ImageQuestion(image.key, encoded.sha256, encoded.data, encoded.width, encoded.height))
        if not questions:
            return out
        responses = self.asker.ask(questions, QUERY, self.max_gen_toks, "locovqa_entities")
        self.asked += len(questions)
        new_lines = []
        for question, response in zip(questions, responses, strict=True):
            if not response.ok or response.text is None:
                out[question.key] = Unlisted(f"{self.name} failed: {response.error or 'no text'}")
                continue
            entities = parse_entities(response.text)
            out[question.key] = listed_entities(entities, self.name)
            entry = {"sha256": question.sha256, "entities": entities, "lister": self.name, "raw": response.text}
            self.entries[question.sha256] = entry
            new_lines.append(json.dumps(entry, ensure_ascii=False))
        if self.cache is not None and new_lines:
            self.cache.parent.mkdir(parents=True, exist_ok=True)
            with open(self.cache, "a", encoding="utf-8") as handle:
                handle.write("\n".join(new_lines) + "\n")
        return out

    def close(self) -> None:
        self.asker.close()


def make_lister(
    spec: str,
    *,
    coco_instances: Path | None,
    lister_args: str = "",
    cache: Path | None = None,
    where: str = "",
    asker_factory: AskerFactory | None = None,
) -> Lister:
    """`none`, `coco`, `cache:FILE` or `vlm:MODEL`."""
    if spec == "none":
        return Lister()
    if spec == "coco":
        if coco_instances is None:
            raise BuildError(
                f"entity lister 'coco' needs COCO instance annotations{where}: --source coco=DIR with "
                "DIR/annotations/instances_val2014.json"
            )
        from builders.locovqa.coco import instance_entities

        return TableLister("coco", instance_entities(coco_instances), str(coco_instances))
    if spec.startswith("cache:") and len(spec) > 6:
        return CacheLister(Path(spec[6:]))
    if spec.startswith("vlm:") and len(spec) > 4:
        return VlmLister(spec[4:], lister_args, cache, asker_factory=asker_factory)
    raise BuildError(f"unknown entity lister {spec!r}: expected none, coco, cache:FILE or vlm:MODEL")


def lister_specs(
    values: list[str] | None, available: list[str], requested: list[str], synthetic: bool
) -> dict[str, str]:
    """The entity lister of each in-distribution task the sources can build, from `--entity-lister` (SPEC or
    TASK=SPEC); MMStar has no default, and is an error only when its configs are requested."""
    specs: dict[str, str] = {}
    for value in values or []:
        task, sep, spec = value.partition("=")
        if sep and task in ("okvqa", "mmstar"):
            specs[task] = spec
        else:
            specs.update(okvqa=value, mmstar=value)
    out = {}
    for task in available:
        if task in specs:
            out[task] = specs[task]
        elif task == "okvqa":
            out[task] = "coco"
        elif synthetic:
            out[task] = "fixture"  # the stand-in ships MMStar's entity lists as a cache file
        elif task in requested:
            raise BuildError(
                "MMStar's images have no offline entity lists: pass --entity-lister mmstar=vlm:MODEL "
                "(the paper's query through any harness backend), mmstar=cache:FILE (lists made "
                "earlier) or mmstar=none (no collision filter)"
            )
    return out
