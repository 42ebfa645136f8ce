"""A tiny stand-in for the authors' release in its exact layout, written offline (`--source fixture`).

Per split, `mm_niah_{split}/annotations/{task}-{needle}.jsonl` for the six tasks and `mm_niah_{split}/images.tar.gz`
(as the Hub publishes the images; members under `images/`). Records follow the README's data format and cover
what the official input and scorer meet: text options (retrieval-image, an int answer), image options
(reasoning-image: option images appended after the context's), counting answers as lists and once as the JSON
text of a list, a single depth and a list of depths, a needle at depth 1.0, context lengths in every official bin
and one under 1K (which the official heat map leaves out). Two records of each text-needle task share one
haystack. The test records hold no answer, as the release's test split (its answers are private). The content is made up: scores on it say the pipeline runs, nothing about a model.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from builders.mm_niah.configs import NEEDLES, SPLITS, TASKS

FIXTURE_VERSION = "1"
RECORDS = 6
# One context length per record, spread over the official bins (1k ... 64k) and one under 1K.
LENGTHS = (600, 1500, 5000, 13000, 30000, 70000)
DEPTHS = (0.0, 0.25, 0.5, 0.75, 1.0, 0.4)
WORDS = "harbour lantern meadow copper violin glacier orchard velvet canyon ember quartz willow falcon".split()
ITEMS = ("oak", "book", "vase", "kite", "lamp", "drum")
OPTIONS = ("a red cartoon fox", "a blue cartoon whale", "a green cartoon frog", "a yellow cartoon bee")


def _jpeg(seed: int, size: tuple[int, int] = (64, 48)) -> bytes:
    image = Image.new("RGB", size, ((seed * 67) % 256, (seed * 131) % 256, (seed * 29) % 256))
    ImageDraw.Draw(image).rectangle([4, 4, size[0] // 2, size[1] // 2], fill=((seed * 13) % 256, 200, 90))
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=90)
    return out.getvalue()


def _text(seed: int, words: int = 10) -> str:
    return " ".join(WORDS[(seed * 7 + k * 3) % len(WORDS)] for k in range(words))


def _haystack(doc: int, images: int) -> tuple[list[str], list[str]]:
    """A document's paragraphs and its images' names."""
    names = [f"obelics/doc{doc}_{k}.jpg" for k in range(images)]
    return [_text(doc * 5 + k) for k in range(images + 1)], names


def _context(paragraphs: list[str], needles: dict[int, str]) -> str:
    """Paragraphs with `<image>` between them, text needles inserted after the paragraphs they name."""
    parts = []
    for k, paragraph in enumerate(paragraphs):
        parts.append(paragraph + (" " + needles[k] if k in needles else ""))
    return "\n<image>\n".join(parts)


def _record(task: str, needle: str, split: str, i: int) -> dict[str, Any]:
    doc = i // 2 if needle == "text" else 100 + i  # text needles: two records per haystack
    paragraphs, images = _haystack(doc + (0 if split == "val" else 50), 2 + doc % 3)
    depth: float | list[float] = DEPTHS[i]
    meta: dict[str, Any] = {"choices": None, "choices_image_path": None}
    needles: list[str] = []
    text_needles: dict[int, str] = {}
    question: str = ""
    answer: Any = None
    if needle == "text":
        item = ITEMS[i]
        if task == "counting":
            counts = [i % 3, (i + 1) % 4, 2]
            needles = [f"Little penguins counted here: {c}." for c in counts]
            text_needles = {k: n for k, n in enumerate(needles)}
            depth = [DEPTHS[i], min(1.0, DEPTHS[i] + 0.1), 0.9]
            question = "Please list the number of little penguins in each needle, in order, as a Python list."
            answer = json.dumps(counts) if i == 3 else counts  # once as the JSON text of the list
        elif task == "retrieval":
            needles = [f"The secret item is a {item}."]
            text_needles = {1: needles[0]}
            question, answer = "What is the secret item in the document?", item
        else:
            needles = [f"Mia keeps her {item} in the attic.", "Everything kept in the attic is blue."]
            text_needles = {0: needles[0], 1: needles[1]}
            question, answer = f"What colour is Mia's {item}?", "blue"
    else:
        pasted = f"needles/cartoon_{split}_{task}_{i}.jpg"
        needles = [pasted]
        images = images[:-1] + [pasted]  # the needle pasted into the document's last image
        if task == "counting":
            counts = [i % 2, 1, (i + 2) % 3]
            question = "Please list the number of cartoon frogs in each image, in order, as a Python list."
            answer, depth = counts, [DEPTHS[i], 0.5, 0.8]
        elif task == "retrieval":
            meta["choices"] = list(OPTIONS)
            question, answer = "Which of the following cartoon images appears in the document?", i % 4
        else:
            meta["choices_image_path"] = [f"choices/{split}_{i}_{k}.jpg" for k in range(4)]
            question, answer = "Which image shows the object the document's cartoon points at?", (i + 1) % 4
    context = _context(paragraphs, text_needles)
    meta.update(
        {
            "placed_depth": depth,
            "context_length": LENGTHS[i],
            "context_length_text": LENGTHS[i] - 256 * len(images),
            "context_length_image": 256 * len(images),
            "num_images": len(images),
            "needles": needles,
        }
    )
    record = {"id": i, "images_list": images, "context": context, "question": question, "answer": answer, "meta": meta}
    if split == "test":  # the test split's answers are private: its records hold none
        del record["answer"]
    return record


def _image_names(records: list[dict[str, Any]]) -> list[str]:
    names = {name for r in records for name in r["images_list"] + (r["meta"]["choices_image_path"] or [])}
    return sorted(names)


def _tar_gz(files: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(files[name]), 0, 0o644
            tar.addfile(info, io.BytesIO(files[name]))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as zipped:
        zipped.write(raw.getvalue())
    return out.getvalue()


def write_fixture(root: Path) -> Path:
    """Write the fixture release under `root` (replacing what is there) and return `root`."""
    for split in SPLITS:
        folder = root / f"mm_niah_{split}"
        (folder / "annotations").mkdir(parents=True, exist_ok=True)
        records_of_split: list[dict[str, Any]] = []
        for task in TASKS:
            for needle in NEEDLES:
                records = [_record(task, needle, split, i) for i in range(RECORDS)]
                records_of_split += records
                lines = "".join(json.dumps(r) + "\n" for r in records)
                (folder / "annotations" / f"{task}-{needle}.jsonl").write_text(lines)
        names = _image_names(records_of_split)
        files = {f"images/{name}": _jpeg(k + (0 if split == "val" else 1000)) for k, name in enumerate(names)}
        (folder / "images.tar.gz").write_bytes(_tar_gz(files))
    return root
