"""The model families, by name: one line each in `FAMILIES`, naming the module whose `FAMILY` (a
`harness.models.facts.family.ModelFamily`) declares it, as `harness.models.registry` lists the backends (and vLLM's
`model_executor/models/registry.py` its architectures). A family module holds what is true of a kind of model
whatever the benchmark: its image-token rule, its prompt formats and bundled templates, the `model_type` and
architecture names that identify it, its aliases. Adding a family adds its module and one line here
(docs/ADDING_A_MODEL_FAMILY.md).

A checkpoint's family is found by what its `config.json` says, `model_type` then `architectures`, each matched exactly
against what the variants declare (`family_of`), whatever the checkpoint is called: a family module that declares its
names is found for every checkpoint of its kind, with no code of its own. A checkpoint whose config is not on this
machine is known only as an alias names it (its family's declaration); else its family is not known, and the count
says so (`checkpoint_family`). The fragments of names are for what has no config: an API model's name, or a served
model's (`family_of_api_name`), in the registry's order.

A lookup imports only the families it may need, as vLLM's registry imports an architecture's module on first use:
`names.json` beside this module lists the names each family declares (`declared_names`; written by `make docs`,
scripts/family_names.py, and a test fails where it is stale), so a lookup imports the families whose listed names
match, and every family `names.json` does not list yet. A run of a baseline or an API model imports no family it does
not use; listing every alias or style (`aliases`, `styles`: `harness models`) imports them all.
"""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path

from builders.core import contract
from harness.errors import UserError
from harness.models.facts.alias import Alias
from harness.models.facts.family import ImageTokens, ModelFamily
from harness.models.facts.prompt_style import DEFAULT, TEXT_ONLY, THINKING, PromptStyle

# name -> the module that declares it, as `FAMILY`; the order is the API names' fragments' (a more specific first).
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


NAMES = Path(__file__).with_name("names.json")  # family -> the names it declares, by kind (`declared_names`)
NAMES_MOST = contract.MiB  # some kB: every family's few names
KINDS = ("model_types", "architectures", "fragments", "aliases", "checkpoints", "styles")


@functools.cache
def family(name: str) -> ModelFamily:
    """The family `name` of the registry, its module imported on first use."""
    module = FAMILIES[name]
    found = getattr(importlib.import_module(module), "FAMILY", None)
    if not isinstance(found, ModelFamily):
        raise TypeError(f"{module} declares no FAMILY (a ModelFamily) for the {name} family")
    return found


def families() -> list[ModelFamily]:
    """Every family, in the registry's order (each module imported once)."""
    return [family(name) for name in FAMILIES]


def declared_names(declared: ModelFamily) -> dict[str, list[str]]:
    """What a lookup may find a family by, by kind (`KINDS`): what `names.json` lists for it."""
    variants = declared.variants
    return {
        "model_types": sorted({t for v in variants for t in v.model_types}),
        "architectures": sorted({a for v in variants for a in v.architectures}),
        "fragments": sorted({f for v in variants for f in v.fragments}),
        "aliases": sorted(declared.aliases),
        "checkpoints": sorted({str(a.args["pretrained"]) for a in declared.aliases.values() if "pretrained" in a.args}),
        "styles": sorted(style.name for style in declared.styles),
    }


@functools.cache
def _listed() -> dict[str, dict[str, list[str]]]:
    """`names.json` as every file the harness owns is read: a regular file within its bound, its name in the error."""
    if not NAMES.exists():
        return {}
    try:
        listed = json.loads(contract.read_regular(NAMES, NAMES_MOST, "the families' names.json").decode("utf-8"))
    except OSError as err:  # not a regular file (a FIFO, /dev/zero), or past its bound
        raise UserError(f"{NAMES}: cannot be read ({err.strerror or err}); `make docs` writes it") from None
    except (ValueError, RecursionError) as err:  # not UTF-8, not JSON, nested past the parser's depth
        raise UserError(f"{NAMES}: not JSON ({err}); `make docs` writes it") from None
    if not isinstance(listed, dict) or not all(isinstance(v, dict) for v in listed.values()):
        raise UserError(f"{NAMES}: expected {{FAMILY: {{KIND: [NAME, ...]}}}}; `make docs` writes it")
    return listed


def _may_declare(kind: str, matches: Callable[[str], bool]) -> list[ModelFamily]:
    """The families, in the registry's order, that `names.json` lists a matching name of `kind` for, and every family
    it does not list (one added since it was written); only those are imported."""
    listed = _listed()
    return [family(n) for n in FAMILIES if n not in listed or any(matches(x) for x in listed[n].get(kind, ()))]


