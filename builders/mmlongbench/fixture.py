"""A tiny stand-in for the authors' release, in its exact file formats, written offline (`--source fixture`).

Every leaf at every length gets a test file shaped as the official loaders read it (field names, image
paths relative to `mmlb_image/`, depth/permutation rows sharing an id, the ICL exemplar sets, the claims
files; the ablation sets' extra fields and files), with a few small drawn images. Longer lengths hold more items, and images recur across rows and
lengths as in the real release. With `archives=True` the release is written as the published archives
(`mmlb_data.tar.gz`, `vrag.tar.gz`, ...) instead of folders. The content is nonsense: scores on it say
that the pipeline runs, nothing about a model.
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from builders.mmlongbench.leaves import ABLATION_LEAVES, CLAIMS_FILES, LEAF_BY_NAME, LEAVES, LENGTHS, Leaf
from builders.mmlongbench.release import IMAGE_DIR, TEXT_DIR

FIXTURE_VERSION = "3"  # 3: the shorter ICL files show exemplars the 128K file lacks
IDS_PER_FILE = 3
ICL_CLASSES = 3
WORDS = (
    "harbour lantern meadow copper violin glacier orchard velvet canyon ember quartz willow falcon "
    "marble prairie saffron thunder cobalt lagoon"
).split()

_Writer = Callable[[str, bytes], None]


def _image(path: str, width: int, height: int, seed: int, fmt: str) -> bytes:
    image = Image.new("RGB", (width, height), ((seed * 67) % 256, (seed * 131) % 256, (seed * 29) % 256))
    draw = ImageDraw.Draw(image)
    draw.rectangle([4, 4, width // 2, height // 2], fill=((seed * 13) % 256, 255 - seed % 256, 90))
    if seed >= 256:  # the colours repeat every 256 images: a mark of the cycle keeps every image distinct
        draw.rectangle([width - 12, height - 12, width - 4, height - 4], fill=(seed // 256 * 40 % 256, 0, 200))
    out = io.BytesIO()
    image.save(out, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return out.getvalue()


class _Images:
    """Image files by path, each drawn once."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def natural(self, path: str) -> str:
        if path not in self.files:
            seed = len(self.files) + 1
            self.files[path] = _image(path, 84 + 28 * (seed % 3), 56 + 28 * (seed % 2), seed, "JPEG")
        return path

    def page(self, path: str) -> str:
        if path not in self.files:
            self.files[path] = _image(path, 112, 140, len(self.files) + 1, "PNG")
        return path


def _text(seed: int, words: int = 12) -> str:
    return " ".join(WORDS[(seed * 7 + k * 3) % len(WORDS)] for k in range(words))


def _rows_vrag(leaf: Leaf, n: int, images: _Images) -> list[dict[str, Any]]:
    rows = []
    for base in range(IDS_PER_FILE):
        gold = {
            "doc_id": f"{leaf.dataset}-{base}-gold",
            "title": f"Gold {base}",
            "text": f"The entity {base} lives in Paris. " + _text(base),
        }
        for variant in range(leaf.variants):
            ctxs = [
                {"doc_id": f"{leaf.dataset}-{base}-{k}", "title": f"Entity {base}-{k}", "text": _text(base + k)}
                for k in range(n + 1)
            ]
            ctxs.insert(variant % (n + 2), gold)
            # `original_question` (the entity named: the `triviaqa` ablation) and `positive_ctxs` (`occ_vrag`).
            rows.append(
                {
                    "id": f"{leaf.dataset}_{base}",
                    "question": f" Where does entity {base} live?",
                    "original_question": f"Where does Entity {base} live?",
                    "answer": ["Paris", "City of Light"],
                    "ctxs": ctxs,
                    "positive_ctxs": [gold],
                    "image": images.natural(f"vrag/{leaf.dataset}/entity_{base}.jpg"),
                }
            )
    return rows


def _rows_vh(leaf: Leaf, n: int, images: _Images) -> list[dict[str, Any]]:
    rows = []
    for base in range(IDS_PER_FILE):
        for variant in range(leaf.variants):
            haystack = [images.natural(f"vh/haystack/{(base * 5 + k) % 30:03d}.jpg") for k in range(2 * n + 2)]
            haystack.insert(variant % len(haystack), images.natural(f"vh/needle/{base}.jpg"))
            rows.append(
                {
                    "id": f"{leaf.dataset}_{base}",
                    "question": "For the image with a cat, is there a dog?",
                    "answer": "Yes" if base % 2 == 0 else "No",
                    "ctxs": haystack,
                }
            )
    return rows


