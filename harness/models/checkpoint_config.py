"""What a checkpoint's own files say of it, read before anything loads it and without transformers: its
`config.json`'s `model_type` and `architectures` (its family, `harness.models.families.checkpoint_family`) and its
chat template (whether it thinks, `harness.models.reasoning.template_thinking`). Read offline, from a local folder or
the local Hub cache, as `remote_code` reads the same files: a checkpoint not on this machine has none, and the
callers say so rather than guess from its name.

The template is the one transformers gives the checkpoint's processor, else its tokenizer: `chat_template.jinja`
(transformers 5 saves both's there), else a processor's `chat_template.json` or `processor_config.json`, else the
tokenizer's `tokenizer_config.json` (a list of named templates: the one named `default`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from builders.core import contract
from harness.models.remote_code import CONFIG_MOST, checkpoint_file

TEMPLATE_FILES = ("chat_template.json", "processor_config.json", "tokenizer_config.json")  # after chat_template.jinja


@dataclass(frozen=True)
class CheckpointConfig:
    """A checkpoint's config and chat template as its files hold them (`read_checkpoint`)."""

    name: str
    model_type: str | None
    architectures: tuple[str, ...]
    chat_template: str | None = field(default=None, repr=False)

    @property
    def names(self) -> str:
        """How its config names it, as a message quotes it."""
        archs = f", architectures {', '.join(self.architectures)}" if self.architectures else ""
        return f"model_type {self.model_type or '(none)'}{archs}"


def _read(name: str, revision: str | None, filename: str) -> str | None:
    try:
        path = checkpoint_file(name, revision, filename, offline=True)
        if path is None or not path.is_file():
            return None
        return contract.read_regular(path, CONFIG_MOST, "a checkpoint's config file").decode("utf-8")
    except (OSError, ValueError):  # unreadable, past its bound, not UTF-8: as absent (the loader says why)
        return None


def config_json(name: str, revision: str | None, filename: str = "config.json") -> dict[str, object]:
    """A config file of the checkpoint on this machine as the JSON object it holds; empty where it has none here."""
    text = _read(name, revision, filename)
    try:
        value = json.loads(text) if text is not None else None
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def own_template(value: object) -> str | None:
    """A config file's `chat_template`: the string, or of a list of named ones, the one named `default`."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        named = {t.get("name"): t.get("template") for t in value if isinstance(t, dict)}
        default = named.get("default")
        return default if isinstance(default, str) else None
    return None


def checkpoint_template(name: str, revision: str | None = None) -> str | None:
    """The checkpoint's own chat template as its files on this machine hold it, or None (see the module docstring)."""
    found = _read(name, revision, "chat_template.jinja")
    for filename in TEMPLATE_FILES:
        found = found or own_template(config_json(name, revision, filename).get("chat_template"))
    return found


def read_checkpoint(name: str, revision: str | None = None) -> CheckpointConfig | None:
    """The checkpoint's config and template from its files on this machine; None where its `config.json` is not
    here (or cannot be read as a JSON object)."""
    config = config_json(name, revision, "config.json")
    if not config:
        return None
    model_type = config.get("model_type")
    architectures = config.get("architectures")
    return CheckpointConfig(
        name,
        model_type if isinstance(model_type, str) else None,
        tuple(a for a in architectures if isinstance(a, str)) if isinstance(architectures, list) else (),
        checkpoint_template(name, revision),
    )
