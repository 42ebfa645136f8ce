"""The ablation sets' loaders (commit 26197d2, `data.py`): a release row -> the prompt the official code builds.

- `text_rag` (`load_text_rag`, dataset `triviaqa`): a ViQuAE row with its image replaced by the original
  TriviaQA question, which names the entity; no image.
- `vrag_occlusion` (`load_vrag_occlusion`, dataset `occ_vrag`): a VRAG row with every passage whose `doc_id`
  is one of its `positive_ctxs` removed; with a sample, only the first row of each sampled id.
- `text_docqa` (`load_text_doc_qa`, dataset `text_doc`): an MMLongBench-Doc row with each page's OCR text
  (`page_text_list`) in place of the page image; no image.
- the text-haystack set goes through the main `mmniah_image_mc` assembler, as `load_data` sends it there.

A default build makes an ablation config only when the release can give it (`unavailable` says why not), since
the published release need not hold these files; a config named with `--configs` must build or fail.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from builders.core.contract import IMAGE_PLACEHOLDER
from builders.mmlongbench.leaves import Config
from builders.mmlongbench.prompts import (
    ANSWER_FORMAT,
    PASSAGE_TEMPLATE,
    USER_TEMPLATES,
    Assembled,
    RowFormatError,
    doc_question,
    field_of,
    gold_of,
    join_passages,
    pages_context,
)
from builders.mmlongbench.release import Release, read_lines

ABLATION_TEMPLATES: dict[str, str] = {
    "text_rag": "Use the given documents to write a concise and short answer to the question about a named entity. "
    + ANSWER_FORMAT,
    # Occlusion changes the passages, not the prompt.
    "vrag_occlusion": USER_TEMPLATES["vrag"],
    "text_docqa": "You are given a document, and a question. Answer the question as concisely as you can, using a "
    "single phrase or sentence if possible. If the question cannot be answered based on the information "
    "in the article, write 'Not answerable.' " + ANSWER_FORMAT,
}

# The fields each ablation loader reads from a release row (the rest is checked row by row while planning).
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "text_rag": ("id", "original_question", "ctxs", "answer"),
    "vrag_occlusion": ("id", "question", "image", "ctxs", "positive_ctxs", "answer"),
    "mmniah_image_mc": ("id", "question", "ctxs", "image_list", "choices_image", "answer"),
    "text_docqa": ("page_list", "page_text_list", "question", "doc_name", "answer", "answer_format"),
}


def _fill(loader: str, context: str, question: str) -> str:
    return ABLATION_TEMPLATES[loader].format(context=context, question=question)


def assemble_text_rag(row: Mapping[str, object], where: str) -> Assembled:
    context = join_passages(field_of(row, "ctxs", where, list), where, PASSAGE_TEMPLATE)
    return Assembled(
        _fill("text_rag", context, field_of(row, "original_question", where, str)), [], gold_of(row, where, "text")
    )


def _doc_ids(items: list[Any], key: str, where: str) -> list[Any]:
    try:
        return [c["doc_id"] for c in items]
    except (KeyError, TypeError):
        raise RowFormatError(
            f"{where}: every item of {key!r} needs a 'doc_id' (the occlusion removes passages by it)"
        ) from None


def assemble_vrag_occlusion(row: Mapping[str, object], where: str) -> Assembled:
    ctxs = field_of(row, "ctxs", where, list)
    gold = set(_doc_ids(field_of(row, "positive_ctxs", where, list), "positive_ctxs", where))
    negatives = [c for c, doc_id in zip(ctxs, _doc_ids(ctxs, "ctxs", where), strict=True) if doc_id not in gold]
    question = IMAGE_PLACEHOLDER + field_of(row, "question", where, str)
    return Assembled(
        _fill("vrag_occlusion", join_passages(negatives, where, PASSAGE_TEMPLATE), question),
        [field_of(row, "image", where, str)],
        gold_of(row, where, "text"),
    )


def assemble_text_docqa(row: Mapping[str, object], where: str) -> Assembled:
    pages = field_of(row, "page_list", where, list)
    texts = field_of(row, "page_text_list", where, list)
    if len(pages) != len(texts) or not all(isinstance(v, str) for v in (*pages, *texts)):  # the loader asserts it
        raise RowFormatError(
            f"{where}: 'page_list' and 'page_text_list' should be lists of strings of one length "
            f"(got {len(pages)} pages and {len(texts)} texts)"
        )
    asked = doc_question(row, where)
    return Assembled(
        _fill("text_docqa", pages_context(pages, -1, where, texts), asked.question),
        [],
        asked.answer,
        asked.answer_format,
        asked.extras,
    )


ABLATION_ASSEMBLERS = {
    "text_rag": assemble_text_rag,
    "vrag_occlusion": assemble_vrag_occlusion,
    "text_docqa": assemble_text_docqa,
}


def release_file(release: Release, relpath: str) -> Path | None:
    """The one place the ablation code resolves a release path: the text file, or None when the release lacks it."""
    return release.text_path(relpath) if release.has_text(relpath) else None


def unavailable(release: Release, cfg: Config) -> str | None:
    """Why the release cannot give this ablation config (its file is absent, or its first row lacks a field the
    official loader reads), or None when it can."""
    path = release_file(release, cfg.file)
    if path is None:
        return f"{cfg.file} is not in the release"
    if cfg.leaf.loader not in REQUIRED_FIELDS:
        return None
    first = next((line for _, line in read_lines(path)), None)
    try:
        row = json.loads(first) if first is not None else None
    except (ValueError, RecursionError):  # not JSON, or past the int(str) digit limit
        return None  # planning names the bad line
    if not isinstance(row, dict):
        return None
    missing = [key for key in REQUIRED_FIELDS[cfg.leaf.loader] if key not in row]
    return f"{cfg.file} rows have no {', '.join(repr(k) for k in missing)}" if missing else None
