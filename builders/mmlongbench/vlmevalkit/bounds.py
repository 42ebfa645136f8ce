"""How much of VLMEvalKit's MMLongBench files a build reads (the release's own bounds are in
`builders.core.release_bounds`; these are MMLongBench's alone, so they live with it).

The TSVs hold every row of one length in one file. A row's text is its whole context: at 512K tokens, ~4 characters a
Llama-2 token, ~2 MB, plus `extra_info` (the release row without its passages, a few KB; a DocVQA row's OCR-free
fields). 512K keeps ~1,500 rows (50 % of VRAG, ICL, Summ, DocVQA, 25 % of NIAH's ~2,500), so the largest TSV is a
few GB; a physical line is a passage or a page label, a record at most ~2 MB of text. Images are the release's
(photos under 1 MB, pages a few MB): the release's image bound applies.
"""

from __future__ import annotations

from builders.core.release_bounds import Bound, GiB, LineBound, MiB

TSV_FILE = Bound(16 * GiB, "a TSV of VLMEvalKit's MMLongBench sets")
# A record may run over many physical lines (its text is quoted, newlines and all): each line, and each field, within
# 64 MiB (30 times the longest row's text); the count of lines is bounded by the file's bytes.
TSV_LINES = LineBound(Bound(64 * MiB, "a TSV line"), 1 << 31)
TSV_FIELD = 64 * MiB
TSV_RECORDS = 1_000_000  # ~1,500 rows at 512K; 3,962 in the four files
