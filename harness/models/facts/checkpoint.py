"""A checkpoint, before anything loads it. Whether a backend can have it: a local folder, the Hub cache, or (online)
one quick question to the Hub. A checkpoint it cannot have is one line in seconds naming it and saying what to do
(`hf download ID`, or the config and processor alone for `--screen_only`), where `from_pretrained` would retry
for most of a minute and end with an error that does not name the checkpoint. And, before a loader reads a byte of
it, that its folder holds no FIFO, socket or device under a file's name (`check_checkpoint_files`).

What its own files say of it (`read_checkpoint`), read without transformers: its `config.json`'s `model_type` and
`architectures` (its family, `harness.models.families.checkpoint_family`) and its chat template (whether it thinks,
`harness.models.facts.reasoning.template_thinking`). Read offline, from a local folder or the local Hub cache, as
`remote_code` reads the same files: a checkpoint not on this machine has none, and the callers say so rather than
guess from its name. The template is the one transformers gives the checkpoint's processor, else its tokenizer:
`chat_template.jinja` (transformers 5 saves both's there), else a processor's `chat_template.json` or
`processor_config.json`, else the tokenizer's `tokenizer_config.json` (a list of named templates: the one named
`default`).
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from builders.core import contract
from harness.errors import UserError, did_you_mean_path, first_line
from harness.models.facts.reasoning import ReasoningTags, declared_thinking
from harness.models.facts.remote_code import CONFIG_MOST, checkpoint_file

if TYPE_CHECKING:
    from transformers import PreTrainedConfig

REPO_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?$")
PROBE_TIMEOUT_S = 10


class CheckpointUnavailable(ValueError):
    """The checkpoint cannot be had here; the message says why and what to do."""


def checkpoint_folder(pretrained: str, revision: str | None = None) -> Path | None:
    """The checkpoint's folder here: `pretrained` as a local folder, or its snapshot in the local Hub cache, where its
    config is (nothing is downloaded); None where it is neither; a `ValueError` for a path the system cannot take."""
    local = contract.expanded(pretrained)
    if local.is_dir():
        return local
    if not hub_model_id(pretrained):
        return None
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(pretrained, "config.json", revision=revision)
    return Path(cached).parent if isinstance(cached, str) else None


def hub_model_id(pretrained: str) -> bool:
    """Whether `pretrained` can name a Hub model (`ORG/NAME` or `NAME`, as the Hub spells them): never a path such as
    `./tiny-llava` or `../models/x`, which the Hub's client refuses with a message about repo ids."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if not REPO_ID.match(pretrained):
        return False
    try:
        validate_repo_id(pretrained)
    except HFValidationError:
        return False
    return True


def screen_download(pretrained: str) -> str:
    """The command that fetches what `--screen_only` counts with: a checkpoint's config and processor, no weights."""
    return f'hf download {pretrained} --exclude "*.safetensors" --exclude "*.bin"'


def require_checkpoint(pretrained: str, revision: str | None = None) -> None:
    """Return when `pretrained` is a local folder, is in the Hub cache, or the Hub says it exists; else raise
    `CheckpointUnavailable` with one line."""
    from huggingface_hub import constants

    try:
        if checkpoint_folder(pretrained, revision):
            return
        # a typo of the checkpoint folder beside (`tiny-lava` for `tiny-llava`): that name, before the Hub is asked
        near = did_you_mean_path(contract.expanded(pretrained), lambda folder: (folder / "config.json").is_file())
    except ValueError as err:  # a path the system cannot take (`contract.expanded`)
        raise CheckpointUnavailable(f"checkpoint {pretrained}: {err}") from None
    if near:
        raise CheckpointUnavailable(f"checkpoint {pretrained}: no such folder{near}")
    if not hub_model_id(pretrained):
        raise CheckpointUnavailable(f"checkpoint {pretrained}: no such folder, and not a Hub model id (ORG/NAME)")
    at = f"@{revision}" if revision else ""
    fetch = (
        f"download it once with `hf download {pretrained}{' --revision ' + revision if revision else ''}`; "
        f"--screen_only needs only its config and processor: `{screen_download(pretrained)}`"
    )
    if constants.HF_HUB_OFFLINE:
        raise CheckpointUnavailable(
            f"checkpoint {pretrained}{at} is not in the Hub cache ({constants.HF_HUB_CACHE}) and "
            f"HF_HUB_OFFLINE=1 forbids downloading it: {fetch}"
        )
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    try:
        HfApi().model_info(pretrained, revision=revision, timeout=PROBE_TIMEOUT_S)
    except GatedRepoError:
        raise CheckpointUnavailable(
            f"checkpoint {pretrained} is gated: accept its terms on the Hub, then log in "
            "(`hf auth login`) or set HF_TOKEN"
        ) from None
    except RevisionNotFoundError:
        raise CheckpointUnavailable(f"checkpoint {pretrained} has no revision {revision!r}") from None
    except RepositoryNotFoundError:
        raise CheckpointUnavailable(
            f"checkpoint {pretrained}: no such model on the Hub (or it is private: `hf auth login`)"
        ) from None
    except Exception as err:  # no network: httpx's and the OS's errors have no common base worth naming
        raise CheckpointUnavailable(
            f"checkpoint {pretrained}{at} is not in the Hub cache and the Hub cannot be reached "
            f"({type(err).__name__}): {fetch} where there is network"
        ) from None


CHECKPOINT_ENTRIES_MOST = 100_000  # a checkpoint folder holds some tens of files (weights sharded in hundreds at most)


