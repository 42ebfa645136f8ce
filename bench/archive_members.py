#!/usr/bin/env python
"""Benchmark: what an archive of more members than any release holds costs before it is refused (issue 49, item 4).

A tar stream of `--members` empty members (gzipped: some 3 MB for a million) is read through the builders' reader,
`builders.core.release_archive.archive_files`, which refuses it at `release_bounds.ARCHIVE_MEMBERS` (1,000,000).
Prints the seconds to the refusal and the process's peak resident memory (tarfile's own header parsing is the
cost; the reader lets each header go once passed, where tarfile keeps them all: 1.76 GB at 4,000,000).

    .venv/bin/python bench/archive_members.py [--members 1100000]
"""

from __future__ import annotations

import argparse
import gzip
import resource
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from builders.core.errors import BuildError  # noqa: E402
from builders.core.release_archive import archive_files  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=1_100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        archive = Path(folder) / "many.tar.gz"
        header = tarfile.TarInfo("top/e").tobuf(tarfile.GNU_FORMAT)
        with gzip.open(archive, "wb", compresslevel=6) as out:
            for start in range(0, args.members, 1000):
                out.write(header * min(1000, args.members - start))
            out.write(b"\0" * 1024)
        start = time.perf_counter()
        try:
            passed = sum(1 for _ in archive_files(archive))
            outcome = f"read whole: {passed:,} members"
        except BuildError as err:
            outcome = f"refused: {str(err).split(': ', 1)[1][:80]}"
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        print(
            f"{args.members:,} members, {archive.stat().st_size:,} bytes: {outcome} in {seconds:.1f} s, {peak} MB peak"
        )


if __name__ == "__main__":
    main()
