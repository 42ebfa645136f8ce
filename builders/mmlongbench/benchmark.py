"""MMLongBench's entry in `builders list` and `builders build mmlongbench` (its flags are `MMLongBenchOptions`)."""

from __future__ import annotations

from collections.abc import Mapping

from builders.core.benchmark import BuilderSpec
from builders.mmlongbench.build import MMLongBenchBuild
from builders.mmlongbench.leaves import BUILDABLE_CONFIGS, V1_1, VLMEVALKIT, Config, Leaf
from builders.mmlongbench.plan import FIRST_ROW_LOADERS
from builders.mmlongbench.version_configs import config_sets


def _rows_per_id(leaf: Leaf) -> str:
    if leaf.loader in FIRST_ROW_LOADERS:
        return ", the first row of each"
    return f" x {leaf.variants} {leaf.needle}s" if leaf.variants > 1 else ""


def _rows(cfg: Config) -> str:
    if cfg.version == VLMEVALKIT:
        return "VLMEvalKit's rows as published"
    return f"{cfg.leaf.sample} ids" + _rows_per_id(cfg.leaf) + (", V1.1" if cfg.version == V1_1 else "")


def _config_lines() -> dict[str, str]:
    width = max(len(cfg.leaf.paper_name) for cfg in BUILDABLE_CONFIGS.values())
    return {
        name: f"{cfg.leaf.paper_name:<{width}} {cfg.length:>4}  {_rows(cfg)}" for name, cfg in BUILDABLE_CONFIGS.items()
    }


def _describe(info: Mapping[str, object]) -> str:
    return f"{info['rows']} rows, {info.get('mean_images', 0)} images per row"


BENCHMARK = BuilderSpec(
    MMLongBenchBuild,
    summary="19 long-context datasets x 8K-128K tokens (VRAG, NIAH, ICL, Summ, DocVQA), the ablation sets; built only "
    "when named: our 256K/512K/1M configs grown from the 128K rows, V1.1's configs (v1_1_*) and VLMEvalKit's published "
    "32K-512K sets (vlmevalkit_*; --configs v1_1_128k or vlmevalkit_256k names a version's 19 at one length)",
    config_lines=_config_lines(),
    describe=_describe,
    accepts_config=config_sets().__contains__,
)
