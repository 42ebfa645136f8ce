"""How much of one MileBench release file a build reads (`builders.core.release_bounds`): each bound with the
figures of the real release behind it."""

from __future__ import annotations

from builders.core.release_bounds import Bound, MiB

# MileBench (FreedomIntelligence/MileBench, six part archives of 2.0-4.0 GB). An annotation file holds one
# subset's samples (6,440 in all over 29 subsets and their adversarial sets, at most 11,821 words each): a few MB.
# The largest images are the Combined-image Set's grids: up to 109 images at 800 x 800 px, an 8,800 x 8,000 px
# JPEG of 10-20 MB.
MILEBENCH_ANNOTATION = Bound(64 * MiB, "an annotation file")
MILEBENCH_IMAGE = Bound(256 * MiB, "an image")
