"""MMLongBench-Doc's entry in `builders list` and `builders build mmlongbench_doc` (its flags are
`MMLongBenchDocOptions`)."""

from __future__ import annotations

from collections.abc import Mapping

from builders.core.benchmark import BuilderSpec
from builders.mmlongbench_doc.build import CONFIGS, MMLongBenchDocBuild


def _describe(info: Mapping[str, object]) -> str:
    return f"{info['rows']} questions over {info.get('documents', '?')} documents"


BENCHMARK = BuilderSpec(
    MMLongBenchDocBuild,
    summary="questions over long PDFs, each shown as its rendered pages (NeurIPS 2024 D&B)",
    config_lines=CONFIGS,
    describe=_describe,
)
