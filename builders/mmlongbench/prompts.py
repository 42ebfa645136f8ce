"""A release row -> the prompt the official code builds (commit 26197d2, `data.py` `load_*`), with its images.

The user templates are the official ones, character for character (they are the benchmark's prompts);
`{context}` and `{question}` are filled with `str.format`, as the official code fills them. The answer
prefix (the official `system_template`) is not part of the prompt: the harness prefills it as the
assistant turn and prepends it to the output before scoring, as the official code does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from builders.core.contract import IMAGE_PLACEHOLDER
from builders.core.errors import BuildError

ANSWER_FORMAT = "Write your answer in the following format:\nAnswer: [answer]\n\n{context}\n\nQuestion: {question}"

USER_TEMPLATES: dict[str, str] = {
    "vrag": "Use the given documents to write a concise and short answer to the question about the entity shown in "
    "the image. " + ANSWER_FORMAT,
    "vh": "You are given a set of images. Please answer the question in Yes or No based on the given images. "
    + ANSWER_FORMAT,
    "mmniah_text": "You are given interleaved text and images. Please answer the question based on the given text and "
    "images. " + ANSWER_FORMAT,
    "mmniah_image_count": "You are given interleaved text and images. Please answer the question based on the given "
    "text and images. " + ANSWER_FORMAT,
    "mmniah_image_mc": "You are given interleaved text and images. Please answer the question with the option's letter "
    "(A, B, etc.) based on the given text and images. " + ANSWER_FORMAT,
    "icl": "You need to recognize entities in images. Use the provided mapping from the image to label to assign a "
    'label to the test image. Only output "label: {{label}}" and nothing else.\n\nTraining examples:\n'
    "{context}\n\nNow classify this image: {question}",
    "govreport": "You are given a government report from U.S. Government Accountability Office (GAO), and you are "
    "tasked to summarize the report. Write a concise summary (around 550 words) organized in multiple "
    "paragraphs. Where applicable, the summary should contain a short description of why GAO did this "
    "study, what GAO found, and what GAO recommends.\n\nGovernment Report:\n{context}\n\n"
    "Now please summarize the report.",
    "multilexsum": "You are given the legal documents in a civil rights lawsuit, and you are tasked to summarize the "
    "case. Write a concise summary of one paragraph (200 to 250 words). The summary should contain a "
    "short description of the background, the parties involved, and the outcomes of the case.\n\n"
    "Legal documents:\n{context}\n\nNow please summarize the case.",
    "docqa": "You are given a document with text and images, and a question. Answer the question as concisely as you "
    "can, using a single phrase or sentence if possible. If the question cannot be answered based on the "
    "information in the article, write 'Not answerable.' " + ANSWER_FORMAT,
}

PASSAGE_TEMPLATE = "Document (Title: {title}): {text}"
ICL_ITEM_TEMPLATE = IMAGE_PLACEHOLDER + "\nlabel: {label}"
PAGE_TEMPLATE = "Document {doc_id:.15} (page {page_id}): " + IMAGE_PLACEHOLDER
TEXT_PAGE_TEMPLATE = "Document {doc_id:.15} (page {page_id}): \n{page_text}"  # load_text_doc_qa
DOCQA_QUESTION = "Based on Document {doc_id:.15}, answer the following question. "


@dataclass
class Assembled:
    """What a release row becomes: the prompt, its images (paths under mmlb_image/) and the gold."""

    prompt: str
    images: list[str]
    answer: Any  # the gold as the official scorer receives it
    answer_format: str = ""
    extras: dict[str, Any] = field(default_factory=dict)


class RowFormatError(BuildError):
    pass


def field_of(row: Mapping[str, object], key: str, where: str, kind: type | tuple[type, ...] | None = None) -> Any:
    if key not in row:
        raise RowFormatError(f"{where}: missing field {key!r} (fields: {', '.join(sorted(row)) or 'none'})")
    value = row[key]
    if kind is not None and not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise RowFormatError(f"{where}: field {key!r} should be {names}, got {type(value).__name__}")
    return value


# The official DocVQA scorer (`eval_docqa_score`) knows these answer formats and raises on any other.
DOCQA_FORMATS = ("Integer", "Float", "String", "None", "List")


def gold_of(row: Mapping[str, object], where: str, kind: str) -> Any:
    """The row's `answer`, checked to be what its official scorer reads, so a malformed gold fails the build
    (naming the row) instead of crashing or silently scoring 0 in a run.

    kind: `text` (a string or a list of alias strings, SubEM / VH / ROUGE), `index` (an option's 0-based int),
    `counts` (a non-empty list of ints), `label` (an int class id).
    """
    value = field_of(row, "answer", where)
    if kind == "text":
        ok = isinstance(value, str) or (isinstance(value, list) and value and all(isinstance(v, str) for v in value))
        expected = "a string or a non-empty list of strings"
    elif kind == "counts":
        ok = (
            isinstance(value, list)
            and bool(value)
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        )
        expected = "a non-empty list of integers"
    else:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        expected = "a non-negative integer" + (" (the option's index)" if kind == "index" else " (the class id)")
    if not ok:
        raise RowFormatError(f"{where}: field 'answer' should be {expected}, got {json.dumps(value)[:80]}")
    return value


def _fill(loader: str, context: str, question: str) -> str:
    return USER_TEMPLATES[loader].format(context=context, question=question)


def _passages(row: Mapping[str, object], where: str, template: str | None) -> str:
    return join_passages(field_of(row, "ctxs", where, list), where, template)


def join_passages(ctxs: list[Any], where: str, template: str | None) -> str:
    """Passages joined by a blank line, each through `template` (title and text) or as its bare text."""
    try:
        return "\n\n".join(template.format(**c) if template else c["text"] for c in ctxs)
    except (KeyError, TypeError) as exc:
        raise RowFormatError(
            f"{where}: every item of 'ctxs' needs {'title and text' if template else 'text'} ({exc!r})"
        ) from None


def _strings(row: Mapping[str, object], key: str, where: str) -> list[str]:
    value = field_of(row, key, where, list)
    if not all(isinstance(v, str) for v in value):
        raise RowFormatError(f"{where}: field {key!r} should be a list of image paths (strings)")
    return list(value)


def assemble_vrag(row: Mapping[str, object], where: str) -> Assembled:
    question = IMAGE_PLACEHOLDER + field_of(row, "question", where, str)
    image = field_of(row, "image", where, str)
    return Assembled(
        _fill("vrag", _passages(row, where, PASSAGE_TEMPLATE), question), [image], gold_of(row, where, "text")
    )


def assemble_vh(row: Mapping[str, object], where: str) -> Assembled:
    images = _strings(row, "ctxs", where)
    context = "\n".join([IMAGE_PLACEHOLDER] * len(images))
    return Assembled(_fill("vh", context, field_of(row, "question", where, str)), images, gold_of(row, where, "text"))


def assemble_mmniah_text(row: Mapping[str, Any], where: str) -> Assembled:
    question = field_of(row, "question", where, str)
    # Counting questions have a list of counts; retrieval and reasoning a text answer.
    kind = (
        "counts"
        if isinstance(row.get("answer"), list) and row["answer"] and not isinstance(row["answer"][0], str)
        else "text"
    )
    return Assembled(
        _fill("mmniah_text", _passages(row, where, None), question),
        _strings(row, "image_list", where),
        gold_of(row, where, kind),
    )


def assemble_mmniah_image_count(row: Mapping[str, object], where: str) -> Assembled:
    # The counting question already holds the needle images' placeholders.
    images = _strings(row, "image_list", where) + _strings(row, "needle_image_list", where)
    return Assembled(
        _fill("mmniah_image_count", _passages(row, where, None), field_of(row, "question", where, str)),
        images,
        gold_of(row, where, "counts"),
    )


def assemble_mmniah_image_mc(row: Mapping[str, object], where: str) -> Assembled:
    choices = _strings(row, "choices_image", where)
    question = field_of(row, "question", where, str)
    question += "".join(f"\n{chr(ord('A') + k)}. {IMAGE_PLACEHOLDER}" for k in range(len(choices)))
    return Assembled(
        _fill("mmniah_image_mc", _passages(row, where, None), question),
        _strings(row, "image_list", where) + choices,
        gold_of(row, where, "index"),
    )


def assemble_icl(example: Mapping[str, object], exemplars: Sequence[Mapping[str, Any]], where: str) -> Assembled:
    try:
        context = "\n\n".join(ICL_ITEM_TEMPLATE.format(label=item["id"]) for item in exemplars)
        images = [item["image"] for item in exemplars] + [field_of(example, "image", where, str)]
    except (KeyError, TypeError) as exc:
        raise RowFormatError(f"{where}: every exemplar needs 'image' and 'id' ({exc!r})") from None
    return Assembled(_fill("icl", context, IMAGE_PLACEHOLDER), images, gold_of(example, where, "label"))


def page_label(path: str, split_index: int, text: str | None = None) -> str:
    """The official page label of an image path: the folder names the document, the text after "page" the
    page (`split("page")[1]` for summarization, `[-1]` for DocVQA, as the official loaders differ); followed
    by the page's image, or by its OCR text (`text`, the `text_doc` ablation)."""
    doc_id, page_id = path.split("/")[-2], path.split("page")[split_index].split(".")[0]
    if text is None:
        return PAGE_TEMPLATE.format(doc_id=doc_id, page_id=page_id)
    return TEXT_PAGE_TEMPLATE.format(doc_id=doc_id, page_id=page_id, page_text=text)


def pages_context(paths: list[str], split_index: int, where: str, texts: list[str] | None = None) -> str:
    """The pages' labels joined by a blank line (with their OCR texts when given, one per page)."""
    try:
        return "\n\n".join(page_label(p, split_index, None if texts is None else texts[k]) for k, p in enumerate(paths))
    except IndexError:
        raise RowFormatError(f"{where}: page paths should look like DOC/..page<N>.<ext> (got {paths[:3]}...)") from None


def assemble_govreport(row: Mapping[str, object], where: str) -> Assembled:
    images = _strings(row, "image_list", where)
    try:
        reference = "\n\n".join(
            aspect["section_title"] + ":\n" + "\n".join(aspect["paragraphs"])
            for aspect in field_of(row, "summary", where, list)
        )
    except (KeyError, TypeError) as exc:
        raise RowFormatError(
            f"{where}: 'summary' should be a list of {{section_title, paragraphs}} ({exc!r})"
        ) from None
    return Assembled(_fill("govreport", pages_context(images, 1, where), ""), images, reference)


def assemble_multilexsum(row: Mapping[str, object], where: str) -> Assembled:
    images = _strings(row, "image_list", where)
    return Assembled(
        _fill("multilexsum", pages_context(images, 1, where), ""), images, field_of(row, "summary", where, str)
    )


@dataclass
class DocQuestion:
    """What a DocVQA row asks and expects, whatever form its pages take (images, or OCR text in the ablation)."""

    question: str  # with the official "Based on Document {doc_id:.15}, ..." prefix
    answer: Any
    answer_format: str
    extras: dict[str, Any]


def doc_question(row: Mapping[str, object], where: str) -> DocQuestion:
    doc_name = str(field_of(row, "doc_name", where))
    question = DOCQA_QUESTION.format(doc_id=doc_name) + field_of(row, "question", where, str)
    answer = field_of(row, "answer", where)
    answer_format = field_of(row, "answer_format", where, str)
    if answer_format not in DOCQA_FORMATS:
        raise RowFormatError(
            f"{where}: field 'answer_format' should be one of {', '.join(DOCQA_FORMATS)}, got {answer_format!r}"
        )
    return DocQuestion(
        question, answer, answer_format, {"doc_name": doc_name, "answer_pages": answer_pages(row, where)}
    )


def answer_pages(row: Mapping[str, object], where: str) -> list[int]:
    """`ans_page_list`: a list of page numbers (integers, or integers written as text); absent or null is none."""
    pages = row.get("ans_page_list") or []
    if isinstance(pages, list):
        numbers = [int(p) if isinstance(p, str) and p.strip().isdecimal() else p for p in pages]
        if all(isinstance(p, int) and not isinstance(p, bool) and 0 <= p < 2**31 for p in numbers):
            return numbers
    raise RowFormatError(
        f"{where}: field 'ans_page_list' should be a list of page numbers, got {json.dumps(pages)[:80]}"
    )


def assemble_docqa(row: Mapping[str, object], where: str) -> Assembled:
    pages = _strings(row, "page_list", where)
    asked = doc_question(row, where)
    return Assembled(
        _fill("docqa", pages_context(pages, -1, where), asked.question),
        pages,
        asked.answer,
        asked.answer_format,
        asked.extras,
    )


ASSEMBLERS = {
    "vrag": assemble_vrag,
    "vh": assemble_vh,
    "mmniah_text": assemble_mmniah_text,
    "mmniah_image_count": assemble_mmniah_image_count,
    "mmniah_image_mc": assemble_mmniah_image_mc,
    "govreport": assemble_govreport,
    "multilexsum": assemble_multilexsum,
    "docqa": assemble_docqa,
}


def check_placeholders(assembled: Assembled, where: str) -> None:
    """Every image has its place in the prompt: never an image dropped or a placeholder without one."""
    count = assembled.prompt.count(IMAGE_PLACEHOLDER)
    if count != len(assembled.images):
        raise RowFormatError(
            f"{where}: the prompt has {count} {IMAGE_PLACEHOLDER} placeholder(s) but the row names "
            f"{len(assembled.images)} image(s)"
        )


def gold_json(answer: object) -> str:
    """The gold as JSON text: a string, a list of aliases, an integer or a list of counts, as the release has it."""
    return json.dumps(answer, ensure_ascii=False)
