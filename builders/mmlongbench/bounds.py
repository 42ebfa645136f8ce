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
