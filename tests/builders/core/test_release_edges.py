"""The builders' edges (issue 17): a path a release names stays inside it, an archive member too, a damaged image or
archive is one error naming it, an empty config is an error, and what a killed build left is removed by the next
build of its benchmark, which holds its output's lock while it works. Each benchmark's own tests show the same on
its release (`test_<benchmark>_build.py`); these check the shared pieces in `builders/core`."""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image

from builders.core import contract
from builders.core.contract import add_flags
from builders.core.dataset_build import BuilderInfo, DatasetBuild
from builders.core.errors import BuildError
from builders.core.image_check import DamagedImages, image_size
from builders.core.options import (
    BenchmarkOptions,
    BuildOptions,
    limit_option,
    option,
    seed_option,
    switch,
)
from builders.core.release_archive import archive_files
from builders.core.release_paths import relative_name, release_files, release_path
from builders.core.work_folder import build_lock, work_folder
from builders.mmlongbench.bounds import MMLB_IMAGE
from tests.support.builder_fixtures import cut_in_half, outside_jpeg, run_builders, write_truncated_jpeg

# ------------------------------------------------------------------------------------------------ paths


@pytest.mark.parametrize(
    "name, normal",
    [("a/b.jpg", "a/b.jpg"), ("./a/./b.jpg", "a/b.jpg"), ("a/../b.jpg", "b.jpg"), ("a//b.jpg", "a/b.jpg")],
)
def test_a_relative_name_is_normalised(name: str, normal: str) -> None:
    assert relative_name(name, "f.jsonl:3") == normal


@pytest.mark.parametrize(
    "name, what",
    [
        ("../../outside.jpg", "leads out of the release"),
        ("a/../../b.jpg", "leads out of the release"),
        ("..", "leads out of the release"),
        ("..\\..\\outside.jpg", "leads out of the release"),
        ("/etc/hostname", "is absolute"),
        ("\\\\server\\share\\x.jpg", "is absolute"),
        ("C:\\x.jpg", "is absolute"),
        ("", "expected a relative file path"),
        (".", "expected a file path"),
        ("a\x00.jpg", "NUL byte"),
        (7, "expected a relative file path"),
    ],
)
def test_an_absolute_or_escaping_name_is_an_error_naming_where_and_the_path(name: object, what: str) -> None:
    with pytest.raises(BuildError, match="^f\\.jsonl:3: ") as error:
        relative_name(name, "f.jsonl:3")
    assert what in str(error.value) and repr(name)[:10] in str(error.value)


def test_a_symbolic_link_out_of_its_folder_is_refused_one_inside_is_followed(tmp_path: Path) -> None:
    base = tmp_path / "release" / "images"
    (base / "sub").mkdir(parents=True)
    (base / "sub" / "a.jpg").write_bytes(b"a")
    (base / "inside.jpg").symlink_to(base / "sub" / "a.jpg")
    (base / "out.jpg").symlink_to(outside_jpeg(tmp_path))
    (base / "dir").symlink_to(tmp_path)  # a folder link: every file under it is outside
    assert release_path(base, "inside.jpg", "w") == (base / "sub" / "a.jpg").resolve()
    assert release_path(base, "sub/../sub/a.jpg", "w") == (base / "sub" / "a.jpg").resolve()
    for name in ("out.jpg", "dir/outside.jpg"):
        with pytest.raises(
            BuildError,
            match=rf"^f\.json record 2: path '{name}' leads out of .*images through a "
            r"symbolic link \(to .*outside\.jpg\)",
        ):
            release_path(base, name, "f.json record 2")
    # The folder itself may be a link (a release kept on another disk): its files are inside it.
    (tmp_path / "elsewhere").symlink_to(base)
    assert release_path(tmp_path / "elsewhere", "sub/a.jpg", "w") == (base / "sub" / "a.jpg").resolve()
    # A listing names the link that leads out.
    with pytest.raises(BuildError, match=r"images: entry out\.jpg: path 'out\.jpg' leads out"):
        release_files(base, ".jpg")
    (base / "out.jpg").unlink()
    assert release_files(base, ".JPG") == ["inside.jpg"]


# ---------------------------------------------------------------------------------------------- archives


