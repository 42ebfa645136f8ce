"""How much of one MMLongBench release file a build reads (`builders.core.release_bounds`): each bound with the
figures of the real release behind it."""

from __future__ import annotations

from builders.core.release_bounds import Bound, GiB, LineBound, MiB

# MMLongBench (ZhaoweiWang/MMLongBench). A row holds at most 128K tokens: its text at ~4 characters a Llama-2 token
# is ~0.5 MB, ~1.2 MB as JSON's \u escapes of non-Latin text; the longest files hold 1,000 ids x 6 needle depths
# (`vh_single_test_1000_K128_dep6.jsonl`: 6,000 lines, ~15 KB each) or a few hundred 128K text rows (~0.6 MB
# each), some 100-400 MB. Images: natural photos (OBELICS ones resized to 1,024 px by the authors, App. B.6)
# under 1 MB, rendered document pages a few MB.
MMLB_JSONL = LineBound(Bound(64 * MiB, "a jsonl line"), 1_000_000)
MMLB_TEXT_FILE = Bound(4 * GiB, "a jsonl file")
MMLB_JSON_FILE = Bound(256 * MiB, "a JSON file (the ICL files are under 10 MB, kept out of LFS on the Hub)")
MMLB_IMAGE = Bound(64 * MiB, "an image")

# VLMEvalKit's MMLongBench sets (its `vlmevalkit/` TSVs, `builders.mmlongbench.vlmevalkit`). The TSVs hold every row of
# one length in one file. A row's text is its whole context: at 512K tokens, ~4 characters a Llama-2 token, ~2 MB,
# plus `extra_info` (the release row without its passages, a few KB; a DocVQA row's OCR-free fields). 512K keeps
# ~1,500 rows (50 % of VRAG, ICL, Summ, DocVQA, 25 % of NIAH's ~2,500), so the largest TSV is a few GB; a physical line
# is a passage or a page label, a record at most ~2 MB of text. Images are the release's (photos under 1 MB, pages a
# few MB): `MMLB_IMAGE` applies.
TSV_FILE = Bound(16 * GiB, "a TSV of VLMEvalKit's MMLongBench sets")
# A record may run over many physical lines (its text is quoted, newlines and all): each line, and each field, within
# 64 MiB (30 times the longest row's text); the count of lines is bounded by the file's bytes.
TSV_LINES = LineBound(Bound(64 * MiB, "a TSV line"), 1 << 31)
TSV_FIELD = 64 * MiB
TSV_RECORDS = 1_000_000  # ~1,500 rows at 512K; 3,962 in the four files
