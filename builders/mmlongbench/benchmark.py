"""MMLongBench's entry in `builders list` and `builders build mmlongbench` (its flags are `MMLongBenchOptions`)."""

from __future__ import annotations

from collections.abc import Mapping

from builders.core.benchmark import Benchmark
from builders.mmlongbench.build import MMLongBenchBuild
from builders.mmlongbench.leaves import BUILDABLE_CONFIGS, Leaf
from builders.mmlongbench.plan import FIRST_ROW_LOADERS


def _rows_per_id(leaf: Leaf) -> str:
    if leaf.loader in FIRST_ROW_LOADERS:
        return ", the first row of each"
    return f" x {leaf.variants} {leaf.needle}s" if leaf.variants > 1 else ""


def _config_lines() -> dict[str, str]:
    width = max(len(cfg.leaf.paper_name) for cfg in BUILDABLE_CONFIGS.values())
    return {
        name: f"{cfg.leaf.paper_name:<{width}} {cfg.length:>4}  {cfg.leaf.sample} ids" + _rows_per_id(cfg.leaf)
        for name, cfg in BUILDABLE_CONFIGS.items()
    }


def _describe(info: Mapping[str, object]) -> str:
    return f"{info['rows']} rows, {info.get('mean_images', 0)} images per row"


BENCHMARK = Benchmark(
    MMLongBenchBuild,
    summary="19 long-context datasets x 8K-128K tokens (VRAG, NIAH, ICL, Summ, DocVQA), the ablation sets, and our "
    "256K/512K/1M configs grown from the 128K rows (not the paper's; built only when named)",
    config_lines=_config_lines(),
    describe=_describe,
)
