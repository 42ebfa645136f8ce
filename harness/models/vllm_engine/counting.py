"""How the vllm backend counts a prompt before it reaches the engine: as vLLM will, by the checkpoint's own processor
(`harness.models.engine_count`, which the `sglang` backend shares: both engines render and expand a prompt with it),
with the template vLLM ships for a checkpoint that has none (`fallback_template`)."""

from __future__ import annotations

from harness.models import engine_count
from harness.models.vllm_engine.settings import VLLMSettings


def fallback_template(pretrained: str, revision: str | None) -> str | None:
    """The template vLLM renders a checkpoint with where the checkpoint has none of its own: its renderer's last
    resort, the template it ships for the config's `model_type` (`vllm/renderers/hf.py`, `resolve_chat_template`;
    MiniCPM-V 4.5's `template_minicpmv45.jinja`), read as its `load_chat_template` reads it; None where the checkpoint
    has one, is not on this machine, or vLLM ships none for it."""
    from harness.models.checkpoint_config import read_checkpoint

    own = read_checkpoint(pretrained, revision)
    if own is None or own.chat_template is not None or own.model_type is None:
        return None
    try:
        from vllm.transformers_utils.chat_templates import get_chat_template_fallback_path
    except ImportError:  # no vLLM here (a screen): the checkpoint's missing template is said by the count
        return None
    path = get_chat_template_fallback_path(model_type=own.model_type, tokenizer_name_or_path=pretrained)
    return path.read_text(encoding="utf-8") if path is not None and path.is_file() else None


class EngineCount(engine_count.EngineCount):
    """The vllm backend's count: `engine_count.EngineCount` as vLLM counts, with vLLM's fallback template."""

    def __init__(self, settings: VLLMSettings, chat_template: str | None, *, online: bool = True) -> None:
        super().__init__(settings, chat_template, online=online, engine="vLLM", fallback=fallback_template)
