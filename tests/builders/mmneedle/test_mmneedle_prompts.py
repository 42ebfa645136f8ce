"""Prompt strings against the spec's rendered examples (seed_mmneedle.md §3.1-3.2), verbatim."""

from builders.mmneedle.prompts import (
    canonical_answer,
    official_instruction,
    paper_instruction,
    with_placeholders,
)

EXAMPLE = "For example, '1, 2, 3' indicates the subimage in the first image, second row, and third column. "


def test_official_m1_n2_k1() -> None:
    assert official_instruction(1, 2, ["<CAPTION>"]) == (
        "Given 1 image indexed from 1 to 1, each divided into 2*2 subimages, identify the subimage that best matches "
        "the provided caption. Respond with 'index, row, column' and nothing else. For example, '1, 2, 3' indicates "
        "the subimage in the first image, second row, and third column. If no match is found, respond only with "
        "'-1'.\nCaption: <CAPTION>"
    )


def test_official_m10_n1_k1() -> None:
    assert official_instruction(10, 1, ["<CAPTION>"]) == (
        "Given 10 images indexed from 1 to 10, each divided into 1*1 subimage, identify the subimage that best "
        "matches the provided caption. Respond with 'index, row, column' and nothing else. For example, '1, 2, 3' "
        "indicates the subimage in the first image, second row, and third column. If no match is found, respond "
        "only with '-1'.\nCaption: <CAPTION>"
    )


def test_official_m1_n4_k2() -> None:
    assert official_instruction(1, 4, ["<CAPTION_1>", "<CAPTION_2>"]) == (
        "Given 1 image indexed from 1 to 1, each divided into 4*4 subimages, identify the subimages that best match "
        "the provided 2 captions. Respond in the format: index_1, row_1, column_1; index_2, row_2, column_2. Only "
        "provide this information. For example, '1, 2, 3' indicates the subimage in the first image, second row, and "
        "third column. If no subimage matches a caption, respond with '-1' for that caption.\nCaption_1: <CAPTION_1>"
        "\nCaption_2: <CAPTION_2>"
    )


def test_official_m10_n1_k5() -> None:
    captions = [f"<CAPTION_{i}>" for i in range(1, 6)]
    assert official_instruction(10, 1, captions) == (
        "Given 10 images indexed from 1 to 10, each divided into 1*1 subimage, identify the subimages that best match "
        "the provided 5 captions. Respond in the format: index_1, row_1, column_1; index_2, row_2, column_2; index_3, "
        "row_3, column_3; index_4, row_4, column_4; index_5, row_5, column_5. Only provide this information. For "
        "example, '1, 2, 3' indicates the subimage in the first image, second row, and third column. If no subimage "
        "matches a caption, respond with '-1' for that caption.\nCaption_1: <CAPTION_1>\nCaption_2: <CAPTION_2>\n"
        "Caption_3: <CAPTION_3>\nCaption_4: <CAPTION_4>\nCaption_5: <CAPTION_5>"
    )


def test_paper_wording_single_and_multi() -> None:
    assert paper_instruction(10, 8, ["a dog "]) == (
        "Given 10 images indexed from 1 to 10, each divided into 8 \u00d7 8 sub-images, identify the sub-image that "
        "best matches the provided caption. Respond with \u201cindex, row, column\u201d and nothing else. For example, "
        "\u201c1, 2, 3\u201d indicates the sub-image in the first image, second row, and third column. If no match is "
        "found, respond only with \u201c-1\u201d.\nCaption: a dog "
    )
    assert paper_instruction(1, 1, ["x", "y"]) == (
        "Given 1 image indexed from 1 to 1, each divided into 1 \u00d7 1 sub-image, identify the sub-images that best "
        "match the provided 2 captions. Respond in the format: \u201cindex_1, row_1, column_1; ...; index_2, row_2, "
        "column_2.\u201d Only provide this information. For example, \u201c1, 2, 3\u201d indicates the sub-image in the "
        "first image, second row, and third column. If no sub-image matches a caption, respond with \u201c-1\u201d for "
        "that caption.\nCaption 1: x\nCaption 2: y"
    )


def test_raw_captions_are_inserted_verbatim() -> None:
    assert official_instruction(1, 2, ["A dog.\n"]).endswith("\nCaption: A dog.\n")


def test_placeholders_and_answers() -> None:
    assert with_placeholders(3, "Q") == "<image><image><image>Q"
    assert canonical_answer([(4, 1, 1)]) == "5, 2, 2"
    assert canonical_answer([(0, 1, 7), (9, 2, 4)]) == "1, 2, 8; 10, 3, 5"  # the paper's example
    assert canonical_answer([(-1, -1, -1)]) == "-1"
    assert canonical_answer([(-1, -1, -1)] * 2) == "-1; -1"
    assert canonical_answer([(-1, -1, -1)] * 5) == "-1; -1; -1; -1; -1"
