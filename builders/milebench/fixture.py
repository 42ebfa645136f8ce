"""A tiny stand-in for the authors' release in its exact layout, written offline (`--source fixture`).

Every subset gets `<Name>/<Name>.json` and `<Name>-adv.json` shaped as the official code reads them (an
instruction pool indexed by `task_instruction_id`, contexts with `{image#i}` / `{table#i}` references, choice
lists, golds, `image_quantity_level`), and small drawn images under `images/`. Records cover what the
official prompt code and scorers meet: every image-count level (one Many record of 32 images in the two needle
subsets), a context placing fewer images than it lists (the extra image and the one before it go first), two
adjacent images (CLEVR-Change), tables, options holding regex characters, transparent PNGs. ALFRED and
nuscenes ship the authors' kind of `combined_1_images/` grids (drawn plainly here, so a build can tell it used
them as they are). With `archives=True` the release is the six `MileBench_part{k}.tar.gz` instead of folders.
The content is made up: scores on it say the pipeline runs, nothing about a model.
"""

from __future__ import annotations

import io
import json
import random
import tarfile
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from builders.milebench.release import RELEASE_FOLDER
from builders.milebench.subsets import MULTIPLE_CHOICE, NEEDLE, ROUGE_L, SUBSETS, Subset, image_quantity_level

FIXTURE_VERSION = "1"
RECORDS = 3
RELEASED_GRIDS = ("ALFRED", "nuscenes")
MANY = 32  # images of the Many record of each needle subset
WORDS = (
    "harbour lantern meadow copper violin glacier orchard velvet canyon ember quartz willow falcon marble "
    "prairie saffron thunder cobalt lagoon"
).split()


