"""LoCoVQA (Sharma, Saxon and Wang, 2024) as a versioned Hugging Face dataset: a content image among distractors,
composed into one grid or interleaved, for OK-VQA, MMStar, MNIST transcription and the needle ablation."""

from builders.locovqa.benchmark import BENCHMARK
from builders.locovqa.build import BUILDER_VERSION, build_locovqa
from builders.locovqa.configs import CONFIGS, LocoConfig, parse_config
from builders.locovqa.rows import features

__all__ = ["BENCHMARK", "BUILDER_VERSION", "CONFIGS", "LocoConfig", "build_locovqa", "features", "parse_config"]
