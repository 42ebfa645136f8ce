"""`builders build milebench`: MileBench's own options and its entry in `builders list`."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from datasets import Features

from builders.core import contract
from builders.core.benchmark import BuildOptions
from builders.core.image_check import add_skip_option
from builders.milebench.build import COMBINED_MODES, build_milebench
from builders.milebench.rows import features
from builders.milebench.subsets import ADV, COMBINED, CONFIGS


class MileBenchBenchmark:
    name = "milebench"
    summary = "29 multi-image subsets (realistic, diagnostic), interleaved, combined into one image, adversarial"
    # The adversarial set shows the test set's images again, and needle haystacks share a pool: stored once.
    default_image_storage = contract.SHARED

    def configs(self) -> Mapping[str, str]:
        def line(name: str) -> str:
            cfg = CONFIGS[name]
            how = "combined image" if cfg.mode == COMBINED else "adversarial" if cfg.split == ADV else "interleaved"
            return f"{cfg.subset.task_id:<4} {cfg.subset.name:<24} {how:<15} {cfg.subset.samples} rows"

        return {name: line(name) for name in CONFIGS}

    def features(self, config: str, image_storage: str) -> Features:
        return features(image_storage)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--source", default="fixture",
            help="the authors' release: 'hf://FreedomIntelligence/MileBench[@REVISION]' (downloads the part archives "
            "holding the asked configs' subsets into the Hub cache; HF_HUB_OFFLINE=1 reads the cache only), or the "
            "folder holding the subset folders (ActionLocalization/, ...) or "
            "MileBench/, or the six MileBench_part*.tar.gz (read without unpacking); or 'fixture' (default: a tiny "
            "offline stand-in in the same layout; 'fixture:archives' for the archive layout)",
        )
        parser.add_argument(
            "--combined-images", choices=COMBINED_MODES, default="auto",
            help="the Combined-image Set's grids: 'auto' (default) takes the release's combined_1_images where a "
            "record names one and builds the rest as combine_images.py does; 'build' builds every grid",
        )
        parser.add_argument(
            "--text-tokenizer", default="approx", metavar="SPEC",
            help="'approx' (offline, default) or 'hf:<tokenizer.json>' (the paper counts with Llama-2's) for the "
            "token columns the harness truncates by",
        )
        add_skip_option(parser)

    def build(self, options: BuildOptions, args: argparse.Namespace) -> Path | None:
        return build_milebench(source=args.source, out_dir=options.out_dir, configs=options.configs,
                               text_tokenizer=args.text_tokenizer, combined_images=args.combined_images,
                               image_storage=options.image_storage, overwrite=options.overwrite,
                               progress=options.progress, command=options.command, dry_run=options.dry_run,
                               num_proc=options.num_proc, skip_bad_images=args.skip_bad_images)

    def describe_config(self, name: str, info: Mapping[str, Any]) -> str:
        return f"{info['rows']} rows, {info.get('mean_images', 0)} images per row"
