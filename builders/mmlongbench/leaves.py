"""MMLongBench's 19 leaf datasets, its ablation sets, their release files and how the official code (commit
26197d2) reads them.

A config is one leaf at one length: `{category}_{dataset}_{length}` (`icl_food101_128k`). The release
(`mmlb_data/`) holds one file per leaf and length; `Leaf.file(k)` names it exactly as the official configs
(`configs/*_all.yaml`) do. The ablation sets (`ablation_*`, apart from the 95 main configs) are the inputs of
the paper's error analyses, which `data.py` `load_data` dispatches by dataset name.
"""

from __future__ import annotations

from dataclasses import dataclass

LENGTHS: dict[str, int] = {"8k": 8192, "16k": 16384, "32k": 32768, "64k": 65536, "128k": 131072}
# Ours, not the paper's: each row is the 128K row (same id, depth or permutation) with its haystack grown from the
# release's own pools under the paper's length-control rules (`builders.mmlongbench.extend`).
EXTENDED_LENGTHS: dict[str, int] = {"256k": 262144, "512k": 524288, "1m": 1048576}
BASE_LENGTH = "128k"  # the release's longest file, which every extended config grows
ALL_LENGTHS: dict[str, int] = {**LENGTHS, **EXTENDED_LENGTHS}

# Single-needle files test 6 depths and multi-needle files 3 permutations of each id (spec §2.6, App. D).
DEPTHS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


