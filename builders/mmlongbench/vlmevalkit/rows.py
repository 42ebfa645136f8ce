"""A VLMEvalKit TSV record -> the data contract's row, as VLMEvalKit would send and score it.

- the leaf: the record's `task` and `source_dataset` (`vrag`/`NIAH`/`ICL`/`summ`/`documentQA`; infoseek, vh_single,
  counting-image, cars196, gov, mmlongdoc, ...: `build_mmlongbench_tsv.py:61-74`), one config per leaf and length;
- the prompt: the `question` text with VLMEvalKit's interleaving (`build_prompt`, `mmlongbench.py:221-245`): each
  `<image token>` or `<image>` takes the next image, a placeholder past the last image is dropped, images no
  placeholder took follow the text (all of them before it when the text has none); written with the contract's
  `<image>` at each image's place, so the i-th placeholder is the i-th image;
- the gold: `extra_info`'s typed `answer` where it has one, else the `answer` column's text (`:280-282`), and
  DocVQA's `answer_format` and judged `question` (`:292-298`); errors name the TSV, its line and the row's index.

Ids are the published ones: the row's `id` is the TSV's `index`, its `source_id` the `question_id` (shared by an
example's depths or permutations); `tsv_row` is the record's 0-based place in the whole file, which VLMEvalKit
indexes the Visual Haystack's default answer by (`:314-315`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from datasets import Features, Value

from builders.core.contract import IMAGE_PLACEHOLDER, JsonValue
from builders.core.errors import BuildError
from builders.core.release_json import parse_json
from builders.core.release_paths import relative_name
from builders.mmlongbench.leaves import DEPTHS, LEAVES, Config
from builders.mmlongbench.rows import PlannedRow, features
from builders.mmlongbench.vlmevalkit.tsv import Record

# (task, source_dataset) -> our leaf's dataset key
LEAF_OF_SOURCE: dict[tuple[str, str], str] = {
    ("vrag", "infoseek"): "infoseek",
    ("vrag", "viquae"): "viquae",
    ("NIAH", "vh_single"): "vh_single",
    ("NIAH", "vh_multi"): "vh_multi",
    ("NIAH", "retrieval-text"): "mmniah_ret_text",
    ("NIAH", "counting-text"): "mmniah_count_text",
    ("NIAH", "reasoning-text"): "mmniah_reason_text",
    ("NIAH", "retrieval-image"): "mmniah_ret_image",
    ("NIAH", "counting-image"): "mmniah_count_image",
    ("NIAH", "reasoning-image"): "mmniah_reason_image",
    ("ICL", "cars196"): "stanford_cars",
    ("ICL", "sun397"): "sun397",
    ("ICL", "inat2021"): "inat2021",
    ("ICL", "food101"): "food101",
    ("summ", "gov"): "govreport",
    ("summ", "lexsum"): "multilexsum",
    ("documentQA", "mmlongdoc"): "mmlongbench_doc",
    ("documentQA", "longdocurl"): "longdocurl",
    ("documentQA", "slidevqa"): "slidevqa",
}
SOURCE_OF_LEAF = {leaf: source for source, leaf in LEAF_OF_SOURCE.items()}
assert set(SOURCE_OF_LEAF) == {leaf.dataset for leaf in LEAVES}
_PLACEHOLDERS = re.compile(r"(<image token>|<image>)")


def tsv_features(image_storage: str) -> Features:
    """The columns of a VLMEvalKit config: the release configs' and what the TSV adds."""
    base = features(image_storage)
    added = {
        "tsv_index": Value("string"),  # the TSV's `index` (also the row's `id`)
        "tsv_row": Value("int32"),  # the record's 0-based place in its TSV: VLMEvalKit's row_id
        "task": Value("string"),  # VLMEvalKit's task: vrag, NIAH, ICL, summ, documentQA
        "source_dataset": Value("string"),
        "mmlb_subset": Value("string"),  # vrag_256_sr50, NIAH_256_sr25, ...
        "question": Value("string"),  # extra_info's question: what DocVQA's judge is shown
    }
    return Features({**base, **added})


def leaf_of(record: Record, where: str) -> str:
    key = (record.fields["task"], record.fields["source_dataset"])
    if key not in LEAF_OF_SOURCE:
        raise BuildError(
            f"{where}: task {key[0]!r} with source_dataset {key[1]!r} is none of VLMEvalKit's MMLongBench datasets "
            "(mmlongbench.py _metric_for raises on it too)"
        )
    return LEAF_OF_SOURCE[key]


def image_paths(text: str, where: str) -> list[str]:
    """`image_path`: a JSON list of paths relative to `mmlb_image/` (`toliststr` would `eval` it; it is read as JSON
    here, which holds every list `json.dumps` wrote), or one bare path."""
    if text.startswith("[") and text.endswith("]") and len(text) > 1:
        value = parse_json(text, f"{where}, image_path")
        if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
            raise BuildError(f"{where}: image_path should be a JSON list of paths, got {text[:80]}")
        paths = list(value)
    else:
        paths = [text]
    return [relative_name(p, f"{where}: image_path") for p in paths]


