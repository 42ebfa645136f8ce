"""Joining a Ray cluster for a run's replicas: a local one started here, `auto` (one started with `ray start`) or an
address; Ray is imported only here, and only when a run asks for replicas."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any

from harness.errors import UserError

INSTALL = "pip install -e '.[ray]' (or pip install 'ray[default]')"
LOCAL = "local"  # `--ray` without an address: a Ray instance of this run's own, on this machine


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
    try:
        if local:
            # Logical CPUs: as many as the replicas reserve, where this machine has fewer cores (they then share them).
            ray.init(address="local", num_cpus=max(os.cpu_count() or 1, int(cpus_needed + 0.999)), **options)
        else:
            ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError) as err:
        where = f"--ray {address}" if address else f"RAY_ADDRESS={os.environ.get('RAY_ADDRESS')}"
        reason = (str(err).splitlines() or [type(err).__name__])[0].strip("'\" ")
        raise UserError(f"{where}: cannot join the Ray cluster: {reason}") from None
    return Cluster(ray, owned=local, address=LOCAL if local else _address(ray), nodes=_nodes(ray))


def _address(ray: Any) -> str:
    try:
        return str(ray.get_runtime_context().gcs_address)
    except Exception:  # an older Ray without it: the address is only recorded
        return "unknown"


def _nodes(ray: Any) -> list[str]:
    return sorted(str(node.get("NodeManagerAddress")) for node in ray.nodes() if node.get("Alive"))
