"""How the vllm backend counts a prompt before it reaches the engine: as vLLM will, by the checkpoint's own processor
(`harness.models.engine_count`, which the `sglang` backend shares: both engines render and expand a prompt with it)."""

from __future__ import annotations

from harness.models.engine_count import EngineCount, load_processor_count

__all__ = ["EngineCount", "load_processor_count"]
