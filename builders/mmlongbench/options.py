"""MMLongBench's build options: each field is a `builders build mmlongbench` flag and a keyword of
`build_mmlongbench`."""

from __future__ import annotations

from dataclasses import dataclass

from builders.core.contract import option, switch
from builders.core.options import BenchmarkOptions, skip_bad_images_option, text_tokenizer_option


@dataclass(frozen=True, kw_only=True)
class MMLongBenchOptions(BenchmarkOptions):
    source: str = option(
        "fixture",
        "the authors' release: 'hf://ZhaoweiWang/MMLongBench[@REVISION]' (downloads the text archive and "
        "the image archives the asked configs read into the Hub cache; HF_HUB_OFFLINE=1 reads the cache only), "
        "or a folder holding mmlb_data/ (or 0_mmlb_data.tar.gz) and mmlb_image/ (or the image archives "
        "1_vrag_image.tar.gz, 2_vh_image.tar.gz, 2_mm-niah_image.tar.gz, 3_icl_image.tar.gz, 4_summ_image.tar.gz, "
        "5_docqa_image.tar.gz, or their older names vrag.tar.gz, ...; read without unpacking), and for the vlmevalkit_* "
        "configs VLMEvalKit's vlmevalkit/MMLongBench_{32K,128K,256K,512K}.tsv and _images.tar.gz (or MMLongBench_256K.tsv "
        "at the top, images under images/mmlb_image/); or 'fixture' (default: a tiny offline stand-in in the same "
        "formats, VLMEvalKit's files included; 'fixture:archives' for the archive layout; 'fixture:v1.1' for V1.1's, "
        "the Hub's archive names and a VRAG example whose image path holds a double quote); or 'fixture:full' "
        "(offline, in the same formats, every row filled to its length with photos, pages and passages: "
        "builders/mmlongbench/full_fixture/)",
    )
    fixture_ids: int | None = option(
        None,
        "ids per release file of --source fixture:full (default 1; ICL: test images per domain); each id brings "
        "its depths or permutations",
        metavar="N",
        parse=int,
    )
    full: bool = switch(
        "every row of each file (default: the sample the official code evaluates, 100 ids per "
        "file, 50 per MM-NIAH file, with all their depths/permutations)",
    )
    text_tokenizer: str = text_tokenizer_option()
    skip_bad_images: bool = skip_bad_images_option()
