"""Fuzz: what issue 49 found past the surfaces issue 41 fuzzed. Tar headers that declare any size in any order and
archives of any member count, zip directories of any method, flags and count; a FIFO, a socket, a folder or a
device planted under the name of any file a command reads (a release's, a Hub cache blob, a results folder's, a
checkpoint's); a Hub blob swapped, cut or grown after it was verified; a task's hooks of every kind raising anything
or returning anything; and a journal header of any shape under the viewer's pages. Each ends within its bound, in
one line or a page (never a traceback, a 500 or a hang), and a verified blob reads as the bytes that were hashed."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tarfile
import tempfile
import textwrap
import tracemalloc
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders.core import contract, release_archive
from builders.core.errors import BuildError
from builders.core.release_archive import archive_files, zip_files
from builders.core.release_bounds import lines_of, read_file
from builders.mmlongbench.bounds import MMLB_JSONL
from builders.mmneedle.bounds import MMNEEDLE_METADATA_FILE
from harness.models.facts.checkpoint import CheckpointUnavailable, check_checkpoint_files
from harness.run.cli import main
from tests.support.archive_bombs import Run, gzip_parts
from tests.support.hub_cache import fill_hub_cache

from .conftest import JSON, bounded, budget, counted, mutated

MiB = 1 << 20
TASK = "mmneedle_m1_n2_k1_pos"


@contextmanager
def members_at_most(count: int) -> Iterator[None]:
    previous = release_archive.ARCHIVE_MEMBERS
    release_archive.ARCHIVE_MEMBERS = count
    try:
        yield
    finally:
        release_archive.ARCHIVE_MEMBERS = previous


def one_line(err: BaseException, *names: object) -> None:
    text = str(err)
    assert "\n" not in text and any(str(name) in text for name in names), text


# ------------------------------------------------------------------------------------------ tar headers, counts

KINDS = [tarfile.REGTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE]
KINDS += [tarfile.GNUTYPE_SPARSE, tarfile.DIRTYPE, tarfile.SYMTYPE]
SIZES = st.one_of(st.integers(0, 600), st.sampled_from([64 * 1024, 64 * 1024 + 1, MiB, MiB + 1, 1536 * MiB]))


@st.composite
def headers(draw: st.DrawFn) -> list[bytes | Run]:
    """Raw tar blocks: headers of any kind declaring any size, each followed by up to what it declares."""
    parts: list[bytes | Run] = []
    for _ in range(draw(st.integers(1, 6))):
        info = tarfile.TarInfo(draw(st.sampled_from(["top/a.txt", "././@LongLink", "top/d", "x" * 90])))
        info.type, info.size, info.mtime = draw(st.sampled_from(KINDS)), draw(SIZES), 0
        parts.append(info.tobuf(format=tarfile.USTAR_FORMAT))
        if info.size >= 16 * MiB and info.size % (16 * MiB) == 0:
            parts.append(Run(b"a", info.size))
        else:
            body = draw(st.binary(max_size=min(info.size, 600)))
            parts.append(body + b"\0" * (-len(body) % 512))
    empty = tarfile.TarInfo("top/e")
    parts.append(empty.tobuf(format=tarfile.USTAR_FORMAT) * draw(st.integers(0, 80)))
    return [*parts, b"\0" * 1024]


@budget(fuzz=1500, ci=30)
@given(parts=headers(), most=st.integers(1, 100))
def test_any_tar_headers_and_member_count_are_read_within_their_bounds(parts: list[bytes | Run], most: int) -> None:
    counted()
    with tempfile.TemporaryDirectory() as folder:
        archive = gzip_parts(Path(folder) / "a.tar.gz", parts)
        tracemalloc.start()
        try:
            with bounded(30, "a tar archive of hostile headers"), members_at_most(most):
                names = [member.name for member in archive_files(archive)]
            assert len(names) <= most
        except BuildError as err:
            one_line(err, archive)
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        assert peak < 48 * MiB, peak  # no header read past its bound: the 1.5 GiB ones never held


@budget(fuzz=800, ci=20)
@given(
    method=st.sampled_from([0, 8, 12, 14, 99, 1, 65535]),
    flags=st.integers(0, 0xFFFF),
    entries=st.integers(1, 30),
    most=st.integers(1, 40),
)
def test_any_zip_method_flags_and_count_read_or_refused_in_one_line(
    method: int, flags: int, entries: int, most: int
) -> None:
    counted()
    with tempfile.TemporaryDirectory() as folder:
        archive = Path(folder) / "a.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
            for n in range(entries):
                zipped.writestr(f"m/{n}.json", "{}" * n)
        data = bytearray(archive.read_bytes())
        at = data.find(b"PK\x01\x02")
        data[at + 8 : at + 10] = flags.to_bytes(2, "little")
        data[at + 10 : at + 12] = method.to_bytes(2, "little")
        archive.write_bytes(bytes(data))
        try:
            with bounded(30, "a zip archive"), members_at_most(most):
                for member in zip_files(archive):
                    member.read(MMNEEDLE_METADATA_FILE)
        except BuildError as err:
            one_line(err, archive)


# ------------------------------------------------------------------------------ files that are not files

PLANTS = ["fifo", "socket", "folder", "device", "link-to-device"]


def plant(path: Path, kind: str) -> None:
    """Something that is no regular file, under `path`'s name."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(str(path))
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to("/dev/zero" if kind == "device" else "/dev/null")


