"""The offline stand-in of VLMEvalKit's MMLongBench files (`vlmevalkit/MMLongBench_{L}.tsv` and
`MMLongBench_{L}_images.tar.gz`), written beside the fixture release it is made from.

Made as `scripts/build_mmlongbench_tsv.py` makes the real ones from the release: each row's V1.1 prompt (its user text,
with `<image token>` for each image, `:224-242, 476-494`), `answer` as `str()` of the release's gold, `image_path` the
JSON list of its images, `extra_info` the row's typed gold, answer format, question and DocVQA fields, `task` and
`source_dataset` VLMEvalKit's names. 32K and 128K take the V1.1 sample of the fixture's 32K and 128K files; 256K and
512K, whose raw files are not public, take every other example of the 128K rows (every fourth for NIAH), as the
`_sr50`/`_sr25` subsets keep 50 % and 25 % (`mmlongbench.py:33-38`). The images go into each length's archive under
`mmlb_image/`, as the release's archives hold them. Nonsense in the right formats: scores on it say the pipeline
runs.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from builders.core.contract import IMAGE_PLACEHOLDER
from builders.mmlongbench.fixture import _tar
from builders.mmlongbench.leaves import LEAVES, V1_1, Config
from builders.mmlongbench.plan import plan_config
from builders.mmlongbench.release import Release
from builders.mmlongbench.vlmevalkit.layout import HUB_FOLDER, IMAGE_ROOT, archive_name, tsv_name
from builders.mmlongbench.vlmevalkit.rows import SOURCE_OF_LEAF

COLUMNS = (
    "index",
    "question_id",
    "question",
    "answer",
    "image_path",
    "mmlb_subset",
    "task",
    "source_dataset",
    "question_type",
    "tags",
    "extra_info",
)
SUBSETS = {
    "32k": {"vrag": "vrag_32", "NIAH": "NIAH_32", "ICL": "ICL_32", "summ": "summ_32", "documentQA": "documentQA_32"},
    "128k": {
        "vrag": "vrag_128",
        "NIAH": "NIAH_128",
        "ICL": "ICL_128",
        "summ": "summ_128",
        "documentQA": "documentQA_128",
    },
}
for _k in ("256", "512"):
    SUBSETS[f"{_k}k"] = {
        t: f"{t}_{_k}_sr25" if t == "NIAH" else f"{t}_{_k}_sr50" for t in ("vrag", "NIAH", "ICL", "summ", "documentQA")
    }


def _keep(task: str, length: str, example: int) -> bool:
    if length in ("32k", "128k"):
        return True
    return example % (4 if task == "NIAH" else 2) == (0 if length == "256k" else 1)


def _records(release: Release, length: str) -> tuple[list[dict[str, str]], set[str]]:
    source_length = length if length in ("32k", "128k") else "128k"
    records, images, index = [], set(), 0
    for leaf in LEAVES:
        task, source = SOURCE_OF_LEAF[leaf.dataset]
        cfg = Config(leaf, source_length, V1_1)
        examples: dict[str, int] = {}
        gold = {row["id"]: row for row in _release_rows(release, cfg)}
        for plan in plan_config(cfg, release.text_path(cfg.file), False):
            example = examples.setdefault(plan.source_id, len(examples))
            if not _keep(task, length, example):
                continue
            answer = json.loads(plan.answer)
            extra = {"answer": answer, "question": _question(plan.prompt, leaf.loader), "dataset_name": source}
            if leaf.category == "docvqa":
                row = gold[plan.source_id]
                extra.update(
                    answer_format=plan.answer_format, doc_name=row["doc_name"], ans_page_list=row["ans_page_list"]
                )
            records.append(
                {
                    "index": str(index),
                    "question_id": plan.source_id,
                    "question": plan.prompt.replace(IMAGE_PLACEHOLDER, "<image token>"),
                    "answer": str(answer),
                    "image_path": json.dumps(plan.images, ensure_ascii=False),
                    "mmlb_subset": SUBSETS[length][task],
                    "task": task,
                    "source_dataset": source,
                    "question_type": "open",
                    "tags": json.dumps(["多图"], ensure_ascii=False),
                    "extra_info": json.dumps(extra, ensure_ascii=False),
                }
            )
            images.update(plan.images)
            index += 1
    return records, images


def _release_rows(release: Release, cfg: Config) -> list[dict[str, object]]:
    if cfg.leaf.category != "docvqa":
        return []
    with open(release.text_path(cfg.file), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _question(prompt: str, loader: str) -> str:
    # What `extra_info.question` holds: the asked question (`sample['question']` after the converters' edits)
    if loader == "icl":
        return "<image token>"
    tail = prompt.split("\n\nQuestion: ", 1)
    return tail[1].replace(IMAGE_PLACEHOLDER, "<image token>") if len(tail) == 2 else ""


def write_tsv(path: Path, records: list[dict[str, str]]) -> None:
    """`DataFrame.to_csv(sep='\\t', index=False)`'s dialect: quoted where needed, quotes doubled, `\\n` lines."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, delimiter="\t", lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    path.write_text(out.getvalue(), encoding="utf-8")


def write_vlmevalkit_fixture(release_root: Path, work: Path, lengths: list[str]) -> None:
    """Write `vlmevalkit/` (the TSV and image archive of each length) into `release_root`, from the fixture release
    there."""
    release = Release(release_root, work)
    try:
        folder = release_root / HUB_FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        for length in lengths:
            records, paths = _records(release, length)
            write_tsv(folder / tsv_name(length), records)
            files: dict[str, bytes] = {}
            release.read_images({path: "the fixture" for path in paths}, files.__setitem__)
            _tar(folder / archive_name(length), IMAGE_ROOT, files)
    finally:
        release.close()
