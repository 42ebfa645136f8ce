"""The context of a text ablation row (`triviaqa`, `text_doc`), for a model that cuts it at its end to fit: the
official text-only wrapper (`vlm_model/text_only_model.py:41-59`) cuts `sample["context"]`, the passages or pages the
user template's `{context}` holds, to `input_max_length - generation_max_length` tokens (eval.py:165-173 sets
`input_max_length` to the config's length, the row's `length`), and keeps the instruction before it and the question
after it whole. The tasks name this hook (`fit_context: !function context.fit_context`); the `hf` backend's text-only
path reads it (`harness.fit_context`).

The row's prompt is the template filled (`builders.mmlongbench.ablations`): the context starts where the template's
text before `{context}` ends, and ends where the last "\\n\\nQuestion: " begins (the question follows it).
"""

from __future__ import annotations

from collections.abc import Mapping

from builders.mmlongbench.ablations import ABLATION_TEMPLATES
from builders.mmlongbench.leaves import LEAF_BY_NAME

QUESTION = "\n\nQuestion: "  # what follows `{context}` in every ablation template


def fit_context(doc: Mapping[str, object]) -> dict[str, object]:
    """{"context": the row's context as its prompt holds it, "length": the row's length label}; a ValueError naming
    the row where its prompt is not its template's."""
    dataset, prompt, length = doc.get("dataset"), doc.get("prompt"), doc.get("length")
    leaf = LEAF_BY_NAME.get(f"ablation_{dataset}")
    if leaf is None or QUESTION not in ABLATION_TEMPLATES.get(leaf.loader, ""):
        raise ValueError(f"row {doc.get('id')!r}: dataset {dataset!r} has no text context to fit")
    head = ABLATION_TEMPLATES[leaf.loader].split("{context}")[0]
    if not isinstance(prompt, str) or not prompt.startswith(head) or QUESTION not in prompt[len(head) :]:
        raise ValueError(f"row {doc.get('id')!r}: its prompt is not the {leaf.loader} template filled")
    if not isinstance(length, int) or length <= 0:
        raise ValueError(f"row {doc.get('id')!r}: `length` is {length!r}, expected the row's length in tokens")
    return {"context": prompt[len(head) : prompt.rindex(QUESTION)], "length": length}