@dataclass(frozen=True)
class Leaf:
    category: str  # vrag | niah | icl | summ | docvqa
    dataset: str  # our key: infoseek, vh_single, mmniah_ret_text, food101, ...
    pattern: str  # the release file under mmlb_data/, `{k}` = 8, 16, 32, 64 or 128
    loader: str  # the official loader this leaf goes through (data.py `load_*`)
    sample: int  # the official max_test_samples: 100, or 50 for each MM-NIAH file
    variants: int  # rows per id: 6 depths, 3 permutations, or 1
    answer_prefix: str  # the official `system_template`, prefilled as the assistant turn
    max_new_tokens: int  # the official generation_max_length
    paper_name: str  # the dataset's name in the paper's tables (paper_results.csv), or what an ablation is

    @property
    def name(self) -> str:
        return f"{self.category}_{self.dataset}"

    def file(self, length: str) -> str:
        return self.pattern.format(k=LENGTHS[length] // 1024)

    @property
    def needle(self) -> str:
        return {6: "depth", 3: "permutation"}.get(self.variants, "")


def _leaf(
    category: str,
    dataset: str,
    pattern: str,
    loader: str,
    paper_name: str,
    *,
    sample: int = 100,
    variants: int = 1,
    prefix: str = "Answer:",
    tokens: int = 128,
) -> Leaf:
    return Leaf(category, dataset, pattern, loader, sample, variants, prefix, tokens, paper_name)


LEAVES: tuple[Leaf, ...] = (
    _leaf("vrag", "infoseek", "vrag/infoseek_K{k}_dep3.jsonl", "vrag", "InfoSeek", variants=3),
    _leaf("vrag", "viquae", "vrag/viquae_K{k}_dep6.jsonl", "vrag", "ViQuAE", variants=6),
    _leaf("niah", "vh_single", "NIAH/vh_single_test_1000_K{k}_dep6.jsonl", "vh", "VH-Single", variants=6),
    _leaf("niah", "vh_multi", "NIAH/vh_multi_test_1000_K{k}_dep3.jsonl", "vh", "VH-Multi", variants=3),
    _leaf(
        "niah",
        "mmniah_ret_text",
        "NIAH/retrieval-text_test_K{k}_dep6.jsonl",
        "mmniah_text",
        "MM-NIAH-Ret (T)",
        sample=50,
        variants=6,
    ),
    _leaf(
        "niah",
        "mmniah_ret_image",
        "NIAH/retrieval-image_test_K{k}_dep6.jsonl",
        "mmniah_image_mc",
        "MM-NIAH-Ret (I)",
        sample=50,
        variants=6,
    ),
    _leaf(
        "niah",
        "mmniah_count_text",
        "NIAH/counting-text_test_K{k}_dep3.jsonl",
        "mmniah_text",
        "MM-NIAH-Count (T)",
        sample=50,
        variants=3,
    ),
    _leaf(
        "niah",
        "mmniah_count_image",
        "NIAH/counting-image_test_K{k}_dep3.jsonl",
        "mmniah_image_count",
        "MM-NIAH-Count (I)",
        sample=50,
        variants=3,
    ),
    _leaf(
        "niah",
        "mmniah_reason_text",
        "NIAH/reasoning-text_test_K{k}_dep3.jsonl",
        "mmniah_text",
        "MM-NIAH-Reason (T)",
        sample=50,
        variants=3,
    ),
    _leaf(
        "niah",
        "mmniah_reason_image",
        "NIAH/reasoning-image_test_K{k}_dep6.jsonl",
        "mmniah_image_mc",
        "MM-NIAH-Reason (I)",
        sample=50,
        variants=6,
    ),
    _leaf("icl", "stanford_cars", "ICL/cars196_K{k}.json", "icl", "Stanford Cars", prefix="label:"),
    _leaf("icl", "food101", "ICL/food101_K{k}.json", "icl", "Food101", prefix="label:"),
    _leaf("icl", "sun397", "ICL/sun397_K{k}.json", "icl", "SUN397", prefix="label:"),
    _leaf("icl", "inat2021", "ICL/inat2021_K{k}.json", "icl", "Inat2021", prefix="label:"),
    _leaf("summ", "govreport", "summ/gov_K{k}.jsonl", "govreport", "GovReport", prefix="Summary:", tokens=384),
    _leaf(
        "summ", "multilexsum", "summ/lexsum_K{k}.jsonl", "multilexsum", "Multi-LexSum", prefix="Summary:", tokens=384
    ),
    _leaf("docvqa", "mmlongbench_doc", "documentQA/mmlongdoc_K{k}.jsonl", "docqa", "MMLongBench-Doc"),
    _leaf("docvqa", "longdocurl", "documentQA/longdocurl_K{k}.jsonl", "docqa", "LongDocURL"),
    _leaf("docvqa", "slidevqa", "documentQA/slidevqa_K{k}.jsonl", "docqa", "SlideVQA"),
)

# The ablation sets, by the dataset name `load_data` dispatches on. `triviaqa` and `text_doc` are the inputs of the
# paper's Figures 10 and 9 (configs/text_rag_all.yaml, text_docqa_all.yaml); `occ_vrag` and
# `text-haystack_retrieval-image` have a loader but no official config, so which file they read is ours to say:
# the VRAG files for `occ_vrag` (its loader needs their gold passages), and for the text-haystack set a file named
# like its image-needle sibling, with that sibling's sample of 50 ids.
ABLATION_LEAVES: tuple[Leaf, ...] = (
    _leaf(
        "ablation",
        "triviaqa",
        "vrag/viquae_K{k}_dep6.jsonl",
        "text_rag",
        "ViQuAE, entity named (text only)",
        variants=6,
    ),
    _leaf(
        "ablation",
        "occ_vrag_infoseek",
        "vrag/infoseek_K{k}_dep3.jsonl",
        "vrag_occlusion",
        "InfoSeek, gold passages removed",
        variants=3,
    ),
    _leaf(
        "ablation",
        "occ_vrag_viquae",
        "vrag/viquae_K{k}_dep6.jsonl",
        "vrag_occlusion",
        "ViQuAE, gold passages removed",
        variants=6,
    ),
    _leaf(
        "ablation",
        "text_haystack_ret_image",
        "NIAH/text-haystack_retrieval-image_test_K{k}_dep6.jsonl",
        "mmniah_image_mc",
        "MM-NIAH-Ret (I), other text removed",
        sample=50,
        variants=6,
    ),
    _leaf("ablation", "text_doc", "documentQA/text_mmlongdoc_K{k}.jsonl", "text_docqa", "MMLongBench-Doc, OCR text"),
)
# The official dataset name of each ablation (what `load_data` matches), for the docs and the report.
OFFICIAL_ABLATION_NAMES = {
    "triviaqa": "triviaqa",
    "occ_vrag_infoseek": "occ_vrag",
    "occ_vrag_viquae": "occ_vrag",
    "text_haystack_ret_image": "text-haystack_retrieval-image",
    "text_doc": "text_doc",
}

LEAF_BY_NAME: dict[str, Leaf] = {leaf.name: leaf for leaf in (*LEAVES, *ABLATION_LEAVES)}

# The summarization judge's atomic claims, one jsonl per dataset ({"id", "claims"}), keyed by the row id.
CLAIMS_FILES = {"govreport": "summ/gov_claims.jsonl", "multilexsum": "summ/lexsum_claims.jsonl"}

# The release's archives, under each name it has been published as: the Hub repo's current names first
# (`0_mmlb_data.tar.gz`, `1_vrag_image.tar.gz`, ...: scripts/download_text_data.sh at 479edae), then those of the
# code's first download scripts (`mmlb_data.tar.gz`, `vrag.tar.gz`, ...: at 26197d2). Each image archive extracts
# into `mmlb_image/<its folder>/`.
TEXT_ARCHIVES = ("0_mmlb_data.tar.gz", "mmlb_data.tar.gz")
TEXT_ARCHIVE = TEXT_ARCHIVES[-1]
IMAGE_ARCHIVES: dict[str, tuple[str, str]] = {
    "vrag": ("1_vrag_image.tar.gz", "vrag.tar.gz"),
    "vh": ("2_vh_image.tar.gz", "vh.tar.gz"),
    "mm-niah": ("2_mm-niah_image.tar.gz", "mm-niah.tar.gz"),
    "icl": ("3_icl_image.tar.gz", "icl.tar.gz"),
    "summ": ("4_summ_image.tar.gz", "summ.tar.gz"),
    "docqa": ("5_docqa_image.tar.gz", "docqa.tar.gz"),
}
# The image folder (and so the archive) each loader's rows show images from; None: the text-only ablations.
LOADER_IMAGES: dict[str, str | None] = {
    "vrag": "vrag",
    "vrag_occlusion": "vrag",
    "vh": "vh",
    "mmniah_text": "mm-niah",
    "mmniah_image_mc": "mm-niah",
    "mmniah_image_count": "mm-niah",
    "icl": "icl",
    "govreport": "summ",
    "multilexsum": "summ",
    "docqa": "docqa",
    "text_rag": None,
    "text_docqa": None,
}


# The versions of the benchmark a config can be built as (`Config.version`): the paper's (its code at 26197d2, every
# config named as before), V1.1 (the authors' code at 22b9f27: VRAG's sample without image paths holding `"`, DocVQA's
# page labels without " (page N)"; `builders.mmlongbench.versions`), and VLMEvalKit's published sets (the TSVs of
# `vlmevalkit/` in the Hub repo, by the benchmark's first author: `builders.mmlongbench.vlmevalkit`). Each version's
# configs are named apart (`v1_1_...`, `vlmevalkit_...`) and built only when named.
PAPER, V1_1, VLMEVALKIT = "paper", "v1.1", "vlmevalkit"
VERSION_PREFIX = {PAPER: "", V1_1: "v1_1_", VLMEVALKIT: "vlmevalkit_"}
VLMEVALKIT_LENGTHS: dict[str, int] = {"32k": 32768, "128k": 131072, "256k": 262144, "512k": 524288}


@dataclass(frozen=True)
class Config:
    leaf: Leaf
    length: str
    version: str = PAPER

    @property
    def name(self) -> str:
        return f"{VERSION_PREFIX[self.version]}{self.leaf.name}_{self.length}"

    @property
    def in_default(self) -> bool:
        """Whether a build that names no config makes it: the paper's lengths of the paper's version only."""
        return self.version == PAPER and not self.extended

    @property
    def tokens(self) -> int:
        return ALL_LENGTHS[self.length]

    @property
    def extended(self) -> bool:
        """Ours: a 128K row of the release grown past the paper's lengths (not VLMEvalKit's published 256K/512K)."""
        return self.version == PAPER and self.length in EXTENDED_LENGTHS

    @property
    def file(self) -> str:
        """The release file the config reads: its own, or the 128K file an extended config grows; a VLMEvalKit config
        reads its length's TSV (`vlmevalkit/MMLongBench_256K.tsv`)."""
        if self.version == VLMEVALKIT:
            return f"vlmevalkit/MMLongBench_{self.length.upper()}.tsv"
        return self.leaf.file(BASE_LENGTH if self.extended else self.length)


def _configs(leaves: tuple[Leaf, ...], lengths: dict[str, int] = LENGTHS, version: str = PAPER) -> dict[str, Config]:
    return {cfg.name: cfg for cfg in (Config(leaf, length, version) for length in lengths for leaf in leaves)}


# Summarization has no config past 128K: its rows are documents truncated from the end, the release holds each
# document only up to its 128K row, and the paper dropped every document longer than 128K + 24K tokens, so no
# released document can fill 256K.
EXTENDED_LEAVES: tuple[Leaf, ...] = tuple(leaf for leaf in LEAVES if leaf.category != "summ")


# Canonical order: by length, then leaf as in the paper's tables (every 8k config first); the ablations after.
CONFIGS: dict[str, Config] = _configs(LEAVES)  # the benchmark: 95 configs
ABLATION_CONFIGS: dict[str, Config] = _configs(ABLATION_LEAVES)
ALL_CONFIGS: dict[str, Config] = {**CONFIGS, **ABLATION_CONFIGS}  # what a build makes by default
EXTENDED_CONFIGS: dict[str, Config] = _configs(EXTENDED_LEAVES, EXTENDED_LENGTHS)  # built only when named
# V1.1: every leaf at the paper's lengths (its ablation loaders are the paper's, `text_doc`'s scorer raises: none here).
V1_1_CONFIGS: dict[str, Config] = _configs(LEAVES, LENGTHS, V1_1)
# VLMEvalKit's TSVs: the 19 leaves at 32K, 128K, 256K and 512K, as published (no ablation sets).
VLMEVALKIT_CONFIGS: dict[str, Config] = _configs(LEAVES, VLMEVALKIT_LENGTHS, VLMEVALKIT)
BUILDABLE_CONFIGS: dict[str, Config] = {**ALL_CONFIGS, **EXTENDED_CONFIGS, **V1_1_CONFIGS, **VLMEVALKIT_CONFIGS}
