"""How much of one MMNeedle release file a build reads (`builders.core.release_bounds`): each bound with the
figures of the real release behind it."""

from __future__ import annotations

from builders.core.release_bounds import Bound, MiB

# MMNeedle (Wang-ML-Lab/MMNeedle, data/metadata_stitched.zip). The largest pool file, 8_8.json, maps 10,000
# stitched images to 64 cells of ~56 bytes each: ~36 MB (the code repo's 2_2.json is 2,700,002 bytes for 4 cells);
# an annotation file is ~2.5 MB for M = 1 (annotations_1_8_8.json: 2,473,892 bytes), ~10 MB for M = 10.
MMNEEDLE_METADATA_FILE = Bound(256 * MiB, "a metadata file")
