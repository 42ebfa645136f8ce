"""MMLongBench (Wang et al., 2025) as a versioned Hugging Face dataset: 19 leaves x 5 lengths."""

from builders.mmlongbench.benchmark import BENCHMARK
from builders.mmlongbench.build import BUILDER_VERSION, build_mmlongbench
from builders.mmlongbench.leaves import CONFIGS, LEAVES, LENGTHS

__all__ = ["BENCHMARK", "BUILDER_VERSION", "CONFIGS", "LEAVES", "LENGTHS", "build_mmlongbench"]