def _tar(path: Path, members: list[tarfile.TarInfo]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info in members:
            tar.addfile(info, io.BytesIO(b"x" * info.size) if info.isfile() else None)
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, 1 if kind == tarfile.REGTYPE else 0
    return info


def test_archive_files_are_streamed_with_normalised_names(tmp_path: Path) -> None:
    archive = _tar(
        tmp_path / "a.tar.gz",
        [
            _member("./top/a.jpg"),
            _member("top/dir", tarfile.DIRTYPE),
            _member("top/link.jpg", tarfile.SYMTYPE, "a.jpg"),
        ],
    )
    files = [(member.name, member.read(MMLB_IMAGE)) for member in archive_files(archive)]
    assert files == [("top/a.jpg", b"x")]  # links and folders are not handed out


@pytest.mark.parametrize(
    "member, message",
    [
        (_member("../outside.jpg"), r"member '\.\./outside\.jpg': path '\.\./outside\.jpg' leads out of the release"),
        (_member("/etc/hostname"), r"member '/etc/hostname': path '/etc/hostname' is absolute"),
        (
            _member("top/x.jpg", tarfile.SYMTYPE, "../../etc/hostname"),
            r"member 'top/x\.jpg' \(a symbolic link\): path 'top/\.\./\.\./etc/hostname' leads out",
        ),
        (
            _member("top/x.jpg", tarfile.SYMTYPE, "/etc/hostname"),
            r"member 'top/x\.jpg' \(a symbolic link\): .* is absolute",
        ),
        (
            _member("top/x.jpg", tarfile.LNKTYPE, "/etc/hostname"),
            r"member 'top/x\.jpg' \(a hard link\): .* is absolute",
        ),
        (
            _member("top/x.jpg", tarfile.LNKTYPE, "../etc/hostname"),
            r"member 'top/x\.jpg' \(a hard link\): .* leads out",
        ),
    ],
)
def test_a_member_or_link_out_of_the_archive_is_an_error_naming_both(
    tmp_path: Path, member: tarfile.TarInfo, message: str
) -> None:
    archive = _tar(tmp_path / "a.tar.gz", [_member("top/a.jpg"), member])
    with pytest.raises(BuildError, match=rf"^{archive}: {message}"):
        list(archive_files(archive))


def test_a_truncated_or_foreign_archive_is_an_error_naming_it(tmp_path: Path) -> None:
    archive = tmp_path / "a.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for i in range(4):
            data = bytes(range(256)) * 2000 + bytes([i])  # some bytes that do not compress away
            info = tarfile.TarInfo(f"top/{i}.bin")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    cut_in_half(archive)
    with pytest.raises(BuildError, match=rf"^{archive}: not a readable tar archive, damaged or cut short"):
        for member in archive_files(archive):
            member.read(MMLB_IMAGE)
    archive.write_bytes(b"not an archive at all")
    with pytest.raises(BuildError, match=rf"^{archive}: not a readable tar archive"):
        list(archive_files(archive))


# ------------------------------------------------------------------------------------------------ images


def _encoded(image: Image.Image, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, **options)
    return buffer.getvalue()


def test_a_jpeg_cut_in_half_is_caught_though_its_header_and_verify_pass(tmp_path: Path) -> None:
    path = tmp_path / "cut.jpg"
    write_truncated_jpeg(path)
    data = path.read_bytes()
    with Image.open(io.BytesIO(data)) as opened:
        opened.verify()  # what a header check sees: nothing wrong
    with pytest.raises(ValueError, match="cut short: no end-of-image marker"):
        image_size(data)


def test_whole_images_pass_and_damaged_ones_say_what_is_wrong() -> None:
    photo = Image.effect_noise((120, 90), 60).convert("RGB")
    jpeg = _encoded(photo, format="JPEG")
    assert image_size(jpeg) == (120, 90)
    assert image_size(_encoded(photo, format="JPEG", progressive=True)) == (120, 90)
    assert image_size(jpeg + b"trailing bytes a camera appended") == (120, 90)
    png = _encoded(photo, format="PNG")
    assert image_size(png) == (120, 90) and image_size(_encoded(photo, format="WEBP")) == (120, 90)
    for damaged, reason in (
        (jpeg[:-2], "cut short"),
        (png[: len(png) // 2], "Truncated File Read"),
        (b"plain text", "not an image file Pillow can read"),
    ):
        with pytest.raises(ValueError, match=reason):
            image_size(damaged)


def test_a_damaged_image_stops_a_build_or_its_rows_are_left_out_and_counted(tmp_path: Path) -> None:
    write_truncated_jpeg(tmp_path / "cut.jpg")
    data = (tmp_path / "cut.jpg").read_bytes()
    with pytest.raises(
        BuildError,
        match=r"^image x\.jpg \(needed by f\.jsonl:4\) is damaged \(cut short.*"
        r"pass --skip-bad-images",
    ):
        DamagedImages(skip=False).size("x.jpg", data, "x.jpg (needed by f.jsonl:4)")
    damaged = DamagedImages(skip=True)
    whole = _encoded(Image.new("RGB", (8, 8)), format="JPEG")
    assert damaged.size("x.jpg", data, "x.jpg (needed by f.jsonl:4)") is None
    assert damaged.size("y.jpg", whole, "y.jpg") == (8, 8)
    assert damaged.reason(["y.jpg"]) is None and "x.jpg" in damaged.reason(["y.jpg", "x.jpg"])
    assert damaged.caveat() is None and damaged.manifest_fields("c") == {}
    damaged.leave_out("c", "row-1", damaged.reason(["x.jpg"]))
    assert damaged.manifest_fields("c")["skipped_rows"] == 1 and "1 row(s) left out" in damaged.caveat()
    damaged.check_config("c", 1)
    with pytest.raises(BuildError, match="config c: every row shows a damaged image"):
        damaged.check_config("c", 0)


# ------------------------------------------------------------------------------------ builds and options


def test_a_config_without_rows_is_an_error_and_caveats_add_up(tmp_path: Path) -> None:
    from datasets import Features, Value

    info = BuilderInfo("toy", "tests", "1.0.0")
    features = Features({**contract.row_features(contract.EMBEDDED), "prompt": Value("string")})
    with DatasetBuild(tmp_path, info, {"configs": ["a"]}) as build:
        with build.config_writer("a", features) as writer:
            result = writer.close()
        with pytest.raises(BuildError, match="toy: config a has no rows"):
            build.add_config(result)
        build.add_caveat("limited", "3 rows left out")
        build.add_caveat("limited", "3 rows left out")
        build.add_caveat("limited", "2 more rows")
        assert build.caveats == {"limited": "3 rows left out; 2 more rows"}
    assert list(tmp_path.iterdir()) == []


@dataclass(frozen=True, kw_only=True)
class SomeOptions(BenchmarkOptions):
    source: list[str] | None = option(None, "where the rows come from", metavar="SPEC", many=True)
    limit: int | None = limit_option("rows per config")
    full: bool = switch("every row")
    pool: str = option("dataset", "which pool", choices=("dataset", "subset"))
    seed: int = seed_option()


def test_an_option_declared_once_makes_its_flag_and_is_checked_however_it_is_given(capsys) -> None:
    parser = argparse.ArgumentParser(prog="builders build some")
    add_flags(parser, SomeOptions)
    args = parser.parse_args(["--source", "a", "b", "--source", "c", "--limit", "3", "--full", "--seed", "7"])
    assert SomeOptions.from_namespace(args) == SomeOptions(source=["a", "b", "c"], limit=3, full=True, seed=7)
    assert SomeOptions.from_namespace(parser.parse_args([])) == SomeOptions()
    parser.print_help()
    assert "--limit L" in capsys.readouterr().out
    for given, message in (
        ({"limit": 0}, "--limit must be at least 1, got 0"),
        ({"seed": -1}, "--seed must be a non-negative integer, got -1"),
        ({"pool": "x"}, "--pool must be one of dataset, subset, got 'x'"),
    ):
        with pytest.raises(BuildError, match=message):
            SomeOptions(**given)  # the Python API
    with pytest.raises(BuildError, match="--limit must be at least 1, got 0"):
        SomeOptions.from_namespace(parser.parse_args(["--limit", "0"]))  # the command line
    with pytest.raises(BuildError, match="--num-proc must be at least 1, got 0"):
        BuildOptions(num_proc=0)


# ---------------------------------------------------------------------------------- lock and leftovers


@pytest.mark.slow  # builds in child processes
@pytest.mark.parametrize(
    "benchmark, options",
    [
        ("mmlongbench", ["--configs", "vrag_infoseek_8k"]),
        ("mmneedle", ["--source", "synthetic:200", "--limit", "2", "--configs", "m1_n2_k1"]),
    ],
)
def test_a_second_build_into_the_same_output_stops_naming_the_first(
    tmp_path: Path, benchmark: str, options: list[str]
) -> None:
    import os

    with build_lock(tmp_path, benchmark):
        result = run_builders("build", benchmark, *options, "--quiet", "--out", str(tmp_path))
        assert result.returncode == 2
        assert result.stderr.splitlines() == [
            f"builders: error: {tmp_path} is in use by another build of {benchmark} (pid {os.getpid()}, holding "
            f"{tmp_path / f'.{benchmark}.lock'}); wait for it to finish, or build into another --out"
        ]
        with build_lock(tmp_path, "locovqa"):  # another benchmark's lock is another file
            pass
    assert list(tmp_path.iterdir()) == []  # the lock file goes with the build
    with work_folder(tmp_path, benchmark) as work:
        assert work.parent == tmp_path and work.name.startswith(f".{benchmark}-work-{os.getpid()}-")
    assert list(tmp_path.iterdir()) == []


KILL_DURING_PUBLISH = (
    "import os, signal\n"
    "from builders.core.dataset_build import DatasetBuild\n"
    "DatasetBuild.publish = lambda self, **kw: os.kill(os.getpid(), signal.SIGKILL)\n"
)


@pytest.mark.slow  # builds in child processes, one killed
@pytest.mark.parametrize(
    "benchmark, configs",
    [("mmlongbench", "vrag_infoseek_8k"), ("milebench", "action_localization"), ("locovqa", "okvqa_int_2")],
)
def test_what_a_killed_build_left_is_removed_by_the_next_build(tmp_path: Path, benchmark: str, configs: str) -> None:
    out = tmp_path / "out"
    argv = ["build", benchmark, "--configs", configs, "--quiet", "--out", str(out)]
    killed = subprocess.run(
        [sys.executable, "-c", f"{KILL_DURING_PUBLISH}from builders.cli import main\nmain({argv!r})"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == -9, killed.stderr
    left = sorted(p.name for p in out.iterdir())
    assert any(name.startswith(f".{benchmark}-work-") for name in left), left
    legacy = out / f".{benchmark}-work-k2j4_x9a"  # as `tempfile` named them before the lock
    legacy.mkdir()
    (legacy / "spool").write_bytes(b"x" * 1000)
    again = run_builders(*argv)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in out.iterdir()) == [benchmark]


def test_a_built_folder_cannot_make_push_or_an_extending_build_read_outside_it(tmp_path: Path) -> None:
    from builders.core.push import plan_push
    from builders.mmneedle import build_mmneedle

    def build(configs: list[str]) -> Path:
        return build_mmneedle(source="synthetic:200", out_dir=tmp_path / "out", configs=configs, limit=2, num_proc=1)

    folder = build(["m1_n2_k1"])
    manifest = contract.read_manifest(folder)
    entry = manifest["configs"]["m1_n2_k1"]["files"][0]
    shard = folder / entry["path"]
    secret = tmp_path / "secret.parquet"  # what a planted link would publish: same size and hash as listed
    secret.write_bytes(shard.read_bytes())
    shard.unlink()
    shard.symlink_to(secret)
    leads_out = rf"build_manifest\.json: file: path '{entry['path']}' leads out of .* through a symbolic link"
    with pytest.raises(BuildError, match=leads_out):
        plan_push(folder, "org/name", "v1.0.0")
    with pytest.raises(BuildError, match=leads_out):
        build(["m1_n2_k1", "m1_n4_k1"])  # extends the build in place: carries its files over
    shard.unlink()
    shard.write_bytes(secret.read_bytes())
    entry["path"] = "../../secret.parquet"
    contract.write_manifest(folder, manifest)
    # The manifest is checked against its declaration before a field of it is trusted (`contract.read_manifest`).
    outside = (
        r"build_manifest\.json: configs\.m1_n2_k1\.files\[0\]\.path: '\.\./\.\./secret\.parquet' is not a path inside"
    )
    with pytest.raises(BuildError, match=outside):
        plan_push(folder, "org/name", "v1.0.0")
    with pytest.raises(BuildError, match=outside):
        build(["m1_n2_k1", "m1_n4_k1"])