def _variants(kind: str, matches: Callable[[str], bool]) -> list[ImageTokens]:
    return [variant for found in _may_declare(kind, matches) for variant in found.variants]


def family_of(model_type: str | None, architectures: Iterable[str] = ()) -> ImageTokens | None:
    """The variant a checkpoint's config names: its `model_type`, else one of its `architectures`, exactly as a
    variant declares them; None where no family here declares either."""
    architectures = tuple(architectures)
    found = (
        next((v for v in _variants("model_types", model_type.__eq__) if model_type in v.model_types), None)
        if model_type
        else None
    )
    for architecture in architectures:
        declaring = _variants("architectures", architecture.__eq__)
        found = found or next((v for v in declaring if architecture in v.architectures), None)
    return found


def family_of_api_name(name: str | None) -> ImageTokens | None:
    """The variant of an API model (or a served model) by its name, which has no config to read: the first, in the
    registry's order, whose fragments the name holds."""
    lowered = (name or "").lower()
    if not lowered:
        return None
    return next(
        (v for v in _variants("fragments", lowered.__contains__) if any(f in lowered for f in v.fragments)), None
    )


def alias_family(pretrained: str) -> ImageTokens | None:
    """The variant of a checkpoint an alias names, as the family module that declares the alias knows it: its one
    variant, or the one of its variants whose fragments the checkpoint's name holds."""
    for declaring in _may_declare("checkpoints", pretrained.__eq__):
        if any(alias.args.get("pretrained") == pretrained for alias in declaring.aliases.values()):
            named = [v for v in declaring.variants if any(f in pretrained.lower() for f in v.fragments)]
            return (named or list(declaring.variants))[0] if declaring.variants else None
    return None


def config_family(pretrained: str, model_type: str | None, architectures: Iterable[str]) -> ImageTokens | None:
    """The variant of a checkpoint whose config names `model_type` and `architectures` (`family_of`), else the one
    the alias that names it declares (a config every version of a model shares: MiniCPM-V's `minicpmv`)."""
    return family_of(model_type, architectures) or alias_family(pretrained)


def checkpoint_family(pretrained: str, revision: str | None = None) -> tuple[ImageTokens | None, str]:
    """The variant of a checkpoint (a Hub name or a local folder) by its `config.json` on this machine, read
    offline (`config_family`), or by the alias that names it where the config is not here; with how it was found, or
    why it was not, in words."""
    from harness.models.facts.checkpoint import read_checkpoint

    config = read_checkpoint(pretrained, revision)
    if config is not None:
        found = family_of(config.model_type, config.architectures)
        if found is not None:
            return found, f"its config.json's {config.names}"
        found = alias_family(pretrained)
        if found is not None:
            return found, f"the alias that names it (no family declares its config.json's {config.names})"
        return None, f"its config.json's {config.names} is no family's here"
    found = alias_family(pretrained)
    if found is not None:
        return found, "the alias that names it (its config.json is not on this machine)"
    return None, f"no config.json of {pretrained} is on this machine, and no alias names it"


def styles() -> dict[str, PromptStyle]:
    """Every prompt style by name: `default`, `thinking` and `text_only` (a text LLM's), then each family's."""
    out = {DEFAULT.name: DEFAULT, THINKING.name: THINKING, TEXT_ONLY.name: TEXT_ONLY}
    for declared in families():
        for style in declared.styles:
            if style.name in out:
                raise ValueError(f"prompt style {style.name} is declared twice ({declared.name})")
            out[style.name] = style
    return out


def style_named(name: str) -> PromptStyle:
    """The prompt style `name`: a built-in one, or the family's that declares it (only it imported)."""
    builtin = {style.name: style for style in (DEFAULT, THINKING, TEXT_ONLY)}
    declared = (s for f in _may_declare("styles", name.__eq__) for s in f.styles if s.name == name)
    found = builtin.get(name) or next(declared, None)
    if found is None:
        raise ValueError(f"prompt_style={name!r}: expected one of {', '.join(sorted(styles()))}")
    return found


def alias_named(name: str) -> Alias | None:
    """The alias `name` as the family that declares it has it (only that family imported), or None."""
    return next((f.aliases[name] for f in _may_declare("aliases", name.__eq__) if name in f.aliases), None)


def aliases() -> dict[str, Alias]:
    """Every family's aliases, by name (each once)."""
    out: dict[str, Alias] = {}
    for declared in families():
        for name, alias in declared.aliases.items():
            if name in out:
                raise ValueError(f"alias {name} is defined twice")
            out[name] = alias
    return out
