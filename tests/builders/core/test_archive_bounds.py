"""Release archives that inflate without bound (issue 41, item 4): each member is read against a bound the real
releases' sizes justify (`builders.core.release_bounds`), so a small archive that would inflate to gigabytes stops
at the bound, in seconds, with one line naming the archive and the member, exit 2, and nothing is written outside
`--out` (nor kept in it). The bombs are real archives (true CRCs and sizes) of a few MB, made without ever holding
their content (`tests.support.archive_bombs`); nothing of their gigabytes is written here."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from builders import cli
from builders.core.errors import BuildError
from builders.core.release_archive import archive_files, zip_files
from builders.core.release_bounds import Bound
from builders.mmlongbench.bounds import MMLB_IMAGE, MMLB_JSONL, MMLB_TEXT_FILE
from tests.support.archive_bombs import Run, gzip_run, peak_memory, tar_gz, zip_file

GiB = 1 << 30
MiB = 1 << 20


def build(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, float]:
    """(exit code, stderr, seconds) of `builders build ARGV --quiet`."""
    start = time.perf_counter()
    code = cli.main(["build", *argv, "--quiet"])
    return code, capsys.readouterr().err.strip(), time.perf_counter() - start


def assert_left_nothing(out: Path) -> None:
    """A refused build leaves no dataset, no spool and no work folder in --out."""
    assert not out.exists() or sorted(p.name for p in out.iterdir()) == []


# ------------------------------------------------------------------------------------------ MMLongBench


@pytest.fixture(scope="module")
def mmlb_files() -> tuple[dict[str, bytes], dict[str, bytes]]:
    from builders.mmlongbench.fixture import fixture_files

    return fixture_files()


def mmlb_release(folder: Path, texts: dict[str, object], images: dict[str, object]) -> Path:
    """A release folder as the Hub publishes it: `0_mmlb_data.tar.gz` and `2_vh_image.tar.gz`."""
    folder.mkdir(parents=True)
    tar_gz(folder / "0_mmlb_data.tar.gz", [(f"mmlb_data/{k}", v) for k, v in sorted(texts.items())])  # type: ignore[misc]
    vh = {k: v for k, v in images.items() if k.startswith("vh/")}
    tar_gz(folder / "2_vh_image.tar.gz", [(f"mmlb_image/{k}", v) for k, v in sorted(vh.items())])  # type: ignore[misc]
    return folder


VH_FILE = "NIAH/vh_single_test_1000_K8_dep6.jsonl"


def refused_vh_single(capsys: pytest.CaptureFixture, release: Path, out: Path) -> tuple[str, float, int]:
    """`niah_vh_single_8k` built from `release` into `out`, Python's allocations traced, and refused in one line
    (exit 2): its stderr, the seconds it took and the peak bytes it held."""
    with peak_memory() as peak:
        code, err, seconds = build(
            capsys, "mmlongbench", "--source", str(release), "--configs", "niah_vh_single_8k", "--out", str(out)
        )
    assert code == 2 and err.count("\n") == 0, err
    return err, seconds, peak.bytes


INFLATES = "over 100 times the archive's own"  # the archive as a whole inflates past any release's


@pytest.mark.parametrize(
    ("content", "message"),
    [
        # The 2 GiB of newlines (an unbounded reader spooled all of it into the work folder, then parsed
        # blank lines for minutes) and its one 2 GiB line (held whole: MemoryError), each in a 2 MB archive.
        (Run(b"\n", 2 * GiB), "2,147,483,648 bytes, which bring the archive's members to 2,14"),
        (Run(b"x", 2 * GiB), "2,147,483,648 bytes, which bring the archive's members to 2,14"),
        # Within what the archive may inflate to, the member's own bounds: its lines, and each line's length.
        (Run(b"\n", 2 * MiB), "more than 1,000,000 lines, more than any file of this release holds"),
        (Run(b"x", 128 * MiB), ":1: more than 67,108,864 bytes, over the 64 MiB that a jsonl line of this release"),
    ],
    ids=["2GiB-newlines", "2GiB-line", "lines", "line"],
)
def test_a_jsonl_member_that_inflates_past_its_bounds_stops_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture, mmlb_files: tuple[dict, dict], content: Run, message: str
) -> None:
    texts, images = mmlb_files
    release = mmlb_release(tmp_path / "release", {**texts, VH_FILE: content}, images)
    assert (release / "0_mmlb_data.tar.gz").stat().st_size < 4 * MiB  # a small file, a big member
    out = tmp_path / "out"
    err, seconds, peak = refused_vh_single(capsys, release, out)
    assert err.startswith(f"builders: error: {release / '0_mmlb_data.tar.gz'}: member 'mmlb_data/{VH_FILE}'"), err
    assert message in err
    assert seconds < 60 and peak < 512 * MiB
    assert_left_nothing(out)


@pytest.mark.parametrize(
    ("size", "message"),
    [
        (2 * GiB, "2,147,483,648 bytes, which bring the archive's members to 2,1"),
        (128 * MiB, "134,217,728 bytes, over the 64 MiB that an image of this release can hold; not read"),
    ],
    ids=["2GiB", "128MiB"],
)
def test_an_image_member_past_its_bound_is_refused_before_a_byte_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture, mmlb_files: tuple[dict, dict], size: int, message: str
) -> None:
    texts, images = mmlb_files
    bombs = {k: Run(b"\0", size) if k == "vh/needle/0.jpg" else v for k, v in images.items()}
    release = mmlb_release(tmp_path / "release", texts, bombs)
    out = tmp_path / "out"
    err, seconds, peak = refused_vh_single(capsys, release, out)
    assert f"{release / '2_vh_image.tar.gz'}: member 'mmlb_image/vh/needle/0.jpg': {message}" in err, err
    assert peak < 256 * MiB and seconds < 60
    assert_left_nothing(out)


# -------------------------------------------------------------------------------------------- MileBench


def test_milebench_members_past_their_bounds_stop_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from builders.milebench.fixture import subset_files
    from builders.milebench.subsets import CONFIGS

    cfg = CONFIGS["action_localization"]
    files = {f"MileBench/{cfg.subset.name}/{k}": v for k, v in subset_files(cfg.subset).items()}
    annotation = f"MileBench/{cfg.subset.name}/{cfg.release_file}"
    cases = {
        "annotation": (
            {**files, annotation: Run(b" ", 128 * MiB)},
            f"member '{annotation}': 134,217,728 bytes, over the 64 MiB that an annotation file",
        ),
        # 6 MiB of noise make the archive big enough to inflate past the image bound (100 times its size).
        "image": (
            {
                **files,
                "MileBench/noise.bin": os.urandom(6 * MiB),
                **{k: Run(b"\0", 272 * MiB) for k in files if k.endswith(".jpg")},
            },
            "285,212,672 bytes, over the 256 MiB that an image of this release can hold",
        ),
    }
    for case, (members, message) in cases.items():
        release = tmp_path / case
        release.mkdir()
        tar_gz(release / f"MileBench_part{cfg.subset.archive}.tar.gz", sorted(members.items()))  # type: ignore[arg-type]
        out = tmp_path / f"out-{case}"
        code, err, seconds = build(
            capsys, "milebench", "--source", str(release), "--configs", cfg.name, "--out", str(out)
        )
        assert code == 2 and err.count("\n") == 0 and message in err, (case, err)
        assert seconds < 60
        assert_left_nothing(out)


# --------------------------------------------------------------------------------------------- MMNeedle


def test_mmneedle_hub_metadata_zip_bomb_is_refused_and_nothing_is_unpacked_outside_out(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, offline_hub: Path
) -> None:
    """The issue's 2 MiB metadata zip whose pool file inflates to 2 GiB: refused from its directory entry, before a
    byte is written; and a good zip's files are taken out into the build's work folder inside --out, not into the
    system's temporary folder."""
    import tempfile

    from builders.mmneedle import build as mmneedle_build
    from tests.support.builder_fixtures import write_coco
    from tests.support.hub_cache import fill_hub_cache
    from tests.support.mmneedle_metadata import write_metadata

    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))
    coco = tmp_path / "coco"
    write_coco(coco, count=50)
    meta = write_metadata(tmp_path / "repo") / "metadata_stitched"
    good = {f"metadata_stitched/{p.name}": p.read_bytes() for p in sorted(meta.iterdir())}
    bomb = zip_file(tmp_path / "bomb.zip", sorted({**good, "metadata_stitched/2_2.json": Run(b" ", 2 * GiB)}.items()))
    assert bomb.stat().st_size < 4 * MiB
    fill_hub_cache(offline_hub, "Wang-ML-Lab/MMNeedle", {"data/metadata_stitched.zip": bomb}, revision="bomb")
    common = ["--source", f"coco={coco}", "--configs", "m1_n2_k1", "--limit", "3"]
    out = tmp_path / "out"
    code, err, seconds = build(
        capsys, "mmneedle", *common, "--official-metadata", "hf://Wang-ML-Lab/MMNeedle@bomb", "--out", str(out)
    )
    assert code == 2 and err.count("\n") == 0, err
    assert "metadata_stitched.zip: member 'metadata_stitched/2_2.json': 2,147,483,648 bytes, over the 256 MiB" in err
    assert seconds < 60 and list(system_tmp.iterdir()) == []
    assert_left_nothing(out)

    opened = []
    real = mmneedle_build.OfficialMetadata

    def spy(folder: Path) -> object:
        opened.append(Path(folder))
        return real(folder)

    monkeypatch.setattr(mmneedle_build, "OfficialMetadata", spy)
    good_zip = zip_file(tmp_path / "good.zip", sorted(good.items()))
    fill_hub_cache(
        offline_hub, "Wang-ML-Lab/MMNeedle", {"data/metadata_stitched.zip": good_zip}, revision="good", commit="a" * 40
    )
    code, err, _ = build(
        capsys, "mmneedle", *common, "--official-metadata", "hf://Wang-ML-Lab/MMNeedle@good", "--out", str(out)
    )
    assert code == 0, err
    assert opened and all(folder.resolve().is_relative_to(out.resolve()) for folder in opened), opened
    assert list(system_tmp.iterdir()) == []


