"""How much of one LoCoVQA release file a build reads (`builders.core.release_bounds`): each bound with the
figures of the real release behind it."""

from __future__ import annotations

from builders.core.release_bounds import Bound, GiB, MiB

# MNIST's IDX files (LoCoVQA): the training images are 47,040,016 bytes (16 + 60,000 x 28 x 28), gzipped or not.
MNIST_IDX = Bound(128 * MiB, "an MNIST IDX file")
# MNIST as the Hub publishes it (`ylecun/mnist`, `mnist/train-00000-of-00001.parquet`): 60,000 PNGs of 28 x 28 grey
# pixels, each under 1 KB, with their labels: under 60 MB.
MNIST_PARQUET = Bound(128 * MiB, "MNIST's Parquet file")
# MMStar (`Lin-Chen/MMStar`): 1,500 questions, one image each; mmstar.parquet is 41.8 MB, MMStar.tsv (the images in
# base64, as VLMEvalKit's) 37.9 MB at the pinned commit and 59.6 MB since.
MMSTAR_FILE = Bound(1 * GiB, "an MMStar question file")
