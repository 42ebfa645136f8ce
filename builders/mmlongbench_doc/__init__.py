"""MMLongBench-Doc (Ma et al., NeurIPS 2024 Datasets and Benchmarks) as a versioned Hugging Face dataset: questions
over long PDFs, each row showing its document's pages rendered as the official run renders them."""

from builders.mmlongbench_doc.benchmark import BENCHMARK
from builders.mmlongbench_doc.build import BUILDER_VERSION, CONFIGS, build_mmlongbench_doc

__all__ = ["BENCHMARK", "BUILDER_VERSION", "CONFIGS", "build_mmlongbench_doc"]