def interleaved(text: str, count: int) -> str:
    """The prompt VLMEvalKit's `build_prompt` sends, with `<image>` where each of the `count` images goes."""
    parts, placed, out = _PLACEHOLDERS.split(text), 0, []
    for part in parts:
        if _PLACEHOLDERS.fullmatch(part):
            if placed < count:
                out.append(IMAGE_PLACEHOLDER)
                placed += 1
        else:
            out.append(part)
    if placed == 0 and count:
        return IMAGE_PLACEHOLDER * count + "".join(out)
    return "".join(out) + IMAGE_PLACEHOLDER * (count - placed)


def extra_info(text: str, where: str) -> dict[str, JsonValue]:
    """`_parse_extra_info` (`mmlongbench.py:58-66`): the JSON object, or {} for an empty field. A field that is not
    a JSON object is an error here (VLMEvalKit would score its row against the `answer` column's text)."""
    if not text.strip():
        return {}
    value = parse_json(text, f"{where}, extra_info")
    if not isinstance(value, dict):
        raise BuildError(f"{where}: extra_info should be a JSON object, got {text[:80]}")
    return value


def planned_row(cfg: Config, record: Record, where: str, eval_index: int, variant: int) -> PlannedRow:
    """One record of `cfg`'s leaf as a planned row. `variant`: its place among the rows of its `question_id` in this
    config (named a depth or permutation only where every one of the leaf's is there, in order, as the release gives
    them: `VlmevalkitConfigs.rows`; 256K/512K may keep fewer)."""
    fields = record.fields
    images = image_paths(fields["image_path"], where)
    extra = extra_info(fields["extra_info"], where)
    answer = extra["answer"] if "answer" in extra else fields["answer"]
    answer_format = extra.get("answer_format", "")
    question = extra.get("question", "")
    if not isinstance(answer_format, str) or not isinstance(question, str):
        raise BuildError(f"{where}: extra_info's answer_format and question should be strings")
    extras: dict[str, object] = {
        "tsv_index": fields["index"],
        "tsv_row": record.position,
        "task": fields["task"],
        "source_dataset": fields["source_dataset"],
        "mmlb_subset": fields["mmlb_subset"],
        "question": question,
        "doc_name": str(extra.get("doc_name", "")) if "doc_name" in extra else "",
        "answer_pages": _pages(extra.get("ans_page_list"), where),
    }
    return PlannedRow(
        id=fields["index"],
        source_id=fields["question_id"],
        eval_index=eval_index,
        prompt=interleaved(fields["question"], len(images)),
        images=images,
        answer=json.dumps(answer, ensure_ascii=False),
        answer_format=answer_format,
        variant=variant,
        extras=extras,
        where=where,
    )


def _pages(value: object, where: str) -> list[int]:
    if value in (None, []):
        return []
    if isinstance(value, list):
        numbers = [int(p) if isinstance(p, str) and p.strip().isdecimal() else p for p in value]
        if all(isinstance(p, int) and not isinstance(p, bool) and 0 <= p < 2**31 for p in numbers):
            return numbers
    raise BuildError(f"{where}: extra_info's ans_page_list should be a list of page numbers, got {str(value)[:80]}")


def make_tsv_row(cfg: Config, plan: PlannedRow, claims: Mapping[str, list[str]] | None) -> dict[str, object]:
    """The row's own columns (the images are `plan.images`)."""
    leaf = cfg.leaf
    needle = leaf.needle if plan.variant >= 0 else ""
    extras = plan.extras
    return {
        "id": plan.id,
        "source_id": plan.source_id,
        "eval_index": plan.eval_index,
        "category": leaf.category,
        "dataset": leaf.dataset,
        "length": cfg.tokens,
        "prompt": plan.prompt,
        "answer_prefix": leaf.answer_prefix,
        "max_new_tokens": leaf.max_new_tokens,
        "answer": plan.answer,
        "answer_format": plan.answer_format,
        "needle": needle,
        "needle_position": plan.variant if needle else -1,
        "depth": DEPTHS[plan.variant] if needle == "depth" and plan.variant < len(DEPTHS) else None,
        "doc_name": extras["doc_name"],
        "answer_pages": extras["answer_pages"],
        "claims": (claims or {}).get(plan.source_id, []),
        "tsv_index": extras["tsv_index"],
        "tsv_row": extras["tsv_row"],
        "task": extras["task"],
        "source_dataset": extras["source_dataset"],
        "mmlb_subset": extras["mmlb_subset"],
        "question": extras["question"],
    }