def check_checkpoint_files(pretrained: str, revision: str | None = None, *, weights: bool = True) -> None:
    """Before transformers or vLLM reads a byte of the checkpoint: every entry of its folder (a local folder, or its
    snapshot in the Hub cache) is a regular file or a folder once its links are followed; a FIFO, a socket or a
    device planted under a file's name (which a loader's blocking `open` would wait on, or which transformers takes
    for a missing file and loads the checkpoint without, saying nothing) is a `CheckpointUnavailable` naming it, and
    where the weights are to be loaded (`weights`) so is a safetensors file cut short. A checkpoint that is no folder
    here yet (to be downloaded) has none."""
    try:
        folder = checkpoint_folder(pretrained, revision)
    except ValueError:  # a path the system cannot take: no folder here
        return
    if folder is None:
        return
    seen = 0
    for root, folders, files in os.walk(folder, followlinks=False):
        for name in files + [f for f in folders if os.path.islink(os.path.join(root, f))]:
            seen += 1
            if seen > CHECKPOINT_ENTRIES_MOST:
                raise CheckpointUnavailable(
                    f"checkpoint {pretrained}: more than {CHECKPOINT_ENTRIES_MOST:,} files in {folder}; not a checkpoint"
                )
            path = os.path.join(root, name)
            try:
                mode = os.stat(path).st_mode  # follows a link (a Hub snapshot's files are links to blobs)
            except OSError:
                continue  # a link to nothing: transformers says so if it needs the file
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise CheckpointUnavailable(
                    f"checkpoint {pretrained}: {path} is {contract.kind_of_mode(mode)}, not a regular "
                    "file: the model's loader would wait on it, read without end, or take it for missing; remove it"
                )
            if weights and stat.S_ISREG(mode) and name.endswith(".safetensors"):
                whole_safetensors(pretrained, path)


def whole_safetensors(pretrained: str, path: str) -> None:
    """A safetensors file's header read and its tensors' extent checked against the file's size (safetensors' own
    check, on a memory map: no tensor is read); a file cut short is a `CheckpointUnavailable` naming it."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(path, framework="numpy"):
            pass
    except SafetensorError as err:
        raise CheckpointUnavailable(
            f"checkpoint {pretrained}: {path} is not a whole safetensors file ({err}): download it again"
        ) from None


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
    except (json.JSONDecodeError, RecursionError):  # not JSON, or nested past the parser: as absent
        return {}
    return value if isinstance(value, dict) else {}


def config_transformers_lacks(pretrained: str, revision: str | None) -> PreTrainedConfig | None:
    """The checkpoint's `config.json` on this machine as a plain config, where its `model_type` is one transformers
    does not implement: its processor may still load (its class named by its own files), and counts then as any
    checkpoint's. None where the config is not here or its model type is transformers' own (its error stands)."""
    from transformers import PreTrainedConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    own = config_json(pretrained, revision)
    if not own or own.get("model_type") in CONFIG_MAPPING_NAMES:
        return None
    return PreTrainedConfig.from_dict(own)


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


def checkpoint_thinking(name: str, revision: str | None = None) -> ReasoningTags | None:
    """The thinking markers the checkpoint's `response_template` declares (its `tokenizer_config.json`, as
    transformers saves it), or None (`harness.models.facts.reasoning.declared_thinking`); past its bound on tag pairs, a
    `UserError` naming the file."""
    try:
        return declared_thinking(config_json(name, revision, "tokenizer_config.json").get("response_template"))
    except ValueError as err:  # past the bound on tag pairs
        raise UserError(f"checkpoint {name}: tokenizer_config.json: {err}") from None


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


def missing_timm(pretrained: str, revision: str | None = None) -> str:
    """Where the checkpoint's config.json holds a sub-config that transformers' `AutoModel` builds as a timm model
    (`TimmWrapperModel`, `TimmBackbone`: Gemma 3n's `gemma3n_vision`, a MobileNetV5) and timm is not installed, why
    the weights cannot load, in one line; else "". Said before the processor or the weights are read: the loader would
    stop on the first file missing and name that, not the package."""
    import importlib.util

    config = config_json(pretrained, revision)
    if not config or importlib.util.find_spec("timm") is not None:
        return ""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    towers = {
        key: f"{value['model_type']} ({MODEL_MAPPING_NAMES[value['model_type']]})"
        for key, value in config.items()
        if isinstance(value, dict) and str(MODEL_MAPPING_NAMES.get(str(value.get("model_type")), "")).startswith("Timm")
    }
    if not towers:
        return ""
    built = ", ".join(f"its {key} {kind}" for key, kind in towers.items())
    return f"checkpoint {pretrained}: {built} is built with timm, which is not installed here: pip install timm"


def load_failure(pretrained: str, err: BaseException, *, offline: bool) -> str:
    """Why `ProcessorCount.load` failed, in one line: a checkpoint that is not on this machine, offline, said so with
    the command that fetches what counting needs (transformers' own words about the Hub say less); else the
    exception's first line, cut at 200 characters."""
    if offline and not checkpoint_folder(pretrained):
        return (
            f"{pretrained}'s config and processor are not on this machine (no such folder, nor in the local Hub "
            f"cache): `{screen_download(pretrained)}` fetches them"
        )
    text = first_line(err).rstrip(".")
    text = text if len(text) <= 200 else text[:197] + "..."
    where = "offline (from a local folder or the local Hub cache)" if offline else "from the Hub"
    return f"the processor and config of {pretrained} could not be loaded {where}: {type(err).__name__}: {text}"
