"""MMNeedle instructions, verbatim (spec §3).

`official_instruction` reproduces the strings of the released `needle.py` (the ones that produced
the paper's numbers); `paper_instruction` uses the paper's typography (Appendix A: `N × N`,
`sub-image`, curly quotes, `Caption i: `, the literal `...` in the multi-needle format). In both,
only the `M image(s)` and `N x N subimage(s)` slots lose their plural "s" when M = 1 or N = 1
(spec A4). Captions are inserted as given (raw COCO captions may end in spaces or a newline).
"""

from __future__ import annotations

from collections.abc import Sequence

from builders.core.contract import IMAGE_PLACEHOLDER


def official_instruction(M: int, N: int, captions: Sequence[str]) -> str:
    K = len(captions)
    img = "images" if M > 1 else "image"
    sub = "subimages" if N > 1 else "subimage"
    head = f"Given {M} {img} indexed from 1 to {M}, each divided into {N}*{N} {sub}, "
    example = "For example, '1, 2, 3' indicates the subimage in the first image, second row, and third column. "
    if K == 1:
        return (
            head + "identify the subimage that best matches the provided caption. "
            "Respond with 'index, row, column' and nothing else. "
            + example
            + "If no match is found, respond only with '-1'."
            "\nCaption: " + captions[0]
        )
    fmt = "; ".join(f"index_{i}, row_{i}, column_{i}" for i in range(1, K + 1))
    text = (
        head + f"identify the subimages that best match the provided {K} captions. "
        f"Respond in the format: {fmt}. Only provide this information. "
        + example
        + "If no subimage matches a caption, "
        "respond with '-1' for that caption."
    )
    return text + "".join(f"\nCaption_{i}: {caption}" for i, caption in enumerate(captions, start=1))


def paper_instruction(M: int, N: int, captions: Sequence[str]) -> str:
    K = len(captions)
    img = "images" if M > 1 else "image"
    sub = "sub-images" if N > 1 else "sub-image"
    head = f"Given {M} {img} indexed from 1 to {M}, each divided into {N} \u00d7 {N} {sub}, "
    example = (
        "For example, \u201c1, 2, 3\u201d indicates the sub-image in the first image, second row, and third column. "
    )
    if K == 1:
        return (
            head + "identify the sub-image that best matches the provided caption. "
            "Respond with \u201cindex, row, column\u201d and nothing else. " + example + "If no match is found, "
            "respond only with \u201c-1\u201d.\nCaption: " + captions[0]
        )
    text = (
        head + f"identify the sub-images that best match the provided {K} captions. "
        f"Respond in the format: \u201cindex_1, row_1, column_1; ...; index_{K}, row_{K}, column_{K}.\u201d "
        "Only provide this information. " + example + "If no sub-image matches a caption, respond with \u201c-1\u201d "
        "for that caption."
    )
    return text + "".join(f"\nCaption {i}: {caption}" for i, caption in enumerate(captions, start=1))


def with_placeholders(M: int, instruction: str) -> str:
    """M `<image>` placeholders (the i-th is images[i]), then the instruction: images first, as
    the official code sends them, with no text between images."""
    return IMAGE_PLACEHOLDER * M + instruction


def canonical_answer(locations: Sequence[tuple[int, int, int]]) -> str:
    """1-based "m, r, c" per needle joined by "; "; "-1" per needle for negatives."""
    return "; ".join("-1" if m < 0 else f"{m + 1}, {r + 1}, {c + 1}" for m, r, c in locations)
