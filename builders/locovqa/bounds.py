"""How much of one LoCoVQA release file a build reads (`builders.core.release_bounds`): each bound with the
figures of the real release behind it."""

from __future__ import annotations

from builders.core.release_bounds import Bound, MiB

# MNIST's IDX files (LoCoVQA): the training images are 47,040,016 bytes (16 + 60,000 x 28 x 28), gzipped or not.
MNIST_IDX = Bound(128 * MiB, "an MNIST IDX file")
