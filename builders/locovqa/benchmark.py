"""`builders build locovqa`: LoCoVQA's own options and its entry in `builders list`."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from datasets import Features

from builders.core import contract
from builders.core.benchmark import BuildOptions, positive_int
from builders.locovqa.build import (
    DEFAULT_MEMORY_BUDGET_MB,
    DEFAULT_MNIST_SAMPLES,
    SYNTHETIC_LIMIT,
    build_locovqa,
)
from builders.locovqa.compose import DEFAULT_CELL_SIZE
from builders.locovqa.configs import CONFIGS, TASK_TITLES, parse_config
from builders.locovqa.distractors import DEFAULT_MAX_RESAMPLES
from builders.locovqa.rows import features


class LocoVqaBenchmark:
    name = "locovqa"
    summary = "a content image among 0-35 distractors, composed (cmp) or interleaved (int): OK-VQA, MMStar, MNIST"
    # Interleaved contexts show the same pool images in row after row and length after length: stored once.
    default_image_storage = contract.SHARED

    def configs(self) -> Mapping[str, str]:
        return {name: f"{TASK_TITLES[cfg.task]}, {cfg.mode}, {cfg.length} image(s)" for name, cfg in CONFIGS.items()}

    def accepts_config(self, name: str) -> bool:
        """Any context length n >= 1 is a config (`okvqa_cmp_7`), not only the default ones."""
        return parse_config(name) is not None

    def features(self, config: str, image_storage: str) -> Features:
        return features(image_storage)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--source", action="extend", nargs="+", metavar="SPEC",
            help="'synthetic' (default: the offline stand-in, drawn in the sources' formats) or, repeated, "
            "okvqa=DIR (OK-VQA's OpenEnded_mscoco_val2014_questions.json and mscoco_val2014_annotations.json), "
            "coco=DIR (val2014/ images, annotations/instances_val2014.json, val2017/ distractors), "
            "mmstar=FILE (mmstar.parquet or MMStar.tsv) or mmstar=hf://Lin-Chen/MMStar, mnist=DIR "
            "(train-*-idx*-ubyte[.gz]) or mnist=hf://ylecun/mnist (the Hub sources download into the Hub cache; "
            "OK-VQA and COCO are not on the Hub)")
        parser.add_argument("--limit", type=int, metavar="L",
                            help="at most L OK-VQA and MMStar questions (drawn at random), L MNIST contexts per "
                            f"length and digit count, L needle digits (default: all; synthetic {SYNTHETIC_LIMIT})")
        parser.add_argument("--mnist-samples", type=int, metavar="K",
                            help=f"MNIST contexts per length and digit count (default {DEFAULT_MNIST_SAMPLES}, or --limit)")
        parser.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
        parser.add_argument("--cell-size", type=int, default=DEFAULT_CELL_SIZE, metavar="PX",
                            help=f"cmp: the side of a grid cell in pixels (default {DEFAULT_CELL_SIZE}); also the "
                            "digit canvas")
        parser.add_argument(
            "--entity-lister", action="extend", nargs="+", metavar="[TASK=]SPEC",
            help="the collision filter's entity lister, for okvqa and mmstar or one of them (TASK=SPEC): none, "
            "coco (COCO instance annotations; OK-VQA's default), cache:FILE (lists made earlier), vlm:MODEL (any "
            "harness backend or alias asked 'Please list at most 5 entities in this image')")
        parser.add_argument("--entity-lister-args", default="", metavar="ARGS",
                            help="vlm: the backend's --model_args, e.g. pretrained=...,dtype=bfloat16")
        parser.add_argument("--entity-cache", metavar="FILE",
                            help="vlm: JSON-lines file the lists are appended to and reused from")
        parser.add_argument("--strict-pairwise", action="store_true",
                            help="also keep distractors' entities apart from each other (the figure's reading)")
        parser.add_argument("--max-resamples", type=int, default=DEFAULT_MAX_RESAMPLES, metavar="K",
                            help=f"collisions in a row allowed per distractor before the item fails (default "
                            f"{DEFAULT_MAX_RESAMPLES})")
        parser.add_argument("--mmstar-pool", choices=("dataset", "subset"), default="dataset",
                            help="MMStar distractors from every MMStar image (default) or the same source benchmark's")
        parser.add_argument("--ood-split", default="val2017", metavar="NAME",
                            help="the COCO image folder the MNIST tasks draw distractors from (default val2017)")
        parser.add_argument("--text-tokenizer", default="approx", metavar="SPEC",
                            help="'approx' (offline, default) or 'hf:<tokenizer.json>' for the text_tokens column")
        parser.add_argument("--memory-budget-mb", type=positive_int, default=DEFAULT_MEMORY_BUDGET_MB, metavar="MB",
                            help=f"memory for fitted cells before they spill to disk (default {DEFAULT_MEMORY_BUDGET_MB})")

    def build(self, options: BuildOptions, args: argparse.Namespace) -> Path | None:
        return build_locovqa(
            source=args.source, out_dir=options.out_dir, configs=options.configs, seed=args.seed, limit=args.limit,
            mnist_samples=args.mnist_samples, cell_size=args.cell_size, entity_lister=args.entity_lister,
            entity_lister_args=args.entity_lister_args, entity_cache=args.entity_cache,
            strict_pairwise=args.strict_pairwise, max_resamples=args.max_resamples, mmstar_pool=args.mmstar_pool,
            ood_split=args.ood_split, text_tokenizer=args.text_tokenizer, image_storage=options.image_storage,
            num_proc=options.num_proc, overwrite=options.overwrite, progress=options.progress,
            memory_budget_mb=args.memory_budget_mb, command=options.command, dry_run=options.dry_run)

    def describe_config(self, name: str, info: Mapping[str, Any]) -> str:
        failed = f", {info['failed_rows']} failed" if info.get("failed_rows") else ""
        return f"{info['rows']} rows{failed}"
