"""Run a function over many items on worker threads, with a progress bar.

Threads, not processes: the heavy work (JPEG decode, resize, paste, JPEG encode, hashing) runs
inside Pillow and hashlib with the GIL released, so threads use every core while sharing the
tile and image stores directly, with nothing pickled or copied between processes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")


def run_parallel(
    items: Sequence[T],
    work: Callable[[T], None],
    workers: int,
    desc: str,
    unit: str,
    progress: bool = False,
    chunk: int = 8,
) -> None:
    """Call `work(item)` for every item; the first exception stops the rest and is re-raised."""
    chunks = [items[i : i + chunk] for i in range(0, len(items), chunk)]

    def run(part: Sequence[T]) -> int:
        for item in part:
            work(item)
        return len(part)

    with tqdm(total=len(items), desc=desc, unit=unit, disable=not progress, dynamic_ncols=True, leave=True) as bar:
        if workers <= 1:
            for part in chunks:
                bar.update(run(part))
            return
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="builders") as executor:
            futures = [executor.submit(run, part) for part in chunks]
            try:
                for future in as_completed(futures):
                    bar.update(future.result())  # re-raises a worker's exception
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
