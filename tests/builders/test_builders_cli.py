"""The `builders` command line: list, build, push --dry-run, and exit code 2 on bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from builders.cli import main
from builders.core.benchmark import benchmark_names
from tests.support.builder_fixtures import coco_file_name, run_builders, write_coco

NAMES = ", ".join(benchmark_names())  # the installed benchmarks, as the messages list them
ONE_ROW_M1 = ("--configs", "m1_n2_k1", "--limit", "1", "--num-proc", "1", "--quiet")  # m1_n2_k1 at --limit 1, quietly


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_user_error(result: tuple[int, str, str], *fragments: str) -> None:
    code, _, err = result
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("builders: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list")
    assert code == 0
    assert "mmneedle: 21 configs" in out and "m10_n8_k5" in out and "m1_n2_k1" in out


def test_build_and_load(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(
        capsys, "build", "mmneedle", "--source", "synthetic", "--configs", "m1_n2_k1,m10_n1_k2", "--limit", "2",
        "--num-proc", "1", "--quiet", "--out", str(tmp_path),
    )  # fmt: skip
    assert code == 0
    assert "m1_n2_k1: 4 rows (2 positive, 2 negative)" in out and "m10_n1_k2: 4 rows" in out
    assert f"built {tmp_path / 'mmneedle'}" in out
    import datasets

    ds = datasets.load_dataset(str(tmp_path / "mmneedle"), "m10_n1_k2", split="test", cache_dir=str(tmp_path / "cache"))
    assert ds.num_rows == 4 and ds[3]["answer"] == "-1; -1"


def test_bad_input_exits_2_with_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    build = ("build", "mmneedle", "--quiet", "--num-proc", "1", "--limit", "1", "--out", out)
    assert_user_error(run(capsys, *build, "--configs", "m10_n8_k3"), "unknown config(s) m10_n8_k3", "valid: m1_n2_k1")
    assert_user_error(
        run(capsys, *build, "--source", "synthetic:600", "--configs", "m10_n8_k1"),
        "600 images",
        "at least 641",
    )
    assert_user_error(run(capsys, *build, "--source", f"coco={tmp_path / 'none'}"), "COCO source folder not found")

    coco = tmp_path / "coco"
    write_coco(coco, count=12)
    captions = coco / "annotations" / "captions_val2014.json"
    doc = json.loads(captions.read_text())
    doc["annotations"] = [a for a in doc["annotations"] if a["image_id"] != 500 + 4]
    captions.write_text(json.dumps(doc))
    assert_user_error(run(capsys, *build, "--source", f"coco={coco}"), "have no caption", coco_file_name(4))
    captions.write_text("[")
    assert_user_error(
        run(capsys, *build, "--source", f"coco={coco}"), "malformed caption file", "captions_val2014.json"
    )
    captions.unlink()
    assert_user_error(run(capsys, *build, "--source", f"coco={coco}"), "caption file not found")

    broken = tmp_path / "broken"
    write_coco(broken, count=12)
    for i in range(12):  # every image broken, so whichever is decoded first is named
        (broken / "val2014" / coco_file_name(i)).write_bytes(b"junk")
    assert_user_error(
        run(capsys, *build, "--source", f"coco={broken}", "--configs", "m1_n2_k1"),
        "unreadable image:",
        "COCO_val2014_",
    )
    assert not (tmp_path / "out" / "mmneedle").exists()

    assert run(capsys, *build, "--configs", "m1_n2_k1")[0] == 0
    assert_user_error(
        run(capsys, *build, "--configs", "m1_n2_k1", "--seed", "1"),
        "already holds a different build",
        "seed: 0 -> 1",
        "--overwrite",
    )
    assert run(capsys, *build, "--configs", "m1_n2_k1", "--seed", "1", "--overwrite")[0] == 0
    assert_user_error(run(capsys, *build, "--limit", "0"), "--limit must be at least 1")


@pytest.mark.slow  # the builders command in a child process
def test_console_script_exit_code(tmp_path: Path) -> None:
    result = run_builders("build", "mmneedle", "--configs", "nope", "--out", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and "unknown config(s) nope" in result.stderr


def build_one_row_config(capsys: pytest.CaptureFixture[str], out: Path) -> None:
    code, _, err = run(capsys, "build", "mmneedle", *ONE_ROW_M1, "--out", str(out))
    assert code == 0, err


def test_push_dry_run_lists_the_upload(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    build_one_row_config(capsys, tmp_path)
    folder = tmp_path / "mmneedle"
    code, out, err = run(capsys, "push", str(folder), "--repo", "acme/mmneedle", "--tag", "v1.2.3", "--dry-run")
    assert code == 0, err
    manifest = json.loads((folder / "build_manifest.json").read_text())
    parquet = manifest["configs"]["m1_n2_k1"]["files"][0]
    lines = out.splitlines()
    assert (
        lines[0].startswith(f"would push {folder} to ")
        and "datasets/acme/mmneedle (public), then tag v1.2.3" in lines[0]
    )
    listed = [line.split()[0] for line in lines[1:4]]
    assert listed == ["README.md", parquet["path"], "build_manifest.json"]
    assert "3 files" in out and "*.parquet" in out
    code, out, _ = run(
        capsys,
        "push",
        str(folder),
        "--repo",
        "acme/mmneedle",
        "--tag",
        "v2.0.0-rc.1",
        "--private",
        "--dry-run",
    )
    assert code == 0 and "(private)" in out


def test_push_rejects_bad_arguments_and_incomplete_folders(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    build_one_row_config(capsys, tmp_path)
    folder = str(tmp_path / "mmneedle")
    push = ("push", folder, "--dry-run")
    assert_user_error(run(capsys, *push, "--repo", "acme/mmneedle", "--tag", "1.0.0"), "bad --tag '1.0.0'", "v1.0.0")
    assert_user_error(run(capsys, *push, "--repo", "acme/mmneedle", "--tag", "v1.0"), "bad --tag")
    assert_user_error(run(capsys, *push, "--repo", "mmneedle", "--tag", "v1.0.0"), "bad --repo 'mmneedle'", "ORG/NAME")
    shard = next((tmp_path / "mmneedle" / "m1_n2_k1").glob("*.parquet"))
    shard.write_bytes(shard.read_bytes()[:-10])
    assert_user_error(
        run(capsys, *push, "--repo", "acme/mmneedle", "--tag", "v1.0.0"), "not a complete build", shard.name
    )
    shard.unlink()
    assert_user_error(
        run(capsys, *push, "--repo", "acme/mmneedle", "--tag", "v1.0.0"), "not a complete build", "is missing"
    )
    (tmp_path / "mmneedle" / "build_manifest.json").unlink()
    assert_user_error(
        run(capsys, *push, "--repo", "acme/mmneedle", "--tag", "v1.0.0"), "build_manifest.json is missing"
    )
    assert_user_error(
        run(capsys, "push", str(tmp_path / "nowhere"), "--repo", "a/b", "--tag", "v1.0.0"),
        "dataset folder not found",
    )


def test_missing_coco_images_are_counted_and_too_many_stop_the_build(capsys, tmp_path: Path) -> None:
    coco = tmp_path / "coco"
    write_coco(coco, count=48)
    (coco / "val2014" / coco_file_name(7)).unlink()  # captioned, but not downloaded
    build = ("build", "mmneedle", "--source", f"coco={coco}", *ONE_ROW_M1, "--out", str(tmp_path / "out"))
    assert_user_error(
        run(capsys, *build), "1 of the 48 captioned images", coco_file_name(7), "97.9% present", "--min-image-coverage"
    )
    code, _, err = run(capsys, *build, "--min-image-coverage", "0.9")
    assert code == 0
    assert f"warning: 1 of the 48 captioned images are missing from {coco / 'val2014'}" in err
    manifest = json.loads((tmp_path / "out" / "mmneedle" / "build_manifest.json").read_text())
    assert manifest["request"]["source"]["missing_images"] == 1


def _builders_in_subprocess(tmp_path: Path, out: Path, prelude: str) -> subprocess.CompletedProcess[str]:
    script = (
        f"import sys\n{prelude}\nfrom builders.cli import main\n"
        f"sys.exit(main(['build', 'mmneedle', '--configs', 'm10_n2_k1', '--limit', '4', '--num-proc', '1', "
        f"'--quiet', '--out', {str(out)!r}]))\n"
    )
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)


@pytest.mark.slow  # the builders command in a child process
def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    # A real write failure: the process may not grow a file past 300 kB (EFBIG, as a full disk's ENOSPC).
    out = tmp_path / "out"
    prelude = (
        "import resource, signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, 300_000))"
    )
    result = _builders_in_subprocess(tmp_path, out, prelude)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("builders: error: ") and "File too large (over the file size limit)" in line
    assert "nothing that looks like a complete dataset" in line
    assert not out.exists()  # no staging folder, no dataset, not even the folder the build made


@pytest.mark.slow  # the builders command in a child process
def test_a_read_only_output_folder_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    if os.geteuid() == 0:  # root writes through permission bits: make the folder immutable instead
        if subprocess.run(["chattr", "+i", str(out)], capture_output=True).returncode != 0:
            pytest.skip("chattr +i is not available to make a folder read-only for root")
    else:
        out.chmod(0o555)
    try:
        result = _builders_in_subprocess(tmp_path, out, "")
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(out)], check=False)
        out.chmod(0o755)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("builders: error: ") and str(out) in line and "Traceback" not in result.stderr


def test_list_takes_one_benchmark_and_names_the_closest_to_a_wrong_one(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 54 item 8: `builders list mmlongbench` was a usage error of `builders`, not `builders list`'s."""
    code, out, _ = run(capsys, "list", "mmlongbench")
    assert code == 0 and out.startswith("mmlongbench: ") and "niah_vh_single_128k" in out
    assert not [line for line in out.splitlines() if not line.startswith(("mmlongbench: ", "  "))]
    assert_user_error(
        run(capsys, "list", "mmlongbnch"),
        "unknown benchmark 'mmlongbnch'; did you mean mmlongbench",
        f"(the benchmarks are {NAMES})",
    )
    # Nothing close: the names, without the stray "; " the missing suggestion left.
    assert run(capsys, "list", "bogus")[2].splitlines() == [
        f"builders: error: unknown benchmark 'bogus' (the benchmarks are {NAMES})"
    ]


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["build", "mmneedle"], "the following arguments are required: --out (see builders build mmneedle --help)"),
        (["build", "mmneedle", "--out", "x", "--limit", "x"], "argument --limit: invalid int value: 'x' (see builders "
         "build mmneedle --help)"),
        (["build", "nope"], "argument benchmark: invalid choice: 'nope' (choose from "
         + ", ".join(f"'{name}'" for name in benchmark_names()) + ") (see builders build --help)"),
        (["push", "x"], "the following arguments are required: --repo, --tag (see builders push --help)"),
        (["list", "a", "b"], "unrecognized arguments: b"),
        (["bogus"], "argument {list,build,push}: invalid choice: 'bogus' (choose from 'list', 'build', 'push')"),
    ],
)  # fmt: skip
def test_a_usage_mistake_is_one_line_naming_the_commands_help(
    capsys: pytest.CaptureFixture[str], argv: list[str], reason: str
) -> None:
    """Issue 54 item 11's leftovers: argparse printed the command's usage (12 lines for `builders build mmneedle`)
    before `builders build mmneedle: error: ...`, where every other mistake is one line `builders: error: ...`."""
    code, out, err = run(capsys, *argv)
    assert (code, out, err.splitlines()) == (2, "", [f"builders: error: {reason}"])


