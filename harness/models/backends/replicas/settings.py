"""The pool's own `--model_args` (`PoolSettings`), taken out of a backend's before the backend is built, and what each
replica reserves on the cluster."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from harness.models.facts.args import at_least, settings_from_args
from harness.models.registry import backend_spec

IMAGE_ROUTES = ("auto", "read", "ship")


@dataclass(frozen=True)
class PoolSettings:
    data_parallel_size: int = at_least(1, 1)  # replicas of the backend; 1: the backend in this process, no Ray
    # Seconds a replica may go without answering a batch it holds (a hung replica stops the run, naming it).
    replica_timeout: float = 7200.0
    replica_restarts: int = 3  # how often Ray restarts a replica whose process died (its unfinished batches run again)
    # How a replica gets its requests' images: "read" from the build itself (its files at the same path on its node),
    # "ship" as bytes through Ray's object store, "auto": read where every replica sees the build's files, else ship.
    replica_data: str = "auto"

    def __post_init__(self) -> None:
        if self.replica_data not in IMAGE_ROUTES:
            raise ValueError(
                f"--model_args replica_data={self.replica_data!r}: expected one of {', '.join(IMAGE_ROUTES)}"
            )


POOL_ARGS = frozenset(f.name for f in fields(PoolSettings))
ALIASES = {"dp": "data_parallel_size"}  # vLLM's short name, as `tp` is for tensor_parallel_size


def split_pool_args(backend: str, args: Mapping[str, str]) -> tuple[PoolSettings, dict[str, str]]:
    """(the pool's settings, the backend's own arguments) of one `--model_args`."""
    mine = {k: v for k, v in args.items() if ALIASES.get(k, k) in POOL_ARGS}
    rest = {k: v for k, v in args.items() if k not in mine}
    return settings_from_args(PoolSettings, mine, backend, aliases=ALIASES), rest


def replica_resources(backend: str, front: object, cluster_gpus: float) -> dict[str, float]:
    """What one replica reserves (`BackendSpec.replicas`): its GPUs (`tensor_parallel_size * pipeline_parallel_size`
    for vLLM, 1 for hf unless told `device=cpu`), or, on a cluster without GPUs, its CPUs (hf: its `threads`, else 1)."""
    replicas = backend_spec(backend).replicas
    settings: Any = getattr(front, "settings", None)  # the backend's own settings class
    gpus = replicas.gpus(settings)
    if gpus and cluster_gpus:
        return {"num_gpus": float(gpus), "num_cpus": 1.0}
    return {"num_gpus": 0.0, "num_cpus": float(replicas.cpus(settings))}
