"""Starting a pool's replicas (`harness.models.backends.replicas.pool.RayPool`): the room they need checked on the cluster,
each replica made a Ray actor, and the run held until every one has loaded its model and all hold the same one;
a replica that cannot start stops the run with one line naming it (`ReplicaError`)."""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.models.backends.replicas.actor import Build, Replica
from harness.models.backends.replicas.cluster import Cluster
from harness.models.backends.replicas.settings import PoolSettings

START_TIMEOUT = 3600.0  # seconds for every replica to load its model
STATISTICS_TIMEOUT = 30.0
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class ReplicaError(UserError):
    """A replica that could not start, or replicas that do not hold the same model: the run stops before a sample."""

    exit_code = 1


@dataclass
class Slot:
    """The driver's view of one replica."""

    rank: int
    actor: Any
    info: dict[str, Any]
    busy: int = 0  # batches it holds
    since: float = 0.0  # when it last answered, or was given work while holding none
    probe: Any = None  # a `ready` call after its process died: it gets no work until that returns
    probe_since: float = 0.0
    seen: dict[str, object] | None = None  # its process's statistics as of its last answer
    before_restart: list[dict[str, object]] = field(default_factory=list)  # those of each of its processes that died

    @property
    def where(self) -> str:
        return f"replica {self.rank} on {self.info.get('node', '?')}"


def cause_line(err: BaseException) -> str:
    """The last line of a Ray error (the exception a replica raised), without Ray's colours."""
    text = _ANSI.sub("", str(getattr(err, "error_msg", None) or err))
    lines = [line.strip() for line in text.splitlines() if line.strip() and not set(line.strip()) <= set("^~")]
    return lines[-1] if lines else type(err).__name__


def check_room(cluster: Cluster, resources: dict[str, float], size: int, backend: str) -> None:
    """A cluster too small for the replicas stops the run at once (Ray would wait for room for ever)."""
    total = cluster.resources()
    for kind, key in (("GPU", "num_gpus"), ("CPU", "num_cpus")):
        need = resources[key] * size
        if need and total.get(kind, 0.0) < need:
            raise ReplicaError(
                f"data_parallel_size={size} needs {need:g} {kind}s ({resources[key]:g} per "
                f"{backend} replica); the Ray cluster ({cluster.address}) has "
                f"{total.get(kind, 0.0):g}"
            )


def launch(
    cluster: Cluster,
    backend: str,
    args: dict[str, str],
    settings: PoolSettings,
    resources: dict[str, float],
    batch_size: int,
    max_batch_tokens: int | None,
    build: Build | None,
) -> list[Slot]:
    """`settings.data_parallel_size` replicas of `backend`, asked to start (`wait_ready` waits for them)."""
    remote = cluster.ray.remote(Replica).options(
        **resources, max_restarts=settings.replica_restarts, max_task_retries=0, scheduling_strategy="SPREAD"
    )
    actors = [
        remote.remote(rank, backend, replica_args(backend, args, rank), batch_size, max_batch_tokens, build)
        for rank in range(settings.data_parallel_size)
    ]
    return [Slot(rank, actor, {}) for rank, actor in enumerate(actors)]


def replica_args(backend: str, args: dict[str, str], rank: int) -> dict[str, str]:
    """A replica's arguments: the run's, its engine's log a file of its own (`engine_model_replica0.log`)."""
    from harness.models.registry import backend_spec

    log = backend_spec(backend).engine_log_arg
    if log is None or log not in args:
        return args
    path = Path(args[log])
    return {**args, log: str(path.with_name(f"{path.stem}_replica{rank}{path.suffix}"))}


def wait_ready(cluster: Cluster, slots: list[Slot], backend: str, driver: dict[str, object] | None = None) -> None:
    """Every replica started, each slot holding what its replica said of itself; a `ReplicaError` when one does not
    start within `START_TIMEOUT`, cannot start, or holds another model than the driver's (`driver`: its identity,
    which the run's journals hold), or than replica 0 where the driver holds none."""
    ray, size = cluster.ray, len(slots)
    waiting = {slot.actor.ready.remote(): slot for slot in slots}
    deadline = time.monotonic() + START_TIMEOUT
    while waiting:
        done, _ = ray.wait(list(waiting), num_returns=1, timeout=max(0.0, deadline - time.monotonic()))
        if not done:
            slot = next(iter(waiting.values()))
            raise ReplicaError(f"{backend} replica {slot.rank} of {size} did not start within {START_TIMEOUT:g} s")
        slot = waiting.pop(done[0])
        try:
            slot.info = ray.get(done[0])
        except Exception as err:
            # On a cluster this run did not start, which one (`--ray auto` joins whatever Ray runs here).
            where = "" if cluster.owned else f" on the Ray cluster at {cluster.address} (not started by this run)"
            raise ReplicaError(
                f"{backend} replica {slot.rank} of {size} could not start{where}: {cause_line(err)}"
            ) from None
    first = slots[0].info["identity"] if driver is None else driver
    than = f"replica 0 on {slots[0].info['node']}" if driver is None else "this run's driver"
    for slot in slots[1:] if driver is None else slots:
        if slot.info["identity"] != first:
            differ = sorted(
                k for k in set(first) | set(slot.info["identity"]) if first.get(k) != slot.info["identity"].get(k)
            )
            raise ReplicaError(
                f"{backend} {slot.where} holds another model than {than} ({', '.join(differ)} differ): every node "
                "must see the same checkpoint and versions"
            )
    placed = ", ".join(
        f"{s.rank}@{s.info['node']}" + (f" GPU {','.join(s.info['gpus'])}" if s.info["gpus"] else "") for s in slots
    )
    print(f"harness: {size} {backend} replicas ready on Ray ({cluster.address}): {placed}", file=sys.stderr, flush=True)


def replica_statistics(cluster: Cluster, slots: list[Slot]) -> list[dict[str, object]]:
    """Each replica's statistics at the end of the run, asked of it, with those of each of its processes that died
    before Ray restarted it (`before_restart`, as of their last answer)."""
    per_replica = []
    for slot in slots:
        if slot.busy or slot.probe is not None:  # the run stopped while it held a batch, or restarted
            stats: dict[str, object] = {"unavailable": "holding a batch or restarting when the run ended"}
        else:
            try:
                stats = cluster.ray.get(slot.actor.statistics.remote(), timeout=STATISTICS_TIMEOUT)
            except Exception as err:  # a dead replica: the run's record says so
                stats = {"unavailable": cause_line(err)}
        per_replica.append({**stats, "before_restart": slot.before_restart} if slot.before_restart else stats)
    return per_replica
