"""Whether a backend can have its checkpoint, asked before it loads one: a local folder, the Hub cache, or (online)
one quick question to the Hub. A checkpoint it cannot have is one line in seconds naming it and saying what to do
(`hf download ID`, or the config and processor alone for `--screen_only`), where `from_pretrained` would retry
for most of a minute and end with an error that does not name the checkpoint.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?$")
PROBE_TIMEOUT_S = 10


class CheckpointUnavailable(ValueError):
    """The checkpoint cannot be had here; the message says why and what to do."""


def on_this_machine(pretrained: str, revision: str | None = None) -> bool:
    """Whether `pretrained` is a local folder or its config is in the local Hub cache (nothing is downloaded)."""
    from huggingface_hub import try_to_load_from_cache

    if Path(pretrained).expanduser().is_dir():
        return True
    return bool(REPO_ID.match(pretrained)) and isinstance(
        try_to_load_from_cache(pretrained, "config.json", revision=revision), str
    )


def screen_download(pretrained: str) -> str:
    """The command that fetches what `--screen_only` counts with: a checkpoint's config and processor, no weights."""
    return f'hf download {pretrained} --exclude "*.safetensors" --exclude "*.bin"'


def require_checkpoint(pretrained: str, revision: str | None = None) -> None:
    """Return when `pretrained` is a local folder, is in the Hub cache, or the Hub says it exists; else raise
    `CheckpointUnavailable` with one line."""
    from huggingface_hub import constants

    if on_this_machine(pretrained, revision):
        return
    if not REPO_ID.match(pretrained):
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
