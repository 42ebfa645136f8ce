"""`builders build mmneedle`: MMNeedle's own options and its entry in `builders list`."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from datasets import Features

from builders.core import contract
from builders.core.benchmark import BuildOptions
from builders.mmneedle.build import DEFAULT_MEMORY_BUDGET_MB, build_mmneedle
from builders.mmneedle.configs import CONFIGS
from builders.mmneedle.rows import features
from builders.mmneedle.sources import DEFAULT_MIN_COVERAGE


class MMNeedleBenchmark:
    name = "mmneedle"
    summary = "M images of N x N sub-images, K needles"
    default_image_storage = contract.EMBEDDED  # what `load_dataset(repo, "m10_n4_k1")` users expect

    def configs(self) -> Mapping[str, str]:
        return {
            name: f"M={cfg.M:<2} N={cfg.N} K={cfg.K}  paper subset {cfg.paper_count}+{cfg.paper_count} rows"
            for name, cfg in CONFIGS.items()
        }

    def features(self, config: str, image_storage: str) -> Features:
        return features(image_storage)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--source", default="synthetic",
            help="captioned images: 'synthetic' (drawn scenes, offline; 'synthetic:COUNT' for COUNT images, default "
            "10000) or 'coco=DIR' (DIR/annotations/captions_val2014.json + DIR/val2014/*.jpg). Default: synthetic",
        )
        parser.add_argument(
            "--official-metadata", metavar="DIR",
            help="rebuild the paper's exact samples from the authors' metadata_stitched/ folder, or from their Hub "
            "release, hf://Wang-ML-Lab/MMNeedle[@REVISION] (its metadata zip, into the Hub cache); needs "
            "--source coco=DIR",
        )
        parser.add_argument("--full", action="store_true", help="all 5,000 positives + 5,000 negatives per config")
        parser.add_argument(
            "--limit", type=int, metavar="L",
            help="at most L positives and L negatives per config (default: the paper's subset, 1,000 + 1,000 for K=1, "
            "100 + 100 for K>1)",
        )
        parser.add_argument("--seed", type=int, default=0, help="sampling seed for regenerate mode (default 0)")
        parser.add_argument(
            "--text-tokenizer", default="approx", metavar="SPEC",
            help="'approx' (offline, default) or 'hf:<tokenizer.json path or hub name>' for the text_tokens column",
        )
        parser.add_argument("--strip-captions", action="store_true", help="strip white space around captions (default: raw)")
        parser.add_argument(
            "--min-image-coverage", type=float, default=DEFAULT_MIN_COVERAGE, metavar="F",
            help="coco=DIR: the share of the captioned images that must be in DIR/val2014 (default "
            f"{DEFAULT_MIN_COVERAGE}); the missing ones are counted and named either way",
        )
        parser.add_argument(
            "--memory-budget-mb", type=int, default=DEFAULT_MEMORY_BUDGET_MB, metavar="MB",
            help="memory for decoded source images (256x256 tiles); beyond it they go to a temporary spill file "
            f"(default {DEFAULT_MEMORY_BUDGET_MB})",
        )

    def build(self, options: BuildOptions, args: argparse.Namespace) -> Path | None:
        return build_mmneedle(
            source=args.source,
            out_dir=options.out_dir,
            configs=options.configs,
            official_metadata=args.official_metadata,
            full=args.full,
            limit=args.limit,
            seed=args.seed,
            num_proc=options.num_proc,
            text_tokenizer=args.text_tokenizer,
            strip_captions=args.strip_captions,
            overwrite=options.overwrite,
            progress=options.progress,
            memory_budget_mb=args.memory_budget_mb,
            image_storage=options.image_storage,
            min_image_coverage=args.min_image_coverage,
            command=options.command,
            dry_run=options.dry_run,
        )

    def describe_config(self, name: str, info: Mapping[str, Any]) -> str:
        return f"{info['rows']} rows ({info['positives']} positive, {info['negatives']} negative)"
