"""How much of one LoCoVQA release file a build reads (`builders.core.release_bounds`): each bound with the
figures of the real release behind it."""

from __future__ import annotations

from builders.core.release_bounds import Bound, GiB, MiB

# MNIST's IDX files (LoCoVQA): the training images are 47,040,016 bytes (16 + 60,000 x 28 x 28), gzipped or not.
MNIST_IDX = Bound(128 * MiB, "an MNIST IDX file")
# MNIST as the Hub publishes it (`ylecun/mnist`, `mnist/train-00000-of-00001.parquet`): 60,000 PNGs of 28 x 28 grey
# pixels, each under 1 KB, with their labels: under 60 MB.
MNIST_PARQUET = Bound(128 * MiB, "MNIST's Parquet file")
# MMStar (`Lin-Chen/MMStar`'s mmstar.parquet, or VLMEvalKit's MMStar.tsv, its images in base64): 1,500 questions, one
# image each (photos, charts and diagrams well under 1 MB), so under 2 GB even were every image 1 MB in base64.
MMSTAR_FILE = Bound(2 * GiB, "an MMStar question file")
