"""Archive readers bounded in what a header may declare and in how many members an archive may hold (issue 49,
item 4), and a release file that is not a file (item 3): a GNU long name or a PAX header is read only within its
bound (`release_bounds.TAR_LONG_NAME`, `TAR_PAX_HEADER`), an archive of more members than any release holds
(`ARCHIVE_MEMBERS`) stops at the bound in flat memory, a zip member encrypted or compressed by a method no release
uses is one line, and a FIFO or a device planted as a release file is refused at once. Each is one line naming the
archive, exit 2, and no build."""

from __future__ import annotations

import os
import tarfile
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from builders import cli
from builders.core import release_archive
from builders.core.errors import BuildError
from builders.core.release_archive import archive_files, zip_files
from builders.core.release_bounds import lines_of, read_file
from builders.mmlongbench.bounds import MMLB_JSONL
from builders.mmneedle.bounds import MMNEEDLE_METADATA_FILE
from tests.support.archive_bombs import Run, gzip_parts
from tests.support.deadline import within

GiB = 1 << 30
MiB = 1 << 20


def header(name: str, kind: bytes, size: int) -> bytes:
    """One raw tar header (512 bytes) of this type and declared size."""
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mtime = kind, size, 0
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def member(name: str, data: bytes = b"") -> bytes:
    padding = b"\0" * (-len(data) % 512)
    return header(name, tarfile.REGTYPE, len(data)) + data + padding


