"""MM-NIAH (Wang et al., NeurIPS 2024 Datasets and Benchmarks) as a versioned Hugging Face dataset: 12 configs, the
six official tasks in the validation and test splits."""

from builders.mm_niah.benchmark import BENCHMARK
from builders.mm_niah.build import BUILDER_VERSION, build_mm_niah, features
from builders.mm_niah.configs import CONFIGS

__all__ = ["BENCHMARK", "BUILDER_VERSION", "CONFIGS", "build_mm_niah", "features"]
