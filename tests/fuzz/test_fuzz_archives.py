"""Fuzz: release archives (issue 41). Tar, gzip and zip archives as the releases use them, drawn with hostile
members: bombs (a few MB that inflate to gigabytes, `tests.support.archive_bombs`, never held here), names that
climb out (`../`, absolute, backslashes), links out of the archive, text of endless newlines or one endless line.
Read through the builders' own readers (each member against the release bound it is read for) and through a
whole MMLongBench build, every archive ends within a bounded time and memory, either read whole or with one line
naming the archive, and nothing is written outside `--out` (nor anything left in it by a refused build)."""

from __future__ import annotations

import tarfile
import tempfile
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import cli
from builders.core.errors import BuildError
from builders.core.release_archive import archive_files, zip_files
from builders.core.release_bounds import Bound, Inflation
from builders.milebench.bounds import MILEBENCH_ANNOTATION
from builders.mmlongbench.bounds import MMLB_IMAGE, MMLB_JSONL, MMLB_TEXT_FILE
from builders.mmneedle.bounds import MMNEEDLE_METADATA_FILE
from tests.support.archive_bombs import Run, gzip_run, tar_gz, zip_file

from .conftest import bounded, budget, counted

MiB, GiB = 1 << 20, 1 << 30
# An archive's whole reading, bombs included, is bounded in time (a backstop: a 2 GiB member takes 14 s to inflate
# here, and is refused before) and in work: what a tar stream inflates, members passed unread included, is at most
# what the archive's size allows (`Inflation`), and the stream's read-ahead.
SECONDS = 60
SLACK = 96 * MiB  # memory besides the bound's worth (the build's own tables, Pillow, pyarrow)

# Runs around the bounds: 3 MiB of newlines pass a million lines; 80 MiB pass the 64 MiB bounds of a line and an
# image; 272 MiB pass what a small archive may inflate to (256 MiB); 2 GiB is the issue's.
RUNS = st.builds(
    Run, st.sampled_from([b"\0", b"\n", b"x", b"{"]), st.sampled_from([MiB, 3 * MiB, 80 * MiB, 272 * MiB, 2 * GiB])
)
CONTENT = st.one_of(st.binary(max_size=200), RUNS)
HOSTILE_NAMES = st.sampled_from(
    [
        "../escape.jpg",
        "/etc/hostname",
        "a/../../b.jpg",
        "./x/../../y",
        "mmlb_image/../../../z.jpg",
        "..\\..\\w.jpg",
        ".",
    ]
)
NAMES = st.one_of(HOSTILE_NAMES, st.from_regex(r"[a-z]{1,6}(/[a-z0-9_.]{1,8}){0,2}", fullmatch=True))
LINK_TARGETS = st.sampled_from(["../../etc/hostname", "/etc/hostname", "a.jpg", "../outside", "x/../../.."])


@st.composite
def links(draw: st.DrawFn) -> tarfile.TarInfo:
    info = tarfile.TarInfo(draw(NAMES))
    info.type = draw(st.sampled_from([tarfile.SYMTYPE, tarfile.LNKTYPE]))
    info.linkname = draw(LINK_TARGETS)
    return info


MEMBERS = st.lists(st.tuples(NAMES, CONTENT), min_size=1, max_size=4)
READS = st.sampled_from(["read", "copy", "lines"])
BOUNDS = st.sampled_from([MMLB_IMAGE, MILEBENCH_ANNOTATION, MMNEEDLE_METADATA_FILE])


@contextmanager
def watched_area() -> Iterator[tuple[Path, Path, Path]]:
    """(area, release, out): an empty folder holding a release folder and an --out folder, and serving as the
    system's temporary folder for the block; afterwards nothing may have been written in it outside those two."""
    with tempfile.TemporaryDirectory() as folder:
        area = Path(folder)
        release, out = area / "release", area / "out"
        release.mkdir()
        out.mkdir()
        previous, tempfile.tempdir = tempfile.tempdir, str(area / "tmp")
        (area / "tmp").mkdir()
        try:
            yield area, release, out
        finally:
            tempfile.tempdir = previous
        strays = [
            p for p in area.rglob("*") if not p.is_dir() and not p.is_relative_to(release) and not p.is_relative_to(out)
        ]
        assert strays == [], f"written outside --out: {strays}"


@contextmanager
def inflated_bytes() -> Iterator[list[int]]:
    """The bytes each gzipped tar stream opened in the block inflated (counted as tarfile reads them)."""
    from builders.core import release_archive

    counts: list[int] = []
    real_open = release_archive.gzip.GzipFile  # the reader inflates through GzipFile over the file it opened

    class Counted:
        def __init__(self, stream: Any) -> None:
            self.stream, self.index = stream, len(counts)
            counts.append(0)

        def read(self, size: int = -1) -> bytes:
            data = self.stream.read(size)
            counts[self.index] += len(data)
            return data

        def __getattr__(self, name: str) -> Any:
            return getattr(self.stream, name)

        def __enter__(self) -> Counted:
            return self

        def __exit__(self, *exc: object) -> None:
            self.stream.close()

    release_archive.gzip.GzipFile = lambda *args, **kwargs: Counted(real_open(*args, **kwargs))  # type: ignore[assignment,misc]
    try:
        yield counts
    finally:
        release_archive.gzip.GzipFile = real_open  # type: ignore[misc]


@contextmanager
def peak_memory(most: int, what: str) -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= most, f"{what}: {peak:,} bytes held at the peak, over {most:,}"


def one_line(err: BaseException, archive: Path) -> None:
    message = str(err)
    assert "\n" not in message and message.startswith(str(archive)), message


