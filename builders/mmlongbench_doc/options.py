"""MMLongBench-Doc's build options: each field is a `builders build mmlongbench_doc` flag and a keyword of
`build_mmlongbench_doc`. The defaults are the official run's (`run_api.py` / `run_lvlm.py`: `--max_pages 120`,
`--resolution 144`)."""

from __future__ import annotations

from dataclasses import dataclass

from builders.core.contract import at_least, option
from builders.core.options import BenchmarkOptions, limit_option, text_tokenizer_option

OFFICIAL_MAX_PAGES = 120
OFFICIAL_RESOLUTION = 144


@dataclass(frozen=True, kw_only=True)
class MMLongBenchDocOptions(BenchmarkOptions):
    source: str = option(
        "fixture",
        "the release: 'hf://yubo2333/MMLongBench-Doc[@REVISION]' (downloads the questions and the PDFs they name "
        "into the Hub cache; HF_HUB_OFFLINE=1 reads the cache only), or a folder holding samples.json and "
        "documents/ (the code repo's data/); or 'fixture' (default: a tiny offline stand-in in the same layout)",
    )
    max_pages: int = option(
        OFFICIAL_MAX_PAGES, "pages of each PDF shown, from the first (official: 120)", parse=int, check=at_least(1)
    )
    resolution: int = option(
        OFFICIAL_RESOLUTION, "dpi each page is rendered at with pymupdf (official: 144)", parse=int, check=at_least(1)
    )
    limit: int | None = limit_option("questions")
    text_tokenizer: str = text_tokenizer_option()
