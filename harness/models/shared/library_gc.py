"""The `harness` command's cyclic garbage collector while a backend imports its libraries.

torch, transformers and a checkpoint's model classes import as ~750,000 Python objects that live as long as the
process, vLLM's and SGLang's argument classes as ~1,000,000. CPython's collector traverses every tracked object at each
full collection, and the heap's growth through those imports sets off one full collection after another, each longer
than the last: eight, ~0.9 s of a 10 s `hf` run on 100 rows; eight to ten, 1.4-2.0 s, of the command's process in a
`vllm` run (`bench/RESULTS.md`, "The collector while the libraries import"). So, once a process, the command collects
what is garbage already (planning's heap is small), pauses the collector while the backend imports (`hf`'s `from_args`
its torch and transformers; an engine's, `engine_count.EngineCounted`, as it reads its settings from the engine's own
declarations), then freezes what exists (`gc.freeze`: out of every generation, never traversed again) and resumes it.
The block runs before the backend makes its model or engine, which load after it with the collector on: no model is
frozen. What the imports left as garbage stays (~17,000 small objects: functions, cells, frames, no tensor), as do the
objects alive then that a later run of the same process drops (a `--config` file's earlier runs). Only in the
command's own process (its entry says so: `harness.run.process_exit.run_as_the_command`): the collector of a Python
caller of the harness, and what it holds, are left as they are.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


class _Process:
    command = False  # the `harness` command's own process (its entry says so)


def in_the_command() -> None:
    """Said by the `harness` command's entry, before it runs anything: this process is the command's own."""
    _Process.command = True


@contextmanager
def libraries_imported() -> Iterator[None]:
    """The block's imports with the collector paused, then all the process holds frozen: in the `harness` command's
    process, the first time (nothing frozen yet), where the collector is on; elsewhere the block runs as it is."""
    if not _Process.command or gc.get_freeze_count() or not gc.isenabled():
        yield
        return
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