def _interleaved(base: int, n: int, images: _Images) -> tuple[list[dict[str, str]], list[str]]:
    ctxs, image_list = [], []
    for k in range(n + 2):
        ctxs.append({"text": _text(base * 3 + k)})
        if k % 2 == 0:
            ctxs.append({"text": "<image>"})
            image_list.append(images.natural(f"mm-niah/obelics/{(base + k) % 12:03d}.jpg"))
    return ctxs, image_list


def _rows_mmniah(leaf: Leaf, n: int, images: _Images) -> list[dict[str, Any]]:
    rows = []
    for base in range(IDS_PER_FILE):
        for _variant in range(leaf.variants):
            ctxs, image_list = _interleaved(base, n, images)
            row: dict[str, Any] = {"id": f"{leaf.dataset}_{base}", "ctxs": ctxs, "image_list": image_list}
            if leaf.loader == "mmniah_text":
                if "count" in leaf.dataset:
                    row.update(
                        question="How many times is the lantern mentioned in each needle? Answer as a list.",
                        answer=[1, base % 3, 2],
                    )
                else:
                    row.update(question="What is the secret word?", answer="copper kettle")
            elif leaf.loader == "mmniah_image_count":
                needle = images.natural(f"mm-niah/needles/{base}.jpg")
                row.update(
                    needle_image_list=[needle],
                    question="How many times does this cartoon <image> appear in each image? Answer as a list.",
                    answer=[(base + k) % 2 for k in range(len(image_list))],
                )
            else:
                row.update(
                    choices_image=[images.natural(f"mm-niah/choices/{base}_{c}.jpg") for c in "ABCD"],
                    question="Which of the following images appears in a certain image of the above document?",
                    answer=base % 4,
                )
            rows.append(row)
    return rows


def _icl(leaf: Leaf, n: int, images: _Images, fresh: int = 0) -> dict[str, Any]:
    """`fresh`: where the second exemplar set's images are numbered from (0: the same images as the first set), so
    that the shorter files give each class exemplars the 128K file lacks: the pool the longer configs grow from."""
    domains = ("Birds", "Plants") if leaf.dataset == "inat2021" else ("all",)
    data: dict[str, Any] = {}
    for domain in domains:

        def shot(label: int, k: int, domain: str = domain) -> dict[str, Any]:
            return {"image": images.natural(f"icl/{leaf.dataset}/{domain}/class{label}_{k}.jpg"), "id": label}

        sets = [
            [[shot(label, (s + r) % 4 + (fresh if s else 0)) for label in range(ICL_CLASSES)] for r in range(n)]
            for s in range(2)
        ]
        tests = [
            {"image": images.natural(f"icl/{leaf.dataset}/{domain}/test_{t}.jpg"), "answer": t % ICL_CLASSES}
            for t in range(IDS_PER_FILE + 1)
        ]
        data[domain] = {"exemplar_list": sets, "test_example": tests}
    return data


def _rows_summ(leaf: Leaf, n: int, images: _Images) -> list[dict[str, Any]]:
    rows = []
    for base in range(IDS_PER_FILE):
        doc = f"gao-{12 + base}-{156 + base}" if leaf.loader == "govreport" else f"case-{base}-complaint"
        pages = [images.page(f"summ/{leaf.dataset}/{doc}/{doc}_page{p}.png") for p in range(n + 1)]
        row: dict[str, Any] = {"id": f"{leaf.dataset}_{doc}", "image_list": pages}
        if leaf.loader == "govreport":
            row["summary"] = [
                {"section_title": "Why GAO Did This Study", "paragraphs": [_text(base, 20)]},
                {"section_title": "What GAO Found", "paragraphs": [_text(base + 1, 15), _text(base + 2)]},
            ]
        else:
            row["summary"] = _text(base, 30)
        rows.append(row)
    return rows


_DOCQA_ANSWERS = (
    ("3", "Integer"),
    ("12.5", "Float"),
    ("copper lantern", "String"),
    ("Not answerable", "None"),
    ('["harbour", "2019"]', "List"),
)


def _rows_docqa(leaf: Leaf, n: int, images: _Images) -> list[dict[str, Any]]:
    rows = []
    for base in range(IDS_PER_FILE + 2):
        doc = f"{leaf.dataset}-report-{base:04d}"
        if leaf.dataset == "slidevqa":
            pages = [images.page(f"docqa/slidevqa/{doc}/{doc}-{p + 1}-1024.jpg") for p in range(n + 2)]
        else:
            pages = [images.page(f"docqa/{leaf.dataset}/{doc}/{doc}_page{p}.png") for p in range(n + 2)]
        answer, answer_format = _DOCQA_ANSWERS[base % len(_DOCQA_ANSWERS)]
        rows.append(
            {
                "id": doc,
                "doc_name": doc,
                "page_list": pages,
                "question": f"What does page {base} report?",
                "answer": answer,
                "answer_format": answer_format,
                "ans_page_list": [base % (n + 2)],
            }
        )
    return rows


