"""MMNeedle's build options: each field is a `builders build mmneedle` flag and a keyword of `build_mmneedle`."""

from __future__ import annotations

import os
from dataclasses import dataclass

from builders.core.contract import at_least, between, option, switch
from builders.core.options import BenchmarkOptions, limit_option, seed_option, text_tokenizer_option
from builders.mmneedle.sources import DEFAULT_MIN_COVERAGE, CaptionedImageSource

DEFAULT_MEMORY_BUDGET_MB = 4096


@dataclass(frozen=True, kw_only=True)
class MMNeedleOptions(BenchmarkOptions):
    source: str | CaptionedImageSource = option(
        "synthetic",
        "captioned images: 'synthetic' (drawn scenes, offline; 'synthetic:COUNT' for COUNT images, default "
        "10000) or 'coco=DIR' (DIR/annotations/captions_val2014.json + DIR/val2014/*.jpg). Default: synthetic",
    )
    official_metadata: str | os.PathLike[str] | None = option(
        None,
        "rebuild the paper's exact samples from the authors' metadata_stitched/ folder, or from their Hub "
        "release, hf://Wang-ML-Lab/MMNeedle[@REVISION] (its metadata zip, into the Hub cache); needs --source coco=DIR",
        metavar="DIR",
    )
    full: bool = switch("all 5,000 positives + 5,000 negatives per config")
    limit: int | None = limit_option(
        "positives and L negatives per config (default: the paper's subset, 1,000 + 1,000 for K=1, 100 + 100 for K>1)"
    )
    seed: int = seed_option()
    text_tokenizer: str = text_tokenizer_option()
    strip_captions: bool = switch("strip white space around captions (default: raw)")
    min_image_coverage: float = option(
        DEFAULT_MIN_COVERAGE,
        "coco=DIR: the share of the captioned images that must be in DIR/val2014 (default "
        f"{DEFAULT_MIN_COVERAGE}); the missing ones are counted and named either way",
        metavar="F",
        parse=float,
        check=between(0, 1),
    )
    memory_budget_mb: int = option(
        DEFAULT_MEMORY_BUDGET_MB,
        "memory for decoded source images (256x256 tiles); beyond it they go to a temporary "
        f"spill file (default {DEFAULT_MEMORY_BUDGET_MB})",
        metavar="MB",
        parse=int,
        check=at_least(0),
    )