READERS: dict[str, Callable[[Path], object]] = {
    "read_file": lambda p: read_file(p, MMNEEDLE_METADATA_FILE),
    "lines_of": lambda p: list(lines_of(p, MMLB_JSONL)),
    "archive_files": lambda p: list(archive_files(p)),
    "zip_files": lambda p: list(zip_files(p)),
    "contract.read_regular": lambda p: contract.read_regular(p, MiB, "a file"),
}


@budget(fuzz=400, ci=10)
@given(kind=st.sampled_from(PLANTS), reader=st.sampled_from(sorted(READERS)))
def test_a_release_file_that_is_no_file_is_refused_at_once(kind: str, reader: str) -> None:
    counted()
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:  # short: a socket's path is at most 107 bytes
        path = Path(folder) / "f.tar.gz"
        plant(path, kind)
        with bounded(10, f"{reader} of a {kind}"):
            try:
                READERS[reader](path)
            except BuildError as err:
                one_line(err, path)
            except OSError as err:  # the contract's own reader: an OSError naming the file, for its caller to word
                assert err.filename == str(path), err


@budget(fuzz=300, ci=8)
@given(kind=st.sampled_from(PLANTS), at=st.sampled_from(["blob", "checkpoint"]))
def test_a_hub_blob_or_a_checkpoint_file_that_is_no_file_is_refused_at_once(kind: str, at: str) -> None:
    counted()
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        root = Path(folder)
        snapshot = fill_hub_cache(root / "h", "o/r", {"config.json": b"{}", "w.bin": b"weights"})
        name = "w.bin"
        target = (snapshot / name).resolve() if at == "blob" else snapshot / name
        if at == "checkpoint":
            target = Path(shutil.copytree(snapshot, root / "ckpt", symlinks=False)) / name
        plant(target, kind)
        with bounded(10, f"a {kind} as a {at}"):
            if at == "blob":
                with pytest.raises(contract.HubCacheError) as refused:
                    contract.verified_blob(snapshot, name)
                one_line(refused.value, name)
            elif kind == "folder":  # a subfolder, as checkpoints have
                check_checkpoint_files(str(target.parent))
            else:
                with pytest.raises(CheckpointUnavailable) as refused:
                    check_checkpoint_files(str(target.parent))
                one_line(refused.value, target)


# ------------------------------------------------------------------------------------------ swapped blobs

# What may happen to a blob's names after it was hashed. (Bytes written into the very inode that was hashed are read
# as written: the descriptor is the file, not a copy; a rerun's verification refuses them.)
SWAPS = ["replace", "same-size", "unlink", "repoint-link"]


@budget(fuzz=600, ci=12)
@given(data=st.binary(min_size=1, max_size=4096), swap=st.sampled_from(SWAPS), other=st.binary(max_size=4096))
def test_a_verified_blob_reads_as_the_bytes_hashed_whatever_is_done_to_its_name(
    data: bytes, swap: str, other: bytes
) -> None:
    counted()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        snapshot = fill_hub_cache(root / "h", "o/r", {"f.bin": data, "g.bin": other or b"g"})
        blob = contract.verified_blob(snapshot, "f.bin").path
        view = root / "work" / "f.bin"
        view.parent.mkdir()
        view.symlink_to(blob)
        contract.pin_name(view, blob)
        if swap == "replace":
            fresh = root / "fresh"
            fresh.write_bytes(other)
            os.replace(fresh, blob)
        elif swap == "same-size":
            blob.unlink()
            blob.write_bytes(bytes(b ^ 0xFF for b in data))
        elif swap == "unlink":
            blob.unlink()
        else:
            (snapshot / "f.bin").unlink()
            (snapshot / "f.bin").symlink_to((snapshot / "g.bin").resolve())
        try:
            for name in (snapshot / "f.bin", blob, view):
                with contract.open_regular(name) as handle:
                    assert handle.read() == data, (swap, name)
        finally:
            contract.release_pins(root / "work")


