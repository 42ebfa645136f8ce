"""LoCoVQA's build options: each field is a `builders build locovqa` flag and a keyword of `build_locovqa`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from builders.core.contract import at_least, option, switch
from builders.core.image_questions import AskerFactory
from builders.core.options import BenchmarkOptions, limit_option, seed_option, text_tokenizer_option
from builders.locovqa.compose import DEFAULT_CELL_SIZE
from builders.locovqa.distractors import DEFAULT_MAX_RESAMPLES

DEFAULT_MNIST_SAMPLES = 200  # per length and digit count (spec §1.5 recommendation)
SYNTHETIC_LIMIT = 4
DEFAULT_MEMORY_BUDGET_MB = 2048


@dataclass(frozen=True, kw_only=True)
class LocoVqaOptions(BenchmarkOptions):
    source: list[str] | None = option(
        None,
        "'synthetic' (default: the offline stand-in, drawn in the sources' formats) or, repeated, "
        "okvqa=DIR (OK-VQA's OpenEnded_mscoco_val2014_questions.json and mscoco_val2014_annotations.json), "
        "coco=DIR (val2014/ images, annotations/instances_val2014.json, val2017/ distractors), "
        "mmstar=FILE (mmstar.parquet or MMStar.tsv) or mmstar=hf://Lin-Chen/MMStar, mnist=DIR "
        "(train-*-idx*-ubyte[.gz]) or mnist=hf://ylecun/mnist (the Hub sources download into the Hub cache; "
        "OK-VQA and COCO are not on the Hub)",
        metavar="SPEC",
        many=True,
    )
    limit: int | None = limit_option(
        "OK-VQA and MMStar questions (drawn at random), L MNIST contexts per length and "
        f"digit count, L needle digits (default: all; synthetic {SYNTHETIC_LIMIT})"
    )
    mnist_samples: int | None = option(
        None,
        f"MNIST contexts per length and digit count (default {DEFAULT_MNIST_SAMPLES}, or --limit)",
        metavar="K",
        parse=int,
        check=at_least(1),
    )
    seed: int = seed_option()
    cell_size: int = option(
        DEFAULT_CELL_SIZE,
        f"cmp: the side of a grid cell in pixels (default {DEFAULT_CELL_SIZE}); also the digit canvas",
        metavar="PX",
        parse=int,
        check=at_least(8, " pixels"),
    )
    entity_lister: list[str] | None = option(
        None,
        "the collision filter's entity lister, for okvqa and mmstar or one of them (TASK=SPEC): none, coco (COCO "
        "instance annotations; OK-VQA's default), cache:FILE (lists made earlier), vlm:MODEL (any harness backend or "
        "alias asked 'Please list at most 5 entities in this image')",
        metavar="[TASK=]SPEC",
        many=True,
    )
    entity_lister_args: str = option(
        "", "vlm: the backend's --model_args, e.g. pretrained=...,dtype=bfloat16", metavar="ARGS"
    )
    entity_cache: str | os.PathLike[str] | None = option(
        None, "vlm: JSON-lines file the lists are appended to and reused from", metavar="FILE"
    )
    strict_pairwise: bool = switch("also keep distractors' entities apart from each other (the figure's reading)")
    max_resamples: int = option(
        DEFAULT_MAX_RESAMPLES,
        f"collisions in a row allowed per distractor before the item fails (default {DEFAULT_MAX_RESAMPLES})",
        metavar="K",
        parse=int,
        check=at_least(0),
    )
    mmstar_pool: str = option(
        "dataset",
        "MMStar distractors from every MMStar image (default) or the same source benchmark's",
        choices=("dataset", "subset"),
    )
    ood_split: str = option(
        "val2017", "the COCO image folder the MNIST tasks draw distractors from (default val2017)", metavar="NAME"
    )
    text_tokenizer: str = text_tokenizer_option()
    memory_budget_mb: int = option(
        DEFAULT_MEMORY_BUDGET_MB,
        f"memory for fitted cells before they spill to disk (default {DEFAULT_MEMORY_BUDGET_MB})",
        metavar="MB",
        parse=int,
        check=at_least(1),
    )
    # What `vlm:MODEL` asks through (default: the installed harness's backends, `builders.core.image_questions`).
    asker_factory: AskerFactory | None = field(default=None, compare=False)