END = b"\0" * 1024


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        (tarfile.GNUTYPE_LONGNAME, "over the 64 KiB that a tar member's long name (a GNU long-name header)"),
        (tarfile.GNUTYPE_LONGLINK, "over the 64 KiB that a tar member's long name (a GNU long-name header)"),
        (tarfile.XHDTYPE, "over the 1 MiB that a tar member's PAX header"),
        (tarfile.XGLTYPE, "over the 1 MiB that a tar member's PAX header"),
    ],
    ids=["long-name", "long-link", "pax", "pax-global"],
)
def test_a_header_declaring_gigabytes_is_refused_before_it_is_read(tmp_path: Path, kind: bytes, message: str) -> None:
    """The issue's 1.5 MiB archive whose extension header declares 1.5 GiB (a MemoryError at 1.7 GB before)."""
    size = 1536 * MiB
    archive = gzip_parts(
        tmp_path / "a.tar.gz", [header("././@LongLink", kind, size), Run(b"a", size), member("top/a.txt", b"a"), END]
    )
    assert archive.stat().st_size < 4 * MiB
    tracemalloc.start()
    try:
        with pytest.raises(BuildError) as refused:
            [m.name for m in archive_files(archive)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(refused.value) == (
        f"{archive}: a header at byte 0: 1,610,612,736 bytes, {message} of this release can hold; not read (an "
        "archive that inflates this far is damaged or hostile)"
    )
    assert peak < 32 * MiB


def test_a_long_name_within_its_bound_is_read_as_tar_writes_it(tmp_path: Path) -> None:
    name = "top/" + "n" * 3000 + ".txt"
    with tarfile.open(tmp_path / "a.tar", "w", format=tarfile.GNU_FORMAT) as tar:
        info = tarfile.TarInfo(name)
        tar.addfile(info)
    with tarfile.open(tmp_path / "p.tar", "w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(tarfile.TarInfo(name))
    assert [m.name for m in archive_files(tmp_path / "a.tar")] == [name]
    assert [m.name for m in archive_files(tmp_path / "p.tar")] == [name]


def test_more_members_than_any_release_archive_holds_stop_at_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bound is 1,000,000 (42 s of tarfile's own header parsing on this machine, 20 MB); here 1,000, so the test
    takes a moment. The issue's archive of 4,000,000 empty members read for 600 s, at 1.76 GB, though the wanted
    member was the first."""
    monkeypatch.setattr(release_archive, "ARCHIVE_MEMBERS", 1000, raising=False)
    archive = gzip_parts(tmp_path / "many.tar.gz", [member("top/wanted.txt", b"x"), member("top/e") * 1500, END])
    names = []
    with pytest.raises(BuildError) as refused:
        for found in archive_files(archive):
            names.append(found.name)
    assert names[0] == "top/wanted.txt" and len(names) == 1000
    assert str(refused.value) == (
        f"{archive}: more than 1,000 members, more than any archive of a release holds; not read (an archive of "
        "this many members is damaged or hostile)"
    )


def test_the_members_passed_are_not_kept(tmp_path: Path) -> None:
    """tarfile keeps every header it passes (`TarFile.members`): 4,000,000 held 1.7 GB. The reader lets them go."""
    archive = gzip_parts(tmp_path / "many.tar.gz", [member("top/e") * 20_000, END])
    tracemalloc.start()
    try:
        count = sum(1 for _ in archive_files(archive))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 20_000 and peak < 4 * MiB  # 20,000 headers kept are some 14 MB


@pytest.mark.parametrize("chain", [9, 3000])
def test_a_chain_of_extension_headers_is_refused(tmp_path: Path, chain: int) -> None:
    """Nine long names before one member (a member has at most three extension headers), and 3,000, which recursed
    in tarfile until Python's stack gave out (a RecursionError traceback)."""
    long_name = b"top/x\0".ljust(512, b"\0")
    parts = [header("././@LongLink", tarfile.GNUTYPE_LONGNAME, 512) + long_name] * chain
    archive = gzip_parts(tmp_path / "chain.tar.gz", [*parts, member("top/a.txt", b"a"), END])
    with pytest.raises(BuildError, match=r"more than 8 extension headers \(long names, PAX\) in a row at byte 8,192"):
        [m.name for m in archive_files(archive)]


def test_a_sparse_member_is_refused(tmp_path: Path) -> None:
    archive = gzip_parts(tmp_path / "s.tar.gz", [header("top/s.bin", tarfile.GNUTYPE_SPARSE, 0), END])
    with pytest.raises(BuildError, match=r"member 'top/s\.bin' is a sparse file, which no release holds; not read"):
        [m.name for m in archive_files(archive)]


# ------------------------------------------------------------------------------------------------ zip


def odd_zip(path: Path, method: int | None = None, encrypted: bool = False) -> Path:
    """A zip of one JSON file whose local and directory headers say `method` and (`encrypted`) flag bit 0."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("metadata_stitched/2_2.json", "{}")
    data = bytearray(path.read_bytes())
    for signature, flags, methods in ((b"PK\x03\x04", 6, 8), (b"PK\x01\x02", 8, 10)):
        at = data.find(signature)
        if encrypted:
            data[at + flags] |= 1
        if method is not None:
            data[at + methods : at + methods + 2] = method.to_bytes(2, "little")
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize(
    ("method", "encrypted", "message"),
    [
        (99, False, "compressed by method 99, which no release uses (this reader inflates stored, deflate, bzip2,"),
        (None, True, "an encrypted member, which no release holds; not read"),
    ],
    ids=["aes-method-99", "encrypted"],
)
def test_a_zip_member_encrypted_or_of_an_unknown_method_is_one_line(
    tmp_path: Path, method: int | None, encrypted: bool, message: str
) -> None:
    archive = odd_zip(tmp_path / "m.zip", method, encrypted)
    (found,) = list(zip_files(archive))
    with pytest.raises(BuildError) as refused:
        found.read(MMNEEDLE_METADATA_FILE)
    assert str(refused.value).startswith(f"{archive}: member 'metadata_stitched/2_2.json': {message}")


def test_a_zip_member_of_method_99_in_the_hub_release_ends_the_build_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture, offline_hub: Path
) -> None:
    """The issue's traceback (`NotImplementedError: That compression method is not supported`), through the build."""
    from tests.support.builder_fixtures import write_coco
    from tests.support.hub_cache import fill_hub_cache

    write_coco(tmp_path / "coco", count=50)
    fill_hub_cache(offline_hub, "Wang-ML-Lab/MMNeedle", {"data/metadata_stitched.zip": odd_zip(tmp_path / "m.zip", 99)})
    argv = ["build", "mmneedle", "--source", f"coco={tmp_path / 'coco'}", "--configs", "m1_n2_k1", "--limit", "3"]
    code = cli.main(
        [*argv, "--official-metadata", "hf://Wang-ML-Lab/MMNeedle", "--out", str(tmp_path / "out"), "--quiet"]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "Traceback" not in err, err
    assert "metadata_stitched.zip: member 'metadata_stitched/2_2.json': compressed by method 99" in err


def test_a_zip_declaring_more_members_than_the_bound_is_refused_before_its_directory_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(release_archive, "ARCHIVE_MEMBERS", 10, raising=False)
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for n in range(11):
            zipped.writestr(f"m/{n}.json", "{}")
    with pytest.raises(BuildError) as refused:
        list(zip_files(archive))
    assert str(refused.value) == (
        f"{archive}: its directory declares 11 members, more than any archive of a release holds (10); not read (an "
        "archive of this many members is damaged or hostile)"
    )


def test_the_member_count_of_a_zip64_directory_is_read_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past 65,535 members the end record says 0xFFFF and the zip64 record holds the count."""
    monkeypatch.setattr(release_archive, "ARCHIVE_MEMBERS", 65_536, raising=False)
    archive = tmp_path / "z64.zip"
    with zipfile.ZipFile(archive, "w", allowZip64=True) as zipped:
        for n in range(70_000):
            zipped.writestr(zipfile.ZipInfo(f"{n}"), b"")
    with pytest.raises(BuildError, match=r"its directory declares 70,000 members, more than any archive"):
        list(zip_files(archive))


# ------------------------------------------------------------------------------------ not a regular file


READERS = {
    "read_file": lambda path: read_file(path, MMNEEDLE_METADATA_FILE),
    "lines_of": lambda path: list(lines_of(path, MMLB_JSONL)),
    "archive_files": lambda path: list(archive_files(path)),
    "zip_files": lambda path: list(zip_files(path)),
}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_release_file_that_is_a_fifo_or_a_device_is_refused_at_once(tmp_path: Path, reader: str, kind: str) -> None:
    """Every reader of a release file opens it without blocking and reads it only as a regular file: a FIFO with no
    writer held a blocking `open` forever, and a device (/dev/zero) reads without end. (The release folders' own
    lookups skip what is not a file; a file replaced by a FIFO between that look and the open is refused here.)"""
    planted = tmp_path / "0_mmlb_data.tar.gz"
    if kind == "fifo":
        os.mkfifo(planted)
    else:
        planted.symlink_to("/dev/zero")
    said = "a FIFO" if kind == "fifo" else "a character device"
    with within(5, f"{reader} of a {kind}"), pytest.raises(BuildError) as refused:
        READERS[reader](planted)
    assert str(refused.value) == f"{planted}: cannot be read ({said}, not a regular file)"
