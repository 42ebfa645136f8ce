"""MileBench (Song et al., 2024) as a versioned Hugging Face dataset: 29 subsets, interleaved, combined, adversarial."""

from builders.milebench.benchmark import BENCHMARK
from builders.milebench.build import BUILDER_VERSION, build_milebench
from builders.milebench.subsets import CONFIGS, SUBSETS

__all__ = ["BENCHMARK", "BUILDER_VERSION", "CONFIGS", "SUBSETS", "build_milebench"]
