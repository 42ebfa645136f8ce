"""Whether a backend can have its checkpoint, asked before it loads one: a local folder, the Hub cache, or (online)
one quick question to the Hub. A checkpoint it cannot have is one line in seconds naming it and saying what to do
(`hf download ID`, or the config and processor alone for `--screen_only`), where `from_pretrained` would retry
for most of a minute and end with an error that does not name the checkpoint. And, before a loader reads a byte of
it, that its folder holds no FIFO, socket or device under a file's name (`check_checkpoint_files`).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from builders.core import contract

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
    if not REPO_ID.match(pretrained):
        return None
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(pretrained, "config.json", revision=revision)
    return Path(cached).parent if isinstance(cached, str) else None


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
    except ValueError as err:  # a path the system cannot take (`contract.expanded`)
        raise CheckpointUnavailable(f"checkpoint {pretrained}: {err}") from None
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


CHECKPOINT_ENTRIES_MOST = 100_000  # a checkpoint folder holds some tens of files (weights sharded in hundreds at most)


def check_checkpoint_files(pretrained: str, revision: str | None = None) -> None:
    """Before transformers or vLLM reads a byte of the checkpoint: every entry of its folder (a local folder, or its
    snapshot in the Hub cache) is a regular file or a folder once its links are followed; a FIFO, a socket or a
    device planted under a file's name (which a loader's blocking `open` would wait on, or which transformers takes
    for a missing file and loads the checkpoint without, saying nothing) is a `CheckpointUnavailable` naming it. A
    checkpoint that is no folder here yet (to be downloaded) has none."""
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
