"""The backends, by name: one line each in `BACKENDS`, naming the package whose `BACKEND` (a
`harness.models.backend_spec.BackendSpec`) declares it, in the style of lm-eval's `lm_eval/api/registry.py`.

Nothing is imported until a backend is asked for: `backend_spec` imports its package's light declaration, and
`get_model_class` the module whose `@register_model` makes its `Model` (so `vllm` or `torch` are imported only by
runs that use them). Adding a backend adds its package and one line here (docs/ADDING_A_BACKEND.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from harness.models.backend_spec import BackendSpec

if TYPE_CHECKING:  # the registry and the declarations import no backend code: `harness --help` stays light
    from harness.api import Model

REGISTRY_MODULE = __name__  # with each backend's own package, the one module that may compare a backend's name

# name -> the package (or module) that declares it, as `BACKEND`.
BACKENDS: dict[str, str] = {
    "hf": "harness.models.backends.hf",
    "vllm": "harness.models.backends.vllm_engine",
    "sglang": "harness.models.backends.sglang_engine",
    "openai": "harness.models.backends.openai_chat",
    "gemini": "harness.models.backends.gemini",
    "anthropic": "harness.models.backends.anthropic_messages",
    "constant": "harness.models.backends.baselines.constant",
    "random": "harness.models.backends.baselines.random_guess",
}

_REGISTRY: dict[str, type[Model]] = {}
_UNDECLARED = BackendSpec(module="")  # a model registered without a spec (a test's): every default


def register_model(*names: str):
    def decorate(cls: type[Model]) -> type[Model]:
        for name in names:
            if name in _REGISTRY and _REGISTRY[name] is not cls:
                raise ValueError(f"model name {name!r} is already registered to {_REGISTRY[name].__qualname__}")
            _REGISTRY[name] = cls
        cls.name = names[0]
        return cls

    return decorate


def backend_spec(name: str) -> BackendSpec:
    """The declaration of backend `name` (every default for a name not in `BACKENDS`: a model a test registered, or
    a name read from a results file, which imports nothing)."""
    if name not in BACKENDS:
        return _UNDECLARED
    spec = getattr(importlib.import_module(BACKENDS[name]), "BACKEND", None)
    if not isinstance(spec, BackendSpec):
        raise TypeError(f"{BACKENDS[name]} declares no BACKEND (a BackendSpec) for the {name} backend")
    return spec


def get_model_class(name: str) -> type[Model]:
    if name not in _REGISTRY and name in BACKENDS:
        importlib.import_module(backend_spec(name).module)
    if name not in _REGISTRY:
        raise ValueError(
            f"unknown model {name!r}; known backends: {', '.join(available_models())} (or an alias, see `harness models`)"
        )
    return _REGISTRY[name]


def available_models() -> list[str]:
    return sorted(set(_REGISTRY) | set(BACKENDS))


def other_names() -> dict[str, tuple[str, str]]:
    """lm-eval's and lmms-eval's names for the backends here (`BackendSpec.known_as`): name -> (our backend, whose
    name it is). A name that is also ours (lmms-eval's `vllm`, `openai`) is ours, and not listed."""
    names: dict[str, tuple[str, str]] = {}
    for backend in BACKENDS:
        for name, whose in backend_spec(backend).known_as.items():
            if name in BACKENDS:
                raise ValueError(f"the {backend} backend declares {name!r}, a backend's own name, as another's")
            if name in names:
                raise ValueError(f"{name!r} is declared by the {names[name][0]} and {backend} backends")
            names[name] = (backend, whose)
    return names
