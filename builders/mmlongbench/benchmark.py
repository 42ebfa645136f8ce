"""`builders build mmlongbench`: MMLongBench's own options and its entry in `builders list`."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from datasets import Features

from builders.core import contract
from builders.core.benchmark import BuildOptions
from builders.core.image_check import add_skip_option
from builders.mmlongbench.build import build_mmlongbench
from builders.mmlongbench.leaves import BUILDABLE_CONFIGS, Leaf
from builders.mmlongbench.plan import FIRST_ROW_LOADERS
from builders.mmlongbench.rows import features


def _rows_per_id(leaf: Leaf) -> str:
    if leaf.loader in FIRST_ROW_LOADERS:
        return ", the first row of each"
    return f" x {leaf.variants} {leaf.needle}s" if leaf.variants > 1 else ""


class MMLongBenchBenchmark:
    name = "mmlongbench"
    summary = ("19 long-context datasets x 8K-128K tokens (VRAG, NIAH, ICL, Summ, DocVQA), the ablation sets, and our "
               "256K/512K/1M configs grown from the 128K rows (not the paper's; built only when named)")
    # Hundreds of images per row, the same ones across depths and lengths: each is stored once.
    default_image_storage = contract.SHARED

    def configs(self) -> Mapping[str, str]:
        width = max(len(cfg.leaf.paper_name) for cfg in BUILDABLE_CONFIGS.values())
        return {name: f"{cfg.leaf.paper_name:<{width}} {cfg.length:>4}  {cfg.leaf.sample} ids" + _rows_per_id(cfg.leaf)
                for name, cfg in BUILDABLE_CONFIGS.items()}

    def features(self, config: str, image_storage: str) -> Features:
        return features(image_storage)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--source", default="fixture",
            help="the authors' release: 'hf://ZhaoweiWang/MMLongBench[@REVISION]' (downloads the text archive and "
            "the image archives the asked configs read into the Hub cache; HF_HUB_OFFLINE=1 reads the cache only), "
            "or a folder holding mmlb_data/ (or 0_mmlb_data.tar.gz) and mmlb_image/ (or the image archives "
            "1_vrag_image.tar.gz, 2_vh_image.tar.gz, 2_mm-niah_image.tar.gz, 3_icl_image.tar.gz, 4_summ_image.tar.gz, "
            "5_docqa_image.tar.gz, or their older names vrag.tar.gz, ...; read without unpacking); or 'fixture' (default: a tiny offline stand-in in the same formats; "
            "'fixture:archives' for the archive layout); or 'fixture:full' (offline, in the same formats, every row "
            "filled to its length with photos, pages and passages: builders/mmlongbench/full_fixture/)",
        )
        parser.add_argument("--fixture-ids", type=int, metavar="N",
                            help="ids per release file of --source fixture:full (default 1; ICL: test images per "
                            "domain); each id brings its depths or permutations")
        parser.add_argument("--full", action="store_true",
                            help="every row of each file (default: the sample the official code evaluates, "
                            "100 ids per file, 50 per MM-NIAH file, with all their depths/permutations)")
        parser.add_argument(
            "--text-tokenizer", default="approx", metavar="SPEC",
            help="'approx' (offline, default) or 'hf:<tokenizer.json>' (the paper counts with Llama-2's) for the "
            "text_tokens column and the over-length check",
        )
        add_skip_option(parser)

    def build(self, options: BuildOptions, args: argparse.Namespace) -> Path | None:
        return build_mmlongbench(source=args.source, out_dir=options.out_dir, configs=options.configs,
                                 full=args.full, text_tokenizer=args.text_tokenizer,
                                 image_storage=options.image_storage, overwrite=options.overwrite,
                                 progress=options.progress, command=options.command, dry_run=options.dry_run,
                                 skip_bad_images=args.skip_bad_images, fixture_ids=args.fixture_ids)

    def describe_config(self, name: str, info: Mapping[str, Any]) -> str:
        return f"{info['rows']} rows, {info.get('mean_images', 0)} images per row"
