"""The model families, by name: one line each in `FAMILIES`, naming the module whose `FAMILY` (a
`harness.models.families.family.ModelFamily`) declares it, as `harness.models.registry` lists the backends (and vLLM's
`model_executor/models/registry.py` its architectures). A family module holds what is true of a kind of model
whatever the benchmark: its image-token rule, its prompt formats and bundled templates, the `model_type` and
architecture names that identify it, its aliases. Adding a family adds its module and one line here
(docs/ADDING_A_MODEL_FAMILY.md).

A checkpoint's family is found by its config's `model_type` (or `architectures`), exactly; the fragments of names
stand in where there is none (an API model's name, a checkpoint read without its config), in the registry's order.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from harness.models.alias import Alias
from harness.models.families.family import ImageTokens, ModelFamily
from harness.models.prompt_style import DEFAULT, TEXT_ONLY, THINKING, PromptStyle

# name -> the module that declares it, as `FAMILY`; the order is the fragments' (a more specific name first).
FAMILIES: dict[str, str] = {
    "qwen2_vl": "harness.models.families.qwen2_vl",
    "qwen3_vl": "harness.models.families.qwen3_vl",
    "pixtral": "harness.models.families.pixtral",
    "llava": "harness.models.families.llava",
    "idefics": "harness.models.families.idefics",
    "internvl": "harness.models.families.internvl",
    "ovis2": "harness.models.families.ovis2",
    "gemma4": "harness.models.families.gemma4",
    "gemma3n": "harness.models.families.gemma3n",  # before gemma3: its names hold Gemma 3's fragments
    "gemma3": "harness.models.families.gemma3",
    "glm4v": "harness.models.families.glm4v",
    "kimi_vl": "harness.models.families.kimi_vl",
    "kimi_k3": "harness.models.families.kimi_k3",
    "minicpm_v": "harness.models.families.minicpm_v",
    "phi": "harness.models.families.phi",
    "nvila": "harness.models.families.nvila",
    "gpt": "harness.models.families.gpt",
    "claude": "harness.models.families.claude",
    "gemini": "harness.models.families.gemini",
    "qwen2_5_text": "harness.models.families.qwen2_5_text",
}

_LOADED: list[ModelFamily] = []


def families() -> list[ModelFamily]:
    """Every family, in the registry's order (each module imported once)."""
    if not _LOADED:
        for name, module in FAMILIES.items():
            family = getattr(importlib.import_module(module), "FAMILY", None)
            if not isinstance(family, ModelFamily):
                raise TypeError(f"{module} declares no FAMILY (a ModelFamily) for the {name} family")
            _LOADED.append(family)
    return _LOADED


def _variants() -> list[ImageTokens]:
    return [variant for family in families() for variant in family.variants]


def family_of(*names: str | None, architectures: Iterable[str] = ()) -> ImageTokens | None:
    """The family (its variant) of a checkpoint or API model: by a `model_type` among `names` or one of its config's
    `architectures`, exactly; else by the first of `names` (a model type, a checkpoint or API model name) that holds a
    family's fragment."""
    variants = _variants()
    for name in names:
        found = next((v for v in variants if name and name in v.model_types), None)
        if found is not None:
            return found
    for architecture in architectures:
        found = next((v for v in variants if architecture in v.architectures), None)
        if found is not None:
            return found
    for name in names:
        lowered = (name or "").lower()
        for variant in variants:
            if lowered and any(fragment in lowered for fragment in variant.fragments):
                return variant
    return None


def styles() -> dict[str, PromptStyle]:
    """Every prompt style by name: `default`, `thinking` and `text_only` (a text LLM's), then each family's."""
    out = {DEFAULT.name: DEFAULT, THINKING.name: THINKING, TEXT_ONLY.name: TEXT_ONLY}
    for family in families():
        for style in family.styles:
            if style.name in out:
                raise ValueError(f"prompt style {style.name} is declared twice ({family.name})")
            out[style.name] = style
    return out


def style_named(name: str) -> PromptStyle:
    known = styles()
    if name not in known:
        raise ValueError(f"prompt_style={name!r}: expected one of {', '.join(sorted(known))}")
    return known[name]


def aliases() -> dict[str, Alias]:
    """Every family's aliases, by name (each once)."""
    out: dict[str, Alias] = {}
    for family in families():
        for name, alias in family.aliases.items():
            if name in out:
                raise ValueError(f"alias {name} is defined twice")
            out[name] = alias
    return out
