"""What V1.1 (EdinburghNLP/MMLongBench at 22b9f27, the README's "V1.1" of 2026-02-24) changed in the rows, against the
paper's code (26197d2); every other loader, prompt and sample is the paper's, byte for byte.

- VRAG (`load_vrag`, `data.py:48-56` at 22b9f27, commit bf8fbae): rows whose `image` path holds a double quote are
  dropped ("not supported by the NFS system") BEFORE the 100 ids are sampled (`:58-61`), so `random.sample` draws
  from fewer ids and the sample shifts (1 such id in 130: 16-22 of the 100 change, depending on where it sorts).
  The ablations reading the same files (`load_vrag_occlusion`, `load_text_rag`) are not filtered.
- DocVQA (`load_doc_qa` `:436, 448-449`, `load_doc_qa_with_llm_judge` `:503, 515-516`, commit ceedb4c): each page is
  labelled `Document {doc_id:.15}: <image>`, without the paper's " (page N)". Summarization (`:370`, `:404`) and the
  `text_doc` ablation (`:558`) keep it.

Scoring changed too (the parser, DocVQA's judge): that is the tasks' (`tasks/mmlongbench/scorers/v1_1.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from builders.core.contract import IMAGE_PLACEHOLDER
from builders.mmlongbench.leaves import V1_1, Config
from builders.mmlongbench.prompts import (
    ASSEMBLERS,
    USER_TEMPLATES,
    Assembled,
    RowFormatError,
    doc_question,
    field_of,
)

V1_1_COMMIT = "22b9f27"
V1_1_PAGE_TEMPLATE = "Document {doc_id:.15}: " + IMAGE_PLACEHOLDER  # data.py:436 at 22b9f27


def keeps_v1_1_vrag_row(row: Mapping[str, object]) -> bool:
    """V1.1's filter (`data.py:51-54`): `all('"' not in img_path for img_path in sample["image"])`. The release's
    `image` is one path, so the official loop runs over its characters: a row is dropped when its path holds `"`
    anywhere. A list of paths (not in the release) is read item by item, as the official loop would; anything else
    is kept here and refused by the assembler."""
    image = row.get("image")
    if isinstance(image, str):
        return '"' not in image
    if isinstance(image, list) and all(isinstance(path, str) for path in image):
        return all('"' not in path for path in image)
    return True


def row_filter(cfg: Config) -> Callable[[Mapping[str, object]], bool] | None:
    """The rows a config's loader keeps before it samples ids; None: every row."""
    if cfg.version == V1_1 and cfg.leaf.loader == "vrag":
        return keeps_v1_1_vrag_row
    return None


def v1_1_pages_context(paths: list[str], where: str) -> str:
    """V1.1's DocVQA context: each page `Document {doc_id:.15}: <image>`, the document the path's folder
    (`image_path.split("/")[-2]`, `data.py:448-449`), joined by a blank line."""
    try:
        return "\n\n".join(V1_1_PAGE_TEMPLATE.format(doc_id=path.split("/")[-2]) for path in paths)
    except IndexError:
        raise RowFormatError(f"{where}: page paths should look like DOC/<page file> (got {paths[:3]}...)") from None


def assemble_docqa_v1_1(row: Mapping[str, object], where: str) -> Assembled:
    """`load_doc_qa` at 22b9f27: the paper's row (`builders.mmlongbench.prompts.assemble_docqa`) with V1.1's page
    labels; the question keeps its "Based on Document {doc_id:.15}, ..." prefix (`:455`)."""
    pages = field_of(row, "page_list", where, list)
    if not all(isinstance(p, str) for p in pages):
        raise RowFormatError(f"{where}: field 'page_list' should be a list of image paths (strings)")
    asked = doc_question(row, where)
    prompt = USER_TEMPLATES["docqa"].format(context=v1_1_pages_context(pages, where), question=asked.question)
    return Assembled(prompt, list(pages), asked.answer, asked.answer_format, asked.extras)


V1_1_ASSEMBLERS = {**ASSEMBLERS, "docqa": assemble_docqa_v1_1}


def assemblers(cfg: Config, paper: Mapping[str, Callable[..., Assembled]]) -> Mapping[str, Callable[..., Assembled]]:
    """The loaders' row assemblers of a config's version (`paper`: the paper's, ablations included)."""
    return {**paper, **V1_1_ASSEMBLERS} if cfg.version == V1_1 else paper