@pytest.mark.parametrize(("argv", "usage"), [([], "usage: builders [-h]"), (["build"], "usage: builders build [-h]")])
def test_builders_alone_prints_its_help(capsys: pytest.CaptureFixture[str], argv: list[str], usage: str) -> None:
    """As `harness` alone (and lm-eval's `lm-eval`, `lm-eval run`): it was argparse's usage and `the following
    arguments are required: {list,build,push}` (of `builders build`: `benchmark, options`), exit 2."""
    code, out, err = run(capsys, *argv)
    assert code == 0 and out.startswith(usage) and err == ""


@pytest.mark.parametrize("offline", [True, False])
def test_push_without_the_hub_is_one_line_saying_what_to_do(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offline: bool
) -> None:
    """Issue 54 item 11: offline, `builders push` said only `[Errno -2] Name or service not known`, after the list of
    the files it would upload."""
    from huggingface_hub import constants

    build_one_row_config(capsys, tmp_path)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens there: refused at once
    code, out, err = run(capsys, "push", str(tmp_path / "mmneedle"), "--repo", "acme/mmneedle", "--tag", "v1.0.0")
    warned = "\n".join(line for line in err.splitlines() if not line.startswith("warning:"))  # its stand-in data
    expected = (
        ["push to acme/mmneedle failed: HF_HUB_OFFLINE=1 forbids talking to the Hub; unset it and push again"]
        if offline
        else [
            "push to acme/mmneedle failed: the Hub (http://127.0.0.1:9) cannot be reached (",
            "connect to the network (or point HF_ENDPOINT at a mirror) and push again (nothing was tagged)",
        ]
    )
    assert_user_error((code, out, warned), *expected)
    assert out == ""  # the plan's file list is --dry-run's output; a push that failed says only why


