"""Data parallelism: `size` engine replicas in spawned worker processes, each on its own GPUs, a chunk
split between them by cost. vLLM's own `LLM(data_parallel_size>1)` refuses single-process use."""

from __future__ import annotations

import atexit
import multiprocessing
import os
import time
import traceback
from collections.abc import Sequence
from typing import Any

from harness.api import BackendFatalError
from harness.models.vllm_engine.engines import LocalEngine


def replica_devices(rank: int, per_replica: int, visible: str | None) -> str:
    """CUDA_VISIBLE_DEVICES for data-parallel replica `rank` (its own consecutive GPUs)."""
    devices = [d.strip() for d in visible.split(",") if d.strip()] if visible else None
    if devices is None:
        return ",".join(str(d) for d in range(rank * per_replica, (rank + 1) * per_replica))
    mine = devices[rank * per_replica : (rank + 1) * per_replica]
    if len(mine) != per_replica:
        raise ValueError(f"vllm backend: replica {rank} needs {per_replica} GPU(s) but CUDA_VISIBLE_DEVICES={visible!r} "
                         f"has only {len(devices)}")
    return ",".join(mine)


def split_balanced(costs: Sequence[int], parts: int) -> list[list[int]]:
    """Indices split into `parts` lists of similar total cost (longest first to the least loaded)."""
    loads = [0] * parts
    out: list[list[int]] = [[] for _ in range(parts)]
    for i in sorted(range(len(costs)), key=lambda i: -costs[i]):
        target = min(range(parts), key=lambda p: (loads[p], p))
        out[target].append(i)
        loads[target] += costs[i]
    return [sorted(p) for p in out]


def _replica_main(conn, devices: str | None, kwargs: dict[str, Any], factories: dict[str, Any]) -> None:
    if devices is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = devices
    try:
        engine = LocalEngine(kwargs, **factories)
    except BaseException:
        conn.send(("failed", traceback.format_exc()))
        return
    conn.send(("ready", engine.max_model_len))
    while True:
        try:
            message = conn.recv()
        except EOFError:
            break
        if message[0] == "stop":
            break
        try:
            conn.send(("done", engine.run(message[1], message[2])))
        except BaseException:
            conn.send(("failed", traceback.format_exc()))
            break
    engine.close()


class ReplicaPool:
    """`size` engine replicas in spawned worker processes; a chunk is split between them by cost.

    A replica that dies or stays silent past `timeout` stops the run with a clear error (vLLM data
    parallelism is known to hang, lm-eval #1734/#2904): finished chunks are already saved.
    """

    def __init__(self, size: int, kwargs: dict[str, Any], *, gpus_per_replica: int, timeout: float,
                 startup_timeout: float = 3600.0, factories: dict[str, Any] | None = None,
                 pin_devices: bool = True) -> None:
        context = multiprocessing.get_context("spawn")
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        self.timeout = timeout
        self.broken: str | None = None
        self.workers = []
        for rank in range(size):
            devices = replica_devices(rank, gpus_per_replica, visible) if pin_devices else None
            parent, child = context.Pipe()
            # Not daemonic: a replica's vLLM engine starts processes of its own, which daemons may not.
            process = context.Process(target=_replica_main, args=(child, devices, kwargs, factories or {}),
                                      name=f"vllm-replica-{rank}", daemon=False)
            process.start()
            child.close()
            self.workers.append((process, parent))
        # Stop the replicas if the run ends without close() (they wait on their pipe; multiprocessing
        # joins non-daemonic children at exit, which would otherwise wait forever).
        atexit.register(self.close)
        lengths = [self._receive(rank, startup_timeout, "start") for rank in range(size)]
        self.max_model_len: int | None = min((n for n in lengths if n), default=None)

    def _fail(self, message: str) -> BackendFatalError:
        self.broken = message
        self.close()
        return BackendFatalError(message)

    def _receive(self, rank: int, timeout: float, what: str) -> Any:
        process, conn = self.workers[rank]
        deadline = time.monotonic() + timeout
        while not conn.poll(1.0):
            if not process.is_alive():
                raise self._fail(f"vllm replica {rank} died (exit code {process.exitcode}) during {what}")
            if time.monotonic() > deadline:
                raise self._fail(f"vllm replica {rank} gave no answer within {timeout:g}s during {what}; all replicas stopped")
        try:
            kind, value = conn.recv()
        except EOFError:
            process.join(timeout=5)
            raise self._fail(f"vllm replica {rank} died (exit code {process.exitcode}) during {what}") from None
        if kind == "failed":
            raise self._fail(f"vllm replica {rank} failed during {what}:\n{value}")
        return value

    def run(self, payloads: Sequence[dict[str, Any]], options: dict[str, Any]) -> list[dict[str, Any]]:
        if self.broken:
            raise BackendFatalError(f"vllm replicas stopped earlier: {self.broken.splitlines()[0]}")
        shares = split_balanced([p["cost"] for p in payloads], len(self.workers))
        busy = [rank for rank, share in enumerate(shares) if share]
        for rank in busy:
            self.workers[rank][1].send(("run", [payloads[i] for i in shares[rank]], options))
        results: list[dict[str, Any] | None] = [None] * len(payloads)
        for rank in busy:
            answer = self._receive(rank, self.timeout, "generation")
            for i, result in zip(shares[rank], answer, strict=True):
                results[i] = result
        return results  # type: ignore[return-value]

    def close(self) -> None:
        for process, conn in self.workers:
            if process.is_alive():
                try:
                    conn.send(("stop",))
                except (OSError, BrokenPipeError):
                    pass
        # Healthy replicas get time to shut their engines down; after a failure a hung one would
        # never read "stop", so it is terminated at once.
        grace = 1.0 if self.broken else 60.0
        for process, conn in self.workers:
            process.join(timeout=grace)
            if process.is_alive():
                process.terminate()
                process.join(timeout=10)
            conn.close()
        self.workers = []
        atexit.unregister(self.close)