# ---------------------------------------------------------------------------------------------- LoCoVQA


def test_a_gzipped_mnist_file_that_inflates_to_2_gib_stops_at_its_bound(tmp_path: Path) -> None:
    from builders.locovqa.mnist import read_idx

    bomb = gzip_run(tmp_path / "train-images-idx3-ubyte.gz", Run(b"\0", 2 * GiB))
    assert bomb.stat().st_size < 4 * MiB
    with peak_memory() as peak:
        with pytest.raises(
            BuildError, match=r"\(gunzipped\): more than 134,217,728 bytes, over the 128 MiB that an MNIST IDX file"
        ):
            read_idx(bomb, 2051, 3)
    assert peak.bytes < 512 * MiB  # the bound's worth, not the 2 GiB an unbounded gunzip holds


# ------------------------------------------------------------------------------------------- the reader


def test_a_member_is_checked_against_its_declared_size_and_against_the_bytes_it_inflates_to(tmp_path: Path) -> None:
    small = Bound(MiB, "a test file")
    archive = tar_gz(tmp_path / "a.tar.gz", [("top/fits.bin", b"y" * MiB), ("top/big.bin", Run(b"x", 32 * MiB))])
    members = archive_files(archive)
    assert next(members).read(small) == b"y" * MiB  # exactly the bound: read
    with pytest.raises(BuildError, match=rf"^{archive}: member 'top/big\.bin': 33,554,432 bytes, over the 1 MiB"):
        next(members).read(small)
    # Members that are never read still inflate as the stream passes them: 100 times the archive, or 256 MiB.
    skipped = tar_gz(tmp_path / "s.tar.gz", [("top/junk.bin", Run(b"x", 2 * GiB)), ("top/a.bin", b"a")])
    with pytest.raises(BuildError, match=rf"^{skipped}: member 'top/junk\.bin': 2,147,483,648 bytes, which bring"):
        [member.name for member in archive_files(skipped)]
    # A zip entry that declares less than it holds is read no further than it declares (then its CRC fails);
    # one that declares more than the bound is refused unread.
    lying = zip_file(tmp_path / "lying.zip", [("a.bin", Run(b"x", 2 * GiB))], declared={"a.bin": 1000})
    lying_members = zip_files(lying)  # held: the zip is open while its generator is
    with pytest.raises(BuildError, match=rf"^{lying}: not a readable zip archive, damaged or cut short"):
        next(lying_members).read(small)
    honest = zip_file(tmp_path / "honest.zip", [("a.bin", Run(b"x", 2 * GiB))])
    honest_members = zip_files(honest)
    with pytest.raises(BuildError, match=r"member 'a\.bin': 2,147,483,648 bytes, over the 1 MiB that a test file"):
        next(honest_members).read(small)
    assert MMLB_IMAGE.most == 64 * MiB


