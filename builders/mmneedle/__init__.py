"""MMNeedle (Wang et al., NAACL 2025) as a versioned Hugging Face dataset: 21 configs m{M}_n{N}_k{K}."""

from builders.mmneedle.benchmark import BENCHMARK
from builders.mmneedle.build import BUILDER_VERSION, build_mmneedle
from builders.mmneedle.configs import CONFIGS, NeedleConfig, parse_configs
from builders.mmneedle.rows import FEATURES

__all__ = ["BENCHMARK", "BUILDER_VERSION", "CONFIGS", "FEATURES", "NeedleConfig", "build_mmneedle", "parse_configs"]
