"""The ICL files: rounds of demonstrations (one exemplar per class), and the pool sets past 128K."""

from __future__ import annotations

from typing import Any

from builders.mmlongbench.full_fixture.units import (
    ICL_CLASSES,
    ICL_PHOTO_SIZES,
    FixtureSource,
    UnitStream,
    check_length,
)
from builders.mmlongbench.leaves import LENGTHS, Leaf
from builders.mmlongbench.prompts import assemble_icl


def icl_file(src: FixtureSource, leaf: Leaf, length: str, tokens: int, ids: int, pool_sets: int = 0) -> dict[str, Any]:
    """`{domain: {exemplar_list, test_example}}`: two exemplar sets of the same rounds (one exemplar per class,
    the last round cut short where the next exemplar would not fit), so whichever set a row draws, it counts the
    same; `ids` test examples per domain. `pool_sets`: more sets of the same shape, each of fresh (flat)
    exemplars, `pool/set{s}/...`: the unseen exemplars per class that the configs past 128K add rounds from."""
    classes = ICL_CLASSES.get(length, max(ICL_CLASSES.values()))
    size = ICL_PHOTO_SIZES[leaf.dataset]
    data: dict[str, Any] = {}
    for domain in ("Birds", "Plants") if leaf.dataset == "inat2021" else ("all",):
        root = f"icl/{leaf.dataset}/{domain}"
        tests: list[dict[str, Any]] = [
            {"image": src.image(f"{root}/test_{t:04d}.jpg", "photo", size), "answer": t % classes} for t in range(ids)
        ]

        def shot(k: int, folder: str = root) -> dict[str, Any]:  # the k-th demonstration: round k // classes
            return {
                "image": src.image(f"{folder}/class{k % classes:02d}_{k // classes:03d}.jpg", "photo", size),
                "id": k % classes,
            }

        def cost(item: dict[str, Any]) -> int:
            return src.text_tokens(f"label: {item['id']}") + src.image_tokens(item["image"])

        def rounds_of(folder: str, budget: int) -> list[list[dict[str, Any]]]:
            shots = UnitStream(lambda k: shot(k, folder), cost).take(budget)
            return [shots[r : r + classes] for r in range(0, len(shots), classes)]

        fixed = src.counted(assemble_icl(tests[0], [], root).prompt, [tests[0]["image"]])
        rounds = rounds_of(root, tokens - fixed)
        # The second set holds the same rounds in another order (the short one moved), so the two sets differ as
        # the release's do and count the same.
        sets = [rounds, rounds[1:] + rounds[:1]]
        with src.drawn_flat():
            sets += [rounds_of(f"{root}/pool/set{s:02d}", tokens - fixed) for s in range(pool_sets)]
        data[domain] = {"exemplar_list": sets, "test_example": tests}
        where = f"{leaf.file(length) if length in LENGTHS else leaf.name} ({domain})"
        for test in tests:
            for exemplars in sets:
                flat = [item for rnd in exemplars for item in rnd]
                assembled = assemble_icl(test, flat, where)
                check_length(
                    where,
                    tokens,
                    src.counted(assembled.prompt, assembled.images, shown=True),
                    max(cost(item) for item in flat),
                )
    return data