def test_a_text_member_is_copied_within_its_line_bounds_at_c_speed() -> None:
    """Lines are counted and measured per block: the longest line across block edges, the line numbers named, and a
    million newlines refused in well under a second."""
    import io

    from builders.core.release_bounds import LineBound, copy_lines_bounded

    def copy(data: bytes, block: int = 4, line: int = 5) -> str:
        source, target = io.BytesIO(data), io.BytesIO()
        bounds = LineBound(Bound(line, "a line"), 10)
        try:
            copy_lines_bounded(lambda n: source.read(min(n, block)), target, bounds, Bound(100, "a file"), "F")
        except BuildError as err:
            return str(err).split(", over")[0].split("; not")[0]
        assert target.getvalue() == data
        return "copied"

    assert copy(b"ab\ncde\nfghij\n") == "copied"  # a line of exactly the bound, split across blocks
    assert copy(b"ab\ncdefgh\nx\n") == "F:2: more than 5 bytes"
    assert copy(b"abcdef\n") == "F:1: more than 5 bytes"
    assert copy(b"ab\ncd\nabcdefg") == "F:3: more than 5 bytes"  # the last line, with no newline
    assert copy(b"\n" * 10) == "copied"
    assert copy(b"\n" * 11) == "F: more than 10 lines, more than any file of this release holds"
    assert copy(b"abcd\n" * 25) == "F: more than 10 lines, more than any file of this release holds"
    assert copy(b"ab\n" * 9 + b"x" * 80, block=64, line=90) == "F: more than 100 bytes"
    start = time.perf_counter()
    source = io.BytesIO(b"\n" * (2 * MiB))
    with pytest.raises(BuildError, match="more than 1,000,000 lines"):
        copy_lines_bounded(source.read, io.BytesIO(), MMLB_JSONL, MMLB_TEXT_FILE, "F")
    assert time.perf_counter() - start < 1
