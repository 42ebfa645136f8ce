"""What a failure to talk to the Hub means, in one line a user can act on: the source, the revision, what failed,
why, and what to do.

    except HUB_FAILURES as exc:
        raise hub_failure("ZhaoweiWang/MMLongBench", "main", exc, "listing the repo") from None

`huggingface_hub` raises its own errors for what the Hub answers (a gated or private repo, no such revision or
file, any other HTTP status) and lets its HTTP client's (`httpx2`) through for what never got an answer: no route,
a name that does not resolve, a proxy that refuses, a timeout, a connection closed before the whole file came; a
download cut short that no retry could finish is an `OSError` ("Consistency check failed"). A failure it met
before looking in the Hub cache (`LocalEntryNotFoundError`) carries the first as its context: that one is named.
"""

from __future__ import annotations

import os

import httpx2
from huggingface_hub import constants
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from builders.core.errors import BuildError

# Everything a call to the Hub raises that is the network's or the Hub's doing, not a bug of ours.
HUB_FAILURES: tuple[type[BaseException], ...] = (HfHubHTTPError, LocalEntryNotFoundError, httpx2.HTTPError, OSError)
# The Hub answered, and what it said holds whatever the cache holds: no fallback to the cache.
HUB_ANSWERS = (GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError, RemoteEntryNotFoundError)
# What a resolver says when a name does not resolve (getaddrinfo's EAI_NONAME, EAI_AGAIN, EAI_NODATA).
_UNRESOLVED = ("Name or service not known", "Temporary failure in name resolution", "nodename nor servname")
_DNS_ERRNOS = (-2, -3, -5)

NO_NETWORK = (
    "connect to the network (or point HF_ENDPOINT at a mirror) and run it again; a release downloaded once builds "
    "offline with HF_HUB_OFFLINE=1"
)


def hub_failure(repo: str, revision: str, exc: BaseException, doing: str) -> BuildError:
    """The `BuildError` for `exc`, raised while `doing` (e.g. "downloading 2_vh_image.tar.gz") with `repo` at
    `revision`."""
    reason, todo = explain(root_cause(exc), repo, revision)
    return BuildError(f"hf://{repo}@{revision}: {doing} failed: {reason}; {todo}")


def is_network_failure(exc: BaseException) -> bool:
    """Whether the Hub was not heard from (no route, DNS, proxy, timeout) or could not serve (5xx, 429): then a
    copy in the Hub cache may stand in."""
    cause = root_cause(exc)
    if isinstance(cause, HUB_ANSWERS):
        return False
    status = _status(cause)
    return status is None or status >= 500 or status == 429


def explain(exc: BaseException, repo: str, revision: str) -> tuple[str, str]:
    """(why, what to do) for one failure."""
    status = _status(exc)
    if isinstance(exc, GatedRepoError):
        return (
            f"the repo is gated (HTTP {status})",
            "accept its terms on the Hub, then log in (`hf auth login`) or set HF_TOKEN",
        )
    if isinstance(exc, RevisionNotFoundError):
        return f"the repo has no revision {revision!r} (HTTP {status})", "name a tag, branch or commit it has"
    if isinstance(exc, RemoteEntryNotFoundError):
        return (
            f"the file is not in the repo at this revision (HTTP {status})",
            "name a revision that has it (hf://ORG/NAME@REVISION), or download it and pass --source DIR",
        )
    if isinstance(exc, RepositoryNotFoundError):
        return (
            f"no such dataset repo, or it is private (HTTP {status})",
            f"check the name {repo!r}, or log in (`hf auth login`) or set HF_TOKEN with access to it",
        )
    if isinstance(exc, httpx2.ProxyError) or status == 407:
        return (
            f"the proxy refused the connection ({_first_line(exc)})",
            f"check the proxy settings (HTTPS_PROXY, HTTP_PROXY, NO_PROXY: {_proxies()}) and run it again",
        )
    if status in (401, 403):
        return (
            f"the Hub refused access (HTTP {status})",
            "log in (`hf auth login`) or set HF_TOKEN with access to the repo; if a proxy or firewall answers for "
            "the Hub, check it",
        )
    if status is not None and (status >= 500 or status == 429):
        return f"the Hub could not serve it (HTTP {status})", "run it again later: a download resumes where it stopped"
    if status is not None:
        return f"the Hub answered HTTP {status} ({_first_line(exc)})", NO_NETWORK
    if isinstance(exc, httpx2.TimeoutException):
        return (
            f"the Hub did not answer in time ({type(exc).__name__})",
            "run it again (a download resumes where it stopped); on a slow link raise HF_HUB_ETAG_TIMEOUT and "
            f"HF_HUB_DOWNLOAD_TIMEOUT (now {constants.HF_HUB_ETAG_TIMEOUT} s and {constants.HF_HUB_DOWNLOAD_TIMEOUT} s)",
        )
    if isinstance(exc, httpx2.RemoteProtocolError) or "Consistency check failed" in str(exc):
        return (
            "the download was cut short (the connection closed before the whole file came)",
            "run it again: the download resumes where it stopped",
        )
    todo = NO_NETWORK if not _proxies_set() else f"check the proxy settings ({_proxies()}); or {NO_NETWORK}"
    if isinstance(exc, httpx2.ConnectError) and _unresolved(exc):
        return f"the Hub's address ({constants.ENDPOINT}) does not resolve: no network, or no DNS", todo
    if isinstance(exc, httpx2.TransportError):
        return f"the Hub ({constants.ENDPOINT}) cannot be reached ({_first_line(exc)})", todo
    return f"{type(exc).__name__}: {_first_line(exc)}", NO_NETWORK


def root_cause(exc: BaseException) -> BaseException:
    """The failure behind `huggingface_hub`'s "not in the cache, and the Hub could not be asked"."""
    seen = 0
    while isinstance(exc, LocalEntryNotFoundError) and seen < 5:
        inner = exc.__cause__ or exc.__context__
        if inner is None:
            break
        exc, seen = inner, seen + 1
    return exc


def _status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _unresolved(exc: BaseException) -> bool:
    chain: BaseException | None = exc
    for _ in range(5):
        if chain is None:
            break
        if isinstance(chain, OSError) and chain.errno in _DNS_ERRNOS:
            return True
        if any(text in str(chain) for text in _UNRESOLVED):
            return True
        chain = chain.__cause__ or chain.__context__
    return False


_PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")


def _proxies_set() -> bool:
    return any(os.environ.get(name) for name in _PROXY_VARIABLES)


def _proxies() -> str:
    """Which proxy variables are set (never their values, which may carry a password)."""
    named = [name for name in (*_PROXY_VARIABLES, "NO_PROXY", "no_proxy") if os.environ.get(name)]
    return ", ".join(f"{name} is set" for name in named) or "none is set"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]
