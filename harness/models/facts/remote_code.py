"""A checkpoint's own code (`trust_remote_code=true`) runs only where the user asked for it for that checkpoint, and
never unsaid.

- **An alias's trust covers the checkpoint it names** (`alias_trust`, called where alias arguments are resolved): an
  alias that trusts remote code (the vLLM aliases of InternVL and Phi, as the official wrappers loaded them) trusts
  that checkpoint; another put in its place through `--model_args pretrained=OTHER` is not trusted by it, and the
  run says so in one line. `trust_remote_code=true` given by the user (in `--model_args`, or `--trust_remote_code`)
  still works for any checkpoint.
- **Every loader says it before it happens** (`before_loading`, called by the hf and vLLM loaders and their
  `--screen_only` stand-ins before transformers or vLLM can import anything of the checkpoint): with trust given,
  the checkpoint's config files are read and, where they name code of their own (`auto_map` in `config.json`,
  `tokenizer_config.json`, `processor_config.json`, `preprocessor_config.json`), one line names the checkpoint and
  the modules that will run (once per checkpoint and process).
- **A family transformers implements itself is refused its checkpoint's code**: `trust_remote_code=true` on a
  checkpoint whose `model_type` transformers knows (gemma3, qwen2_5_vl, llava, ...) and whose config still names
  code of its own would run that code in place of transformers' own classes, which the family does not need; that
  is what a checkpoint made to run its code looks like, so the load is refused in one line (drop the flag: the
  checkpoint loads with transformers' classes). Where such a checkpoint names no code, the flag changes nothing and
  nothing is said.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

from builders.core import contract
from harness.errors import UserError
from harness.models.facts.args import TRUE

CODE_FILES = ("config.json", "tokenizer_config.json", "processor_config.json", "preprocessor_config.json")
CONFIG_MOST = 16 * contract.MiB  # a checkpoint's config files are some KB (a tokenizer's with its chat template: 100s)
_SAID: set[tuple[str, str | None]] = set()


class RemoteCodeRefused(UserError):
    """A checkpoint whose code would replace transformers' own implementation of its family."""


def trusts(args: Mapping[str, str]) -> bool:
    return str(args.get("trust_remote_code", "false")).strip().lower() in TRUE


def alias_trust(alias: str, named: str | None, given: Mapping[str, str], merged: dict[str, str]) -> dict[str, str]:
    """`merged` (an alias's arguments with the command line's over them) without the alias's `trust_remote_code`
    when `given` puts another checkpoint than the one it names (`named`) in its place; the user's own
    `trust_remote_code` is kept whatever the checkpoint. Says in one line when the alias's trust is dropped."""
    other = given.get("pretrained")
    if "trust_remote_code" in given or other is None or other == named or not trusts(merged):
        return merged
    merged = {k: v for k, v in merged.items() if k != "trust_remote_code"}
    print(
        f"harness: alias {alias} trusts the code of {named}, not of {other} put in its place (pretrained=...): "
        f"{other}'s own code is not run; give trust_remote_code=true in --model_args to run it",
        file=sys.stderr,
    )
    return merged


def before_loading(checkpoint: str, revision: str | None, trust: bool, *, offline: bool = False) -> None:
    """Called before a loader can run `checkpoint`'s code: with `trust`, names (once) the modules its config files
    map, or refuses them for a family transformers implements (`RemoteCodeRefused`); without, does nothing."""
    if not trust or not checkpoint:
        return
    key = (checkpoint, revision)
    if key in _SAID:
        return
    configs, unread = _config_files(checkpoint, revision, offline)
    modules = code_modules(configs)
    model_type = configs.get("config.json", {}).get("model_type")
    if modules and isinstance(model_type, str) and _native(model_type):
        raise RemoteCodeRefused(
            f"checkpoint {checkpoint}: its model_type {model_type!r} is one transformers implements itself, yet its "
            f"config names code of its own ({', '.join(modules)}); trust_remote_code=true would run that code in "
            "place of transformers' classes, which this family does not need: not loaded. Drop trust_remote_code "
            "to load it with transformers' own classes"
        )
    _SAID.add(key)
    at = f"@{revision}" if revision else ""
    if modules:
        print(
            f"harness: trust_remote_code=true: running the code of checkpoint {checkpoint}{at}: {', '.join(modules)}",
            file=sys.stderr,
        )
    elif unread:
        print(
            f"harness: trust_remote_code=true: the code of checkpoint {checkpoint}{at} may run (its config could not "
            f"be read to name it: {unread})",
            file=sys.stderr,
        )


def code_modules(configs: Mapping[str, Mapping[str, object]]) -> list[str]:
    """`module.py (AutoClass: module.Class)` for each class the files' `auto_map`s name, in file order."""
    found: list[str] = []
    for name in CODE_FILES:
        auto_map = configs.get(name, {}).get("auto_map")
        if not isinstance(auto_map, Mapping):
            continue
        for auto_class, target in auto_map.items():
            for reference in target if isinstance(target, list) else [target]:
                if isinstance(reference, str) and "." in reference:
                    module = reference.rsplit(".", 1)[0]
                    found.append(f"{module}.py ({auto_class}: {reference})"[:300])
    return list(dict.fromkeys(found))


def _native(model_type: str) -> bool:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    return model_type in CONFIG_MAPPING_NAMES


def _config_files(checkpoint: str, revision: str | None, offline: bool) -> tuple[dict[str, dict[str, object]], str]:
    """The checkpoint's config files that exist (a local folder, else the Hub cache, else, online, the Hub), parsed;
    and why one could not be read ("" when all that exist were)."""
    out: dict[str, dict[str, object]] = {}
    unread = ""
    for name in CODE_FILES:
        try:
            path = checkpoint_file(checkpoint, revision, name, offline)
            if path is None:
                continue
            value = json.loads(contract.read_regular(path, CONFIG_MOST, "a checkpoint's config file"))
        except Exception as err:  # the Hub's errors, a FIFO or a file past its bound, not JSON: said, not fatal here
            unread = unread or f"{name}: {getattr(err, 'strerror', None) or err}"[:300]
            continue
        if isinstance(value, dict):
            out[name] = value
    return out, unread


def checkpoint_file(checkpoint: str, revision: str | None, name: str, offline: bool) -> Path | None:
    """The path of the checkpoint's file `name`: in its local folder, else in the Hub cache, else (not `offline`)
    downloaded; None where it has none (or, offline, none here)."""
    local = contract.expanded(checkpoint)
    if local.is_dir():
        return local / name if (local / name).exists() else None
    from huggingface_hub import constants, try_to_load_from_cache

    cached = try_to_load_from_cache(checkpoint, name, revision=revision)
    if isinstance(cached, str):
        return Path(cached)
    if offline or constants.HF_HUB_OFFLINE or cached is not None:  # not cached, or cached as absent from the repo
        return None
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        return Path(hf_hub_download(checkpoint, name, revision=revision))
    except EntryNotFoundError:
        return None