def test_a_push_the_hub_takes_says_what_it_pushed_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file list is --dry-run's; a push prints its outcome: the commit, the tag, the files and their size. The Hub
    is not on this machine: its three calls are recorded instead, with what the push asked of each."""
    from types import SimpleNamespace

    from huggingface_hub import HfApi

    from builders.core.estimate import human_bytes

    build_one_row_config(capsys, tmp_path)
    calls: list[tuple[str, dict[str, object]]] = []
    commit = "0123456789abcdef0123456789abcdef01234567"
    monkeypatch.setattr(HfApi, "create_repo", lambda self, repo, **kw: calls.append(("create_repo", kw)))
    monkeypatch.setattr(
        HfApi, "upload_folder", lambda self, **kw: calls.append(("upload", kw)) or SimpleNamespace(oid=commit)
    )
    monkeypatch.setattr(HfApi, "create_tag", lambda self, repo, **kw: calls.append(("create_tag", kw)))
    code, out, err = run(capsys, "push", str(tmp_path / "mmneedle"), "--repo", "acme/mmneedle", "--tag", "v1.0.0")
    assert code == 0, err
    assert [name for name, _ in calls] == ["create_repo", "upload", "create_tag"] and calls[2][1]["revision"] == commit
    uploaded = calls[1][1]["allow_patterns"]
    assert isinstance(uploaded, list) and len(uploaded) == 3
    size = sum((tmp_path / "mmneedle" / path).stat().st_size for path in uploaded)
    assert out.splitlines() == [f"pushed acme/mmneedle at commit {commit}, tagged v1.0.0: 3 files, {human_bytes(size)}"]


@pytest.mark.parametrize("keyword", ["out", "quiet"])
def test_the_python_api_refuses_the_commands_own_options(tmp_path: Path, keyword: str) -> None:
    """`--out` and `--quiet` are the command's: the API takes the folder as an argument and `progress`, so a keyword
    of theirs is a mistake, not a setting silently dropped."""
    from builders.mmneedle.build import MMNeedleBuild

    with pytest.raises(TypeError, match=keyword):
        MMNeedleBuild.build(tmp_path, dry_run=True, **{keyword: "x"})
    assert not any(tmp_path.iterdir())