# ---------------------------------------------------------------------------------------------- task hooks

HOOK_KEYS = ["doc_to_text", "doc_to_visual", "doc_to_target", "process_results", "process_docs", "random_answer"]
RAISES = ["TypeError", "ZeroDivisionError", "AttributeError", "IndexError", "RuntimeError", "ValueError", "KeyError"]
BODIES = st.one_of(
    st.sampled_from(RAISES).map(lambda name: f"raise {name}('hook failed')"),
    JSON.map(lambda value: f"return {value!r}"),
    st.sampled_from(["return [5]", "return [b'not an image']", "return [{'path': 7}]", "return docs"]),
)


@budget(fuzz=300, ci=6)
@given(key=st.sampled_from(HOOK_KEYS), body=BODIES, log=st.booleans())
def test_a_hook_of_any_kind_raising_or_returning_anything_is_a_run_or_one_line(
    toy_build: tuple[Path, Path], key: str, body: str, log: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    counted()
    data_dir, tasks = toy_build
    if body == "return docs" and key != "process_docs":
        body = "return doc"
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(shutil.copytree(tasks, Path(folder) / "tasks"))
        args = "docs" if key == "process_docs" else "doc, *rest"
        (copy / "bad.py").write_text(f"def hook({args}, **keywords):\n    {body}\n")
        yaml = f"include: _toy.yaml\ntask: toy_bad\ndataset_name: colors\n{key}: !function bad.hook\n"
        (copy / "toy_bad.yaml").write_text(textwrap.dedent(yaml))
        model = (
            ["--model", "random"] if key == "random_answer" else ["--model", "constant", "--model_args", "answer=red"]
        )
        argv = ["--tasks", "toy_bad", "--include_path", str(copy), *model, "--data_dir", str(data_dir)]
        with bounded(60, f"a run with a {key} hook"):
            code = main(
                [*argv, "--output_path", str(Path(folder) / "out"), "--no_progress", *(["--log_samples"] * log)]
            )
    err = capsys.readouterr().err
    assert code in (0, 1, 2) and "Traceback" not in err, err
    if code == 2:
        (line,) = [line for line in err.splitlines() if line.startswith("harness: error:")]
        assert "toy_bad" in line, line


# ---------------------------------------------------------------------------- journal headers in the viewer


@pytest.fixture(scope="module")
def logged_run(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    results = tmp_path_factory.mktemp("fuzz_headers") / "results"
    argv = ["--tasks", TASK, "--model", "random", "--log_samples", "--data_dir", str(data_dir), "--no_progress"]
    assert main([*argv, "--output_path", str(results)]) == 0
    return results


@budget(fuzz=500, ci=10)
@given(data=st.data())
def test_a_journal_header_of_any_shape_leaves_every_page_a_page(logged_run: Path, data: st.DataObject) -> None:
    from starlette.testclient import TestClient

    from harness.view.app import create_app, served_hosts

    counted()
    (journal,) = logged_run.rglob(f"journal_{TASK}.jsonl")
    original = journal.read_bytes()
    header, *rest = original.splitlines(keepends=True)
    damaged = data.draw(
        st.one_of(
            mutated(json.loads(header)).map(lambda value: json.dumps(value).encode() + b"\n"),
            JSON.map(lambda parts: json.dumps({**json.loads(header), "parts": parts}).encode() + b"\n"),
            st.binary(max_size=40).map(lambda raw: raw.replace(b"\n", b"") + b"\n"),
        ),
        label="header",
    )
    sample_id = json.loads(rest[0])["sample_id"]
    try:
        journal.write_bytes(damaged + b"".join(rest))
        with bounded(60, "the viewer over a damaged journal header"):
            client = TestClient(
                create_app(logged_run, hosts=served_hosts("127.0.0.1", 8765)),
                base_url="http://127.0.0.1:8765",
                raise_server_exceptions=False,
            )
            for url in (
                f"/samples?model=random&task={TASK}",
                f"/sample?model=random&task={TASK}&id={sample_id}",
                "/samples?model=random&task=mmneedle",
            ):
                status = client.get(url).status_code
                assert status < 500, (url, status, damaged[:300])
    finally:
        journal.write_bytes(original)
