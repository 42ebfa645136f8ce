"""Joining a Ray cluster for a run's replicas: a local one started here, `auto` (one started with `ray start`) or an
address; Ray is imported only here, and only when a run asks for replicas."""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from harness.errors import UserError

INSTALL = "pip install -e '.[ray]' (or pip install 'ray[default]')"
LOCAL = "local"  # `--ray` without an address: a Ray instance of this run's own, on this machine
AUTO = "auto"  # the cluster `ray start` runs on this machine
CONNECT_TIMEOUT = (
    10.0  # seconds for a cluster's address to answer before Ray is asked to join it (Ray retries for ever)
)
_LABEL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")  # `_`: container names (compose) resolve
FORMS = "expected auto, HOST:PORT of a cluster's head (ray start --head) or ray://HOST:PORT"


def address_problem(address: str) -> str | None:
    """Why `address` (of `--ray` or $RAY_ADDRESS) cannot name a Ray cluster, or None; read without importing Ray."""
    if address in (LOCAL, AUTO):
        return None
    rest = address[len("ray://") :] if address.startswith("ray://") else address
    if "://" in rest or "/" in rest.rstrip("/") or not rest.strip():
        return FORMS
    try:
        parts = urlsplit("//" + rest.rstrip("/"))
        port = parts.port
    except ValueError:
        return f"the port must be a number from 1 to 65535 ({FORMS})"
    if not parts.hostname:
        return f"no host ({FORMS})"
    if not _is_host(parts.hostname):
        return f"{parts.hostname[:60]!r} is not a host name or an IP address ({FORMS})"
    if port is None and not address.startswith("ray://"):  # Ray Client's port has a default (10001), the head's not
        return f"no port ({FORMS})"
    if port == 0:
        return f"the port must be a number from 1 to 65535 ({FORMS})"
    return None


def _is_host(host: str) -> bool:
    """A DNS name (labels of letters, digits and inner hyphens) or an IP address, as a socket can be asked for."""
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return len(host) <= 253 and all(_LABEL.fullmatch(label) for label in host.removesuffix(".").split("."))


def no_cluster_at(address: str) -> str | None:
    """Why nothing answers as a Ray cluster at `address` (HOST:PORT or ray://HOST:PORT) within `CONNECT_TIMEOUT`, or
    None: a host that does not resolve, a refused or silent port, a listener that does not speak gRPC (Ray's own
    join would retry each of these for minutes, printing warnings and no line of ours)."""
    import socket

    import grpc  # type: ignore[import-untyped]  # Ray's dependency: its head and client server speak gRPC

    parts = urlsplit("//" + address.removeprefix("ray://").rstrip("/"))
    host, port = parts.hostname or "", parts.port or 10001
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT):
            pass
    except (socket.gaierror, UnicodeError) as err:  # UnicodeError: a name the IDNA codec refuses
        return f"the host {host[:60]!r} does not resolve ({getattr(err, 'strerror', None) or err})"
    except TimeoutError:
        return f"nothing answered at {host}:{port} within {CONNECT_TIMEOUT:g} s"
    except OSError as err:
        return f"nothing answers at {host}:{port} ({err.strerror or err})"
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    channel = grpc.insecure_channel(target)
    try:
        grpc.channel_ready_future(channel).result(timeout=CONNECT_TIMEOUT)
    except grpc.FutureTimeoutError:
        return f"{host}:{port} answers, but not as a Ray cluster (no gRPC server there within {CONNECT_TIMEOUT:g} s)"
    finally:
        channel.close()
    return None


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UserError(f"data_parallel_size > 1 runs its replicas on Ray, which is not installed: {INSTALL}") from None
    return ray


@dataclass
class Cluster:
    """The Ray cluster a pool runs on; `owned` when this run started it (it is shut down with the pool)."""

    ray: Any
    owned: bool
    address: str
    nodes: list[str] = field(default_factory=list)

    def resources(self) -> dict[str, float]:
        return dict(self.ray.cluster_resources())

    def summary(self) -> str:
        """`the Ray cluster at ADDRESS (N nodes: ...; C CPUs, G GPUs), not started by this run`."""
        total = self.resources()
        nodes = f"{len(self.nodes)} node{'s' if len(self.nodes) != 1 else ''}: {', '.join(self.nodes[:4])}"
        nodes += ", ..." if len(self.nodes) > 4 else ""
        room = f"{total.get('CPU', 0.0):g} CPUs, {total.get('GPU', 0.0):g} GPUs"
        started = "started by this run" if self.owned else "not started by this run"
        return f"the Ray cluster at {self.address} ({nodes}; {room}), {started}"

    def describe(self) -> dict[str, Any]:
        return {"address": self.address, "started_by_run": self.owned, "nodes": self.nodes}

    def close(self) -> None:
        if self.owned and self.ray.is_initialized():
            self.ray.shutdown()


def connect(address: str | None, cpus_needed: float) -> Cluster:
    """Join the cluster at `address` (`auto`: the one `ray start` runs on this machine), or start a local one (None or
    `local`; None follows $RAY_ADDRESS where it is set). A process already connected (a notebook, a test) keeps its
    connection, and its cluster is not shut down after the run."""
    ray = import_ray()
    if ray.is_initialized():
        return Cluster(ray, owned=False, address=_address(ray), nodes=_nodes(ray))
    # The replicas' own output (model loading, vLLM's engine) only with --verbosity INFO or DEBUG: a replica's failure
    # reaches the run as one line naming it (`pool`).
    options: dict[str, Any] = {
        "include_dashboard": False,
        "logging_level": logging.ERROR,
        "namespace": "mmlongeval",
        "log_to_driver": logging.getLogger().getEffectiveLevel() <= logging.INFO,
    }
    local = address == LOCAL or (address is None and not os.environ.get("RAY_ADDRESS"))
    where = f"--ray {address}" if address else f"RAY_ADDRESS={os.environ.get('RAY_ADDRESS')}"
    given = address or os.environ.get("RAY_ADDRESS", "")
    if not local:
        problem = address_problem(given) or (None if given == AUTO else no_cluster_at(given))
        if problem:
            raise UserError(f"{where}: cannot join a Ray cluster: {problem}")
    try:
        if local:
            # Logical CPUs: as many as the replicas reserve, where this machine has fewer cores (they then share them).
            ray.init(address="local", num_cpus=max(os.cpu_count() or 1, int(cpus_needed + 0.999)), **options)
        else:
            ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError) as err:
        reason = (str(err).splitlines() or [type(err).__name__])[0].strip("'\" ")
        if given == AUTO and isinstance(err, ConnectionError):  # Ray's own words name its flags, not ours
            reason = "no Ray cluster runs on this machine (`ray start --head` starts one; --ray without an address starts one for this run)"
        raise UserError(f"{where}: cannot join the Ray cluster: {reason}") from None
    cluster = Cluster(ray, owned=local, address=LOCAL if local else _address(ray), nodes=_nodes(ray))
    if not local:  # a cluster this run did not start (with `auto`, whichever Ray found here): say which
        print(f"harness: {where}: joined {cluster.summary()}", file=sys.stderr, flush=True)
    return cluster


def _address(ray: Any) -> str:
    try:
        return str(ray.get_runtime_context().gcs_address)
    except Exception:  # an older Ray without it: the address is only recorded
        return "unknown"


def _nodes(ray: Any) -> list[str]:
    return sorted(str(node.get("NodeManagerAddress")) for node in ray.nodes() if node.get("Alive"))