def _rows_text_haystack(leaf: Leaf, n: int, images: _Images) -> list[dict[str, Any]]:
    """Image-needle retrieval rows with the haystack's text removed (the ablation's name for it)."""
    rows = _rows_mmniah(leaf, n, images)
    for row in rows:
        row["ctxs"] = [c for c in row["ctxs"] if c["text"] == "<image>"]
    return rows


def _rows_text_doc(leaf: Leaf, n: int, images: _Images) -> list[dict[str, Any]]:
    """MMLongBench-Doc's rows with each page's OCR text beside its path (`text_mmlongdoc_K*.jsonl`)."""
    rows = _rows_docqa(LEAF_BY_NAME["docvqa_mmlongbench_doc"], n, images)
    for row in rows:
        row["page_text_list"] = [
            f"Page {p}. " + _text(p + len(row["doc_name"]), 15) for p in range(len(row["page_list"]))
        ]
    return rows


_ROWS = {
    "vrag": _rows_vrag,
    "vh": _rows_vh,
    "mmniah_text": _rows_mmniah,
    "mmniah_image_count": _rows_mmniah,
    "mmniah_image_mc": _rows_mmniah,
    "govreport": _rows_summ,
    "multilexsum": _rows_summ,
    "docqa": _rows_docqa,
    "text_docqa": _rows_text_doc,
}
_ABLATION_ROWS = {"text_haystack_ret_image": _rows_text_haystack}


def fixture_files() -> tuple[dict[str, bytes], dict[str, bytes]]:
    """(text files under mmlb_data/, image files under mmlb_image/), by relative path."""
    images = _Images()
    texts: dict[str, bytes] = {}
    for index, length in enumerate(LENGTHS):
        n = index + 1
        for leaf in (*LEAVES, *ABLATION_LEAVES):
            if leaf.file(length) in texts:
                continue  # an ablation reading a main file (triviaqa and occ_vrag read the VRAG files)
            if leaf.loader == "icl":
                fresh = 4 * (len(LENGTHS) - n)  # 128K: none; shorter files: images of their own
                texts[leaf.file(length)] = json.dumps(_icl(leaf, n, images, fresh), indent=1).encode()
            else:
                rows = _ABLATION_ROWS.get(leaf.dataset, _ROWS[leaf.loader])(leaf, n, images)
                texts[leaf.file(length)] = "".join(json.dumps(r) + "\n" for r in rows).encode()
    for leaf in LEAVES:
        if leaf.dataset in CLAIMS_FILES:
            claims = [
                {"id": f"{leaf.dataset}_{doc}", "claims": [_text(k, 8) for k in range(3 + k_doc)]}
                for k_doc, doc in enumerate(_summ_docs(leaf))
            ]
            texts[CLAIMS_FILES[leaf.dataset]] = "".join(json.dumps(c) + "\n" for c in claims).encode()
    return texts, images.files


def _summ_docs(leaf: Leaf) -> list[str]:
    if leaf.loader == "govreport":
        return [f"gao-{12 + b}-{156 + b}" for b in range(IDS_PER_FILE)]
    return [f"case-{b}-complaint" for b in range(IDS_PER_FILE)]


def write_fixture(root: str | Path, *, archives: bool = False) -> Path:
    """Write the fixture release into `root` (folders, or the published archives) and return `root`."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    texts, images = fixture_files()
    if not archives:
        for top, files in ((TEXT_DIR, texts), (IMAGE_DIR, images)):
            for rel, data in files.items():
                path = root / top / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
        return root
    _tar(root / "mmlb_data.tar.gz", TEXT_DIR, texts)
    by_archive: dict[str, dict[str, bytes]] = {}
    for rel, data in images.items():
        by_archive.setdefault(rel.split("/")[0], {})[rel] = data  # vrag/... -> vrag.tar.gz, as published
    for archive, files in by_archive.items():
        _tar(root / f"{archive}.tar.gz", IMAGE_DIR, files)
    return root


def _tar(path: Path, top: str, files: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for rel in sorted(files):
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size = len(files[rel])
            info.mtime = 0
            tar.addfile(info, io.BytesIO(files[rel]))
