"""MMLongBench's official text-only wrapper (`vlm_model/text_only_model.py:8-60`, 26197d2), reimplemented from its code
for the text-only tests: how it builds a sample's chat and fits it, independently of the harness's path
(`harness.models.backends.hf.text_only`). `sample` holds the loader's `context` and `question`; `user_template` and
`system_template` are the loader's (`data.py`)."""

from __future__ import annotations

from typing import Any

# data.py:129-130 (load_text_rag): the template the `triviaqa` rows are filled with, and its system template.
TEXT_RAG_USER = (
    "Use the given documents to write a concise and short answer to the question about a named entity. Write your "
    "answer in the following format:\nAnswer: [answer]\n\n{context}\n\nQuestion: {question}"
)
SYSTEM = "Answer:"
PASSAGE = "Document (Title: {title}): {text}"  # data.py:141


def _format_input(tokenizer: Any, user_template: str, system_template: str, sample: dict[str, str]) -> tuple[str, Any]:
    """format_input (l.20-39), with use_chat_template: the user turn and the system template as a prefilled assistant
    turn, continued; failing that, the user turn and the generation prompt; tokenized without special tokens."""
    chat = [
        {"role": "user", "content": user_template.format(**sample)},
        {"role": "assistant", "content": system_template},
    ]
    try:
        prompt = tokenizer.apply_chat_template(chat, tokenize=False, continue_final_message=True)
    except Exception:
        prompt = tokenizer.apply_chat_template(chat[:1], tokenize=False, add_generation_prompt=True)
    return prompt, tokenizer([prompt], return_tensors="pt", add_special_tokens=False)


def tokenize(
    tokenizer: Any,
    sample: dict[str, str],
    max_length: int,
    generation_max_length: int,
    user_template: str = TEXT_RAG_USER,
    system_template: str = SYSTEM,
) -> tuple[str, list[int]]:
    """`tokenize` (l.19-60) for a fast tokenizer without Phi-3-small's buffer: (the prompt, its input ids)."""
    prompt, tokenized = _format_input(tokenizer, user_template, system_template, sample)
    if tokenized.input_ids.size(1) > max_length - generation_max_length:
        truncate_length = tokenized.input_ids.size(1) - (max_length - generation_max_length)
        context_tokens = tokenizer([sample["context"]], return_offsets_mapping=True)
        sample = {**sample, "context": sample["context"][: context_tokens["offset_mapping"][0][-truncate_length][0]]}
        prompt, tokenized = _format_input(tokenizer, user_template, system_template, sample)
    return prompt, tokenized.input_ids[0].tolist()
