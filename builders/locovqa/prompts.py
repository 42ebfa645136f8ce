"""The prompts. The paper gives one string verbatim, the answer-format instruction (Appendix D, used for MMStar
and, by its error analysis, OK-VQA); the rest are ours (spec §2 recommendations), marked as such.

Images come first, in context order, then the text (spec §5): `<image>` x n, then the question.
"""

from __future__ import annotations

from builders.core.contract import IMAGE_PLACEHOLDER

# PAPER (Appendix D), verbatim; the PDF breaks the line between the two tags.
FORMAT_INSTRUCTION = (
    "Please provide the answer in format <answer> </answer> where the answer is between the tags. "
    "For example if the result is apple, your answer should be <answer>apple</answer>."
)
PAPER_VERBATIM = {"format_instruction": FORMAT_INSTRUCTION}

# OURS: the paper only paraphrases these ("prompted to list all handwritten digits present in the sequence").
MNIST_QUESTION = {
    "cmp": "List all the handwritten digits that appear in the image. Answer with the digits separated by commas.",
    "int": "List all the handwritten digits that appear in the images. Answer with the digits separated by commas.",
}
NEEDLE_QUESTION = {
    "cmp": "Which handwritten digit appears in the image? Answer with a single digit.",
    "int": "Which handwritten digit appears in the images? Answer with a single digit.",
}


def vqa_text(question: str) -> str:
    """OK-VQA and MMStar: the source question (MMStar's lists its options) and the paper's format instruction."""
    return f"{question}\n{FORMAT_INSTRUCTION}"


def with_images(count: int, text: str) -> str:
    return IMAGE_PLACEHOLDER * count + "\n" + text
