"""MileBench's build options: each field is a `builders build milebench` flag and a keyword of `build_milebench`."""

from __future__ import annotations

from dataclasses import dataclass

from builders.core.contract import option
from builders.core.options import BenchmarkOptions, skip_bad_images_option, text_tokenizer_option

COMBINED_MODES = ("auto", "build")


@dataclass(frozen=True, kw_only=True)
class MileBenchOptions(BenchmarkOptions):
    source: str = option(
        "fixture",
        "the authors' release: 'hf://FreedomIntelligence/MileBench[@REVISION]' (downloads the part "
        "archives holding the asked configs' subsets into the Hub cache; HF_HUB_OFFLINE=1 reads the cache only), or "
        "the folder holding the subset folders (ActionLocalization/, ...) or MileBench/, or the six "
        "MileBench_part*.tar.gz (read without unpacking); or 'fixture' (default: a tiny offline stand-in in the same "
        "layout; 'fixture:archives' for the archive layout)",
    )
    combined_images: str = option(
        "auto",
        "the Combined-image Set's grids: 'auto' (default) takes the release's combined_1_images where a "
        "record names one and builds the rest as combine_images.py does; 'build' builds every grid",
        choices=COMBINED_MODES,
    )
    text_tokenizer: str = text_tokenizer_option()
    skip_bad_images: bool = skip_bad_images_option()