@budget(fuzz=300, ci=12)
@given(
    kind=st.sampled_from(["tar.gz", "zip", "gz"]),
    members=MEMBERS,
    tar_links=st.lists(links(), max_size=2),
    read=READS,
    bound=BOUNDS,
    skipped=st.sets(st.integers(0, 4)),
    junk=st.one_of(st.none(), RUNS),
)
def test_any_archive_of_hostile_members_is_read_within_its_bounds_or_stops_in_one_line(
    kind: str, members: list, tar_links: list, read: str, bound: Bound, skipped: set[int], junk: Run | None
) -> None:
    """Each member is read (whole, copied, or line by line) against a release bound, or passed by unread (as
    `junk`, a first member no reader wants, always is)."""
    counted()
    with watched_area() as (_, release, out):
        archive = release / f"release.{kind}"
        if junk is not None:
            members, skipped = [("junk/unwanted.bin", junk), *members], {0, *(i + 1 for i in skipped)}
        if kind == "tar.gz":
            tar_gz(archive, members, links=tar_links)
        elif kind == "zip":
            zip_file(archive, members)
        else:
            gzip_run(archive, members[0][1])
        most = max(bound.most, MMLB_JSONL.line.most) * 2 + SLACK
        with bounded(SECONDS, f"a {kind} archive"), peak_memory(most, f"a {kind} archive"), inflated_bytes() as work:
            if kind == "gz":
                _read_gzip(archive)
                return
            try:
                for index, member in enumerate(archive_files(archive) if kind == "tar.gz" else zip_files(archive)):
                    if index not in skipped:
                        _read_member(member, read, bound, out)
            except BuildError as err:
                one_line(err, archive)
        allowed = Inflation(archive.stat().st_size).allowed + MiB  # the members passed, and the stream's read-ahead
        assert kind != "tar.gz" or len(work) == 1, work  # the stream was counted (the property is not vacuous)
        assert all(count <= allowed for count in work), f"inflated {work}, over {allowed:,}"


def _read_member(member: object, read: str, bound: Bound, out: Path) -> None:
    from builders.core.release_archive import ArchiveFile

    assert isinstance(member, ArchiveFile)
    assert not member.name.startswith(("/", "../")) and "/../" not in member.name and member.name != ".."
    if read == "read":
        assert len(member.read(bound)) <= bound.most
        return
    target = out / "copy"
    with open(target, "wb") as handle:
        if read == "copy":
            member.copy_to(handle, bound)
        else:
            member.copy_lines_to(handle, MMLB_JSONL, MMLB_TEXT_FILE)
    assert target.stat().st_size <= (bound.most if read == "copy" else MMLB_TEXT_FILE.most)
    target.unlink()


def _read_gzip(archive: Path) -> None:
    """A gzip file read as LoCoVQA reads MNIST's IDX files."""
    from builders.locovqa.mnist import read_idx

    try:
        read_idx(archive, 2051, 3)
    except BuildError as err:
        assert "\n" not in str(err) and str(archive) in str(err), err


# --------------------------------------------------------------------------------------- a whole build


@pytest.fixture(scope="module")
def mmlb_files() -> tuple[dict[str, bytes], dict[str, bytes]]:
    from builders.mmlongbench.fixture import fixture_files

    texts, images = fixture_files()
    return texts, {k: v for k, v in images.items() if k.startswith("vh/")}


VH_FILE = "NIAH/vh_single_test_1000_K8_dep6.jsonl"


@budget(fuzz=60, ci=4)
@given(
    wanted_text=st.one_of(st.none(), RUNS, st.binary(max_size=100)),
    wanted_image=st.one_of(st.none(), RUNS, st.binary(max_size=100)),
    extra=st.lists(st.tuples(NAMES, CONTENT), max_size=2),
    tar_links=st.lists(links(), max_size=1),
)
def test_an_mmlongbench_build_from_hostile_archives_builds_or_stops_in_one_line_inside_out(
    capsys: pytest.CaptureFixture,
    mmlb_files: tuple[dict[str, bytes], dict[str, bytes]],
    wanted_text: bytes | Run | None,
    wanted_image: bytes | Run | None,
    extra: list,
    tar_links: list,
) -> None:
    """The file a config reads, and one of its images, replaced by anything (left as released when None), among
    hostile members: the build is whole or refused in one line, exit 2, with nothing of it left."""
    counted()
    texts, images = mmlb_files
    text_members = [
        (f"mmlb_data/{k}", wanted_text if k == VH_FILE and wanted_text is not None else v)
        for k, v in sorted(texts.items())
    ]
    image_members = [
        (f"mmlb_image/{k}", wanted_image if k == "vh/needle/0.jpg" and wanted_image is not None else v)
        for k, v in sorted(images.items())
    ]
    with watched_area() as (_, release, out), bounded(SECONDS * 3, "an MMLongBench build"):
        tar_gz(release / "0_mmlb_data.tar.gz", [*extra, *text_members], links=tar_links)
        tar_gz(release / "2_vh_image.tar.gz", [*image_members, *extra])
        with peak_memory(MMLB_JSONL.line.most * 3 + 2 * SLACK, "an MMLongBench build"):
            argv = ["build", "mmlongbench", "--source", str(release), "--configs", "niah_vh_single_8k"]
            code = cli.main([*argv, "--out", str(out), "--quiet"])
        err = capsys.readouterr().err.strip()
        assert code in (0, 2), err
        assert code == 0 or (err.count("\n") == 0 and err.startswith("builders: error: ")), err
        left = sorted(p.name for p in out.iterdir())
        assert left == (["mmlongbench"] if code == 0 else []), left
        # No run of one byte is rows of a release, and an image past its bound is never read.
        if isinstance(wanted_text, Run) or (isinstance(wanted_image, Run) and wanted_image.size > MMLB_IMAGE.most):
            assert code == 2, "a member past its bound was built from"
