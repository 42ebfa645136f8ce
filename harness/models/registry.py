"""Model registry in the style of lm-eval's `lm_eval/api/registry.py`: backends register with
`@register_model`, and `MODEL_MODULES` lets `get_model` import a backend only when it is asked for
(so `vllm` or `torch` are imported only by runs that use them)."""

from __future__ import annotations

import importlib

from harness.api import Model

_REGISTRY: dict[str, type[Model]] = {}

# name -> module that registers it; imported lazily on first use.
MODEL_MODULES: dict[str, str] = {
    "hf": "harness.models.hf",
    "constant": "harness.models.baselines",
    "random": "harness.models.baselines",
    "openai": "harness.models.openai_chat",
    "vllm": "harness.models.vllm_engine.backend",
}


def register_model(*names: str):
    def decorate(cls: type[Model]) -> type[Model]:
        for name in names:
            if name in _REGISTRY and _REGISTRY[name] is not cls:
                raise ValueError(f"model name {name!r} is already registered to {_REGISTRY[name].__qualname__}")
            _REGISTRY[name] = cls
        cls.name = names[0]
        return cls

    return decorate


def get_model_class(name: str) -> type[Model]:
    if name not in _REGISTRY and name in MODEL_MODULES:
        importlib.import_module(MODEL_MODULES[name])
    if name not in _REGISTRY:
        known = sorted(set(_REGISTRY) | set(MODEL_MODULES))
        raise ValueError(
            f"unknown model {name!r}; known backends: {', '.join(known)} (or an alias, see `harness models`)"
        )
    return _REGISTRY[name]


def available_models() -> list[str]:
    return sorted(set(_REGISTRY) | set(MODEL_MODULES))