def _jpeg(width: int, height: int, seed: int) -> bytes:
    image = Image.new("RGB", (width, height), ((seed * 67) % 256, (seed * 131) % 256, (seed * 29) % 256))
    ImageDraw.Draw(image).rectangle([2, 2, width // 2, height // 2], fill=((seed * 13) % 256, 255 - seed % 256, 90))
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=90)
    return out.getvalue()


def _png_with_alpha(width: int, height: int, seed: int) -> bytes:
    image = Image.new("RGBA", (width, height), ((seed * 53) % 256, 40, (seed * 97) % 256, 255))
    ImageDraw.Draw(image).rectangle([0, 0, width // 3, height - 1], fill=(255, 255, 255, 0))  # transparent strip
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _text(seed: int, words: int = 8) -> str:
    return " ".join(WORDS[(seed * 7 + k * 3) % len(WORDS)] for k in range(words))


def _image_counts(subset: Subset) -> list[int]:
    counts = [2, 4, 7]  # Few, Few, Medium
    if subset.family == NEEDLE:
        counts[2] = MANY
    return counts


def _options(subset: Subset, seed: int) -> list[str]:
    if subset.name == "GPR1200":
        return [f"image{k}" for k in range(1, 6)]
    if subset.name == "TQA":  # regex characters survive normalisation in options: `$`, `*`, `|`, a digit period
        return ["$5 per unit", "2*3 = 6", "a|b", "3.5 metres"]
    return [f"{_text(seed + k, 3)} ({k})" for k in range(4)]


def _context(subset: Subset, images: int, seed: int) -> str:
    """Text with the record's image references; the question last."""
    if subset.name == "CLEVR-Change":
        return "{image#1}{image#2}" + " Describe the change:"
    parts = []
    for k in range(1, images + 1):
        ref = f"{{table#{k}}}" if subset.name == "MultiModalQA" and k == images else f"{{image#{k}}}"
        parts.append(f"{_text(seed + k, 4)} {ref}")
    if subset.family == NEEDLE:
        parts.insert(len(parts) // 2, f"The special magic {WORDS[seed % len(WORDS)]} number is: {_password(seed)}.")
    question = {
        NEEDLE: f"What is the special magic {WORDS[seed % len(WORDS)]} number?",
        ROUGE_L: "What happens next?",
    }.get(subset.family, f"Question: what is shown {_text(seed, 2)}?")
    return " ".join(parts) + f"\n{question}"


def _password(seed: int) -> str:
    return str(1000000 + (seed * 7919) % 9000000)


def _record(subset: Subset, sample_id: int, image_paths: list[str], adv: bool) -> dict[str, Any]:
    seed = sample_id + 11 * SUBSETS.index(subset)
    images = len(image_paths)
    instance: dict[str, Any] = {"context": _context(subset, images, seed), "images_path": image_paths}
    if subset.family == MULTIPLE_CHOICE:
        options = _options(subset, seed)
        gold = options[seed % len(options)]
        if adv:  # shuffled options, the same gold
            options = options[1:] + options[:1]
        instance["choice_list"] = options
        response: Any = gold
    elif subset.family == NEEDLE:
        response = int(_password(seed))  # the release stores some golds as numbers; the official code str()s them
    elif subset.family == ROUGE_L:
        response = ("In other words, " if adv else "") + f"the {_text(seed, 3)} moved to the left."
    else:
        response = _text(seed, 2) if not adv else _text(seed, 2).upper()
    if subset.name == "ActionLocalization" and sample_id == 1:
        # Four images, two placed: the official prompt drops the first and puts the second before the context.
        instance["context"] = instance["context"].replace(" {image#3}", "").replace(" {image#4}", "")
    if subset.name in RELEASED_GRIDS and not adv:
        instance["combined_1_images"] = [f"{sample_id}-0.jpg"]
    return {
        "sample_id": sample_id,
        "task_instruction_id": sample_id % 2,
        "task_instance": instance,
        "response": response,
        "image_quantity_level": image_quantity_level(images),
    }


def subset_files(subset: Subset) -> dict[str, bytes]:
    """The files of one subset's folder, by path inside it."""
    files: dict[str, bytes] = {}
    pool_seed = 1 + 97 * SUBSETS.index(subset)
    records: list[list[str]] = []
    for sample_id, count in enumerate(_image_counts(subset)):
        paths = []
        for k in range(count):
            # Needle haystacks draw from a shared pool of 12 images, as the release's do; others are per sample.
            name = f"pool/{k % 12}.jpg" if subset.family == NEEDLE else f"{sample_id}/{k}.jpg"
            if subset.name == "IEdit" and k == 1:
                name = f"{sample_id}/{k}.png"
            if f"images/{name}" not in files:
                seed = pool_seed + len(files)
                files[f"images/{name}"] = (
                    _png_with_alpha(40, 30, seed)
                    if name.endswith(".png")
                    else _jpeg(36 + 4 * (seed % 5), 28 + 4 * (seed % 3), seed)
                )
            paths.append(name)
        records.append(paths)
    instructions = [
        f"Based on the provided images, answer the question about {subset.display.lower()}.",
        f"Look at the images and respond to the {subset.display.lower()} question.",
    ]
    for adv in (False, True):
        data = [_record(subset, sid, paths, adv) for sid, paths in enumerate(records)]
        meta = {"task_instruction": instructions, "question_type": subset.question_type, "num_sample": len(data)}
        files[f"{subset.name}{'-adv' if adv else ''}.json"] = json.dumps(
            {"meta_data": meta, "data": data}, indent=1
        ).encode()
    if subset.name in RELEASED_GRIDS:
        for sample_id in range(len(records)):
            image = Image.new("RGB", (64, 48), (200, 200, 200))
            ImageDraw.Draw(image).rectangle([8, 8, 40, 30], fill=(20, 20 + 60 * sample_id, 200))
            out = io.BytesIO()
            image.save(out, format="JPEG", quality=90)
            files[f"combined_1_images/{sample_id}-0.jpg"] = out.getvalue()
    return files


def release_files() -> dict[str, bytes]:
    """Every file of the fixture release, by path under the release folder (`<Name>/...`)."""
    return {f"{subset.name}/{rel}": data for subset in SUBSETS for rel, data in subset_files(subset).items()}


def write_fixture(root: str | Path, *, archives: bool = False, seed: int = 0) -> Path:
    """Write the fixture release into `root` (`root/MileBench/<Name>/...`, or the part archives) and return root.

    `seed` shuffles the order of the archives' members (the release's order is a directory walk's)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    files = release_files()
    if not archives:
        for rel, data in files.items():
            path = root / RELEASE_FOLDER / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return root
    parts: dict[int, list[str]] = {}
    for rel in files:
        parts.setdefault(next(s.archive for s in SUBSETS if s.name == rel.split("/")[0]), []).append(rel)
    for part, names in sorted(parts.items()):
        names = sorted(names)
        random.Random(seed * 100 + part).shuffle(names)
        with tarfile.open(root / f"MileBench_part{part}.tar.gz", "w:gz") as tar:
            for rel in names:
                info = tarfile.TarInfo(f"{RELEASE_FOLDER}/{rel}")
                info.size = len(files[rel])
                info.mtime = 0
                tar.addfile(info, io.BytesIO(files[rel]))
    return root
