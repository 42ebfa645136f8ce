"""Several replicas of a backend, on one node or many: `--model_args ...,data_parallel_size=D` (and `--ray [ADDRESS]`).

    harness --tasks mmneedle_k1 --model hf --model_args pretrained=ORG/NAME,data_parallel_size=4 --ray auto ...

D > 1 runs D replicas of the backend as Ray actors (`pool.RayPool`), each built from the same arguments and reserving
its GPUs (vLLM: `tensor_parallel_size * pipeline_parallel_size`; hf: 1; on a cluster without GPUs, a CPU, hf its
`threads`); `--ray` picks the cluster: without an address a local one started for the run, `auto` the one `ray start`
runs, or an address. D = 1 (the default) builds the backend in this process and never imports Ray. Each replica
reads its requests' images from the verified build itself where its node sees the build's files at the same path, or
receives their encoded bytes through Ray's object store (`replica_data=auto|read|ship`; the results record which).
The pool's other arguments: `replica_timeout` (seconds a replica may hold a batch without answering) and
`replica_restarts` (how often Ray restarts a replica whose process died). Modules: `settings` (these arguments,
what a replica reserves), `cluster` (joining Ray), `wire` (a request as a replica receives it), `shares` (an engine's
batch divided between replicas), `actor` (one replica) and `pool` (the `Model` the runner sees).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from harness.api import Model
from harness.models.backends.replicas.settings import split_pool_args

if TYPE_CHECKING:
    from harness.models.backends.replicas.actor import Build


def build_model(
    backend: str,
    args: dict[str, str],
    *,
    batch_size: int = 1,
    max_batch_tokens: int | None = None,
    ray_address: str | None = None,
    build: Build | None = None,
) -> Model:
    """The backend of `--model` with its `--model_args`: in this process, or (`data_parallel_size` > 1) a pool of its
    replicas on Ray. `build` (tests): how a replica builds its backend, in place of the registry's `from_args`."""
    from harness.models.registry import backend_spec, get_model_class

    settings, backend_args = split_pool_args(backend, args)
    cls = get_model_class(backend)
    if settings.data_parallel_size == 1:
        if ray_address is not None:
            print(
                "harness: --ray: data_parallel_size is 1, so the model runs in this process (give "
                "data_parallel_size=D in --model_args for D replicas on Ray)",
                file=sys.stderr,
            )
        return cls.from_args(backend_args, batch_size=batch_size, max_batch_tokens=max_batch_tokens)
    refused = backend_spec(backend).replicas.refused
    if refused:
        raise ValueError(f"data_parallel_size: {refused}; replicas are for backends that hold a model (hf, vllm)")
    from harness.models.backends.replicas.cluster import import_ray
    from harness.models.backends.replicas.pool import RayPool

    import_ray()  # before the driver loads anything: one line on what to install
    # The driver's copy counts, screens and batches requests as the backend does, without its weights.
    front = getattr(cls, "without_weights", cls.from_args)(
        backend_args, batch_size=batch_size, max_batch_tokens=max_batch_tokens
    )
    return RayPool(
        front,
        backend,
        backend_args,
        settings,
        batch_size=batch_size,
        max_batch_tokens=max_batch_tokens,
        address=ray_address,
        build=build,
    )  # closes the front if it fails
