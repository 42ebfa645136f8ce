"""The harness verifies what it reads: data files against the build manifest, image bytes against their
row's hash (and that they decode before an API sees them), and journalled answers against their inputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.api import Model, ModelFacts, Response
from harness.running.journal.journal_file import journal_name
from tests.support.paths import PROJECT
from tests.support.run_setups import registered_model, run_args

TASK = "mmneedle_m1_n2_k1_pos"


def _copy_build(data_dir: Path, tmp_path: Path) -> Path:
    root = tmp_path / "data"
    shutil.copytree(data_dir / "mmneedle", root / "mmneedle")
    return root


def _minus_one(data_dir: Path, out: Path | None = None) -> tuple[str, ...]:
    """The arguments of a run of TASK by the constant model answering -1, on `data_dir`, into `out`."""
    return run_args(TASK, "constant", model_args="answer=-1", data_dir=data_dir, out=out)


def _swap_first_two(images: list) -> list:
    """Rows 0 and 1 given each other's image (their declared hashes kept)."""
    images[0], images[1] = images[1], images[0]
    return images


def test_a_data_file_changed_after_the_build_is_refused(tmp_path: Path, data_dir: Path, harness) -> None:
    root = _copy_build(data_dir, tmp_path)
    args = _minus_one(root)
    first = harness(*args, "--output_path", tmp_path / "out")
    assert first.code == 0, first.err
    verified = first.results("constant")["datasets"][TASK]["verified_files"]
    assert [v["path"] for v in verified] == [f"m1_n2_k1/{p.name}" for p in (root / "mmneedle" / "m1_n2_k1").iterdir()]
    (shard,) = (root / "mmneedle" / "m1_n2_k1").glob("*.parquet")
    data = bytearray(shard.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 16] = bytes(255 - b for b in data[middle : middle + 16])  # same size, other bytes
    shard.write_bytes(bytes(data))
    run = harness(*args)
    assert run.code == 2 and "Traceback" not in run.err
    assert f"{shard}: sha256 " in run.err and "does not match the build manifest" in run.err


class ReadsImages(Model):
    """Reads every image's bytes as a backend does before sending them; answers -1."""

    _facts = ModelFacts(cache_responses=False)

    @classmethod
    def from_args(cls, args, *, batch_size=1, max_batch_tokens=None):
        return cls()

    def generate(self, requests):
        out = []
        for request in requests:
            try:
                for image in request.images:
                    image.data()
            except ValueError as err:
                out.append(Response(None, error=f"invalid_input: {err}"))
                continue
            out.append(Response("-1"))
        return out


def test_image_bytes_that_do_not_match_their_row_are_invalid_input(
    tmp_path: Path, data_dir: Path, harness, edit_build
) -> None:
    root = _copy_build(data_dir, tmp_path)
    edit_build(root / "mmneedle", "m1_n2_k1", images=_swap_first_two)  # rows 0 and 1 now hold each other's image
    with registered_model("test_reads_images", ReadsImages):
        run = harness(*run_args(TASK, "test_reads_images", data_dir=root, out=tmp_path))
    assert run.code == 0, run.err
    statuses = {s["doc_id"]: (s["status"], s.get("error") or "") for s in run.samples("test_reads_images", TASK)}
    assert statuses[0][0] == statuses[1][0] == "invalid_input"
    assert "not to the sha256 its row declares" in statuses[0][1]
    assert {statuses[i][0] for i in range(2, 12)} == {"ok"}


def test_openai_never_sends_an_image_that_does_not_decode(
    tmp_path: Path, data_dir: Path, harness, broken_image
) -> None:
    from tests.support.chat_server import ChatServer

    root = _copy_build(data_dir, tmp_path)
    first = pq.read_table(next((root / "mmneedle" / "m1_n2_k1").glob("*.parquet"))).column("images")[0][0]
    broken = first["bytes"].as_py()[:200]  # a JPEG cut short: right magic number, no picture
    broken_image(root / "mmneedle", "m1_n2_k1", 0, broken)
    server = ChatServer(answer=lambda body: "-1")
    server.start()
    try:
        run = harness(
            *run_args(TASK, "openai", model_args=f"model=m,base_url={server.base_url}", data_dir=root, out=tmp_path)
        )
    finally:
        server.stop()
    assert run.code == 0, run.err
    samples = {s["doc_id"]: s for s in run.samples("openai__m", TASK)}
    assert samples[0]["status"] == "invalid_input" and "does not decode" in samples[0]["error"]
    assert len(server.received) == 11  # every other sample, and not the broken one


def test_a_journalled_answer_for_other_inputs_is_not_reused(tmp_path: Path, data_dir: Path, harness) -> None:
    args = _minus_one(data_dir, tmp_path)
    assert harness(*args).code == 0
    journal = tmp_path / "constant" / journal_name(TASK)
    lines = journal.read_text().splitlines()
    record = json.loads(lines[3])
    record["input_sha256"] = "0" * 64  # as if answered for a prompt or image the row no longer has
    journal.write_text("\n".join([*lines[:3], json.dumps(record), *lines[4:]]) + "\n")
    again = harness(*args)
    assert again.code == 0, again.err
    assert "1 journalled samples were answered for other inputs" in again.err
    assert "11 samples resumed from the journal, 1 generated now" in again.err


# --- the verified bytes are the bytes read (issue 17, item 2) -------------------------------------------------


def test_a_run_reads_the_verified_parquet_files_and_writes_no_arrow_cache(
    tmp_path: Path, data_dir: Path, toy_shared_dir: Path, toy_tasks: Path, harness, monkeypatch
) -> None:
    import datasets

    cache = tmp_path / "hf_datasets_cache"
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", cache)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(cache))
    # embedded images (MMNeedle), and images stored once in an image table (the toy's shared build)
    with registered_model("test_reads_images", ReadsImages):
        embedded = harness(*run_args(TASK, "test_reads_images", data_dir=data_dir, out=tmp_path / "a"))
        toy = {"include_path": toy_tasks, "data_dir": toy_shared_dir, "out": tmp_path / "b"}
        shared = harness(*run_args("toy_colors,toy_pairs", "test_reads_images", **toy))
    assert embedded.code == 0 and shared.code == 0, embedded.err + shared.err
    assert {s["status"] for s in embedded.samples("test_reads_images", TASK)} == {"ok"}
    assert {s["status"] for s in shared.samples("test_reads_images", "toy_pairs")} == {"ok"}
    assert not cache.exists() or not any(cache.rglob("*")), sorted(cache.rglob("*"))
    verified = shared.results("test_reads_images")["datasets"]["toy_pairs"]
    assert verified["verification"] == "verified" and verified["verified_files"] == [
        {"path": f["path"], "sha256": f["sha256"]}
        for f in json.loads((toy_shared_dir / "toy" / "build_manifest.json").read_text())["configs"]["pairs"]["files"]
    ]


def test_a_file_changed_in_place_with_its_times_restored_is_still_caught(
    tmp_path: Path, data_dir: Path, harness
) -> None:
    import os

    root = _copy_build(data_dir, tmp_path)
    args = _minus_one(root)
    assert harness(*args).code == 0  # hashed once, and remembered by the file's identity
    (shard,) = (root / "mmneedle" / "m1_n2_k1").glob("*.parquet")
    before = shard.stat()
    with open(shard, "r+b") as file:  # one byte of the middle, in place: same inode, same size
        file.seek(before.st_size // 2)
        byte = file.read(1)
        file.seek(before.st_size // 2)
        file.write(bytes([byte[0] ^ 0xFF]))
    os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns))  # its times set back as they were
    assert (shard.stat().st_size, shard.stat().st_mtime_ns, shard.stat().st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )
    run = harness(*args)
    assert run.code == 2 and f"{shard}: sha256 " in run.err and "does not match the build manifest" in run.err


def test_rows_and_images_are_read_from_the_bytes_that_were_hashed(tmp_path: Path, data_dir: Path) -> None:
    import hashlib
    import os

    from harness.inputs.integrity import open_files
    from harness.inputs.parquet_split import SplitFiles

    root = _copy_build(data_dir, tmp_path)
    (shard,) = (root / "mmneedle" / "m1_n2_k1").glob("*.parquet")
    original = shard.read_bytes()
    (file,) = open_files([shard])
    assert file.sha256 == hashlib.sha256(original).hexdigest()
    other = tmp_path / "other.parquet"  # another build's rows, put in its place after the hash
    pq.write_table(pq.read_table(shard).slice(0, 3), other)
    os.replace(other, shard)
    split = SplitFiles([file], str(root))
    rows = sum(piece.num_rows for piece in split.batches())
    assert rows == pq.read_metadata(pa_buffer(original)).num_rows == 24
    assert (
        split.image_bytes("images", 5, 0) == pq.read_table(pa_buffer(original)).column("images")[5][0]["bytes"].as_py()
    )

    (file,) = open_files([shard])
    split = SplitFiles([file], str(root))
    with open(shard, "r+b") as handle:  # written in place once hashed: its images are no longer read
        handle.write(b"PAR9")  # (rewriting its "PAR1" as it was would change its metadata only: still verified)
    with pytest.raises(ValueError, match="changed while the run read it"):
        split.image_bytes("images", 0, 0)


def pa_buffer(data: bytes):
    import pyarrow as pa

    return pa.BufferReader(data)


# --- data that cannot be verified is refused unless trusted (issue 17, item 3) ----------------------------------


def _manifest(root: Path) -> dict:
    return json.loads((root / "mmneedle" / "build_manifest.json").read_text())


def _write_manifest(root: Path, manifest: dict) -> None:
    (root / "mmneedle" / "build_manifest.json").write_text(json.dumps(manifest))


def _no_sha256(manifest: dict) -> None:
    del manifest["configs"]["m1_n2_k1"]["files"][0]["sha256"]


def _files_x(manifest: dict) -> None:
    manifest["configs"]["m1_n2_k1"]["files"] = "x"


def _outside(manifest: dict) -> None:
    manifest["configs"]["m1_n2_k1"]["files"][0]["path"] = "../../outside.parquet"


def _configs_list(manifest: dict) -> None:
    manifest["configs"] = ["m1_n2_k1"]


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (None, "no build manifest (build_manifest.json)"),
        (_no_sha256, "configs.m1_n2_k1.files[0].sha256: expected 64 lowercase hex digits, got nothing"),
        (_files_x, "configs.m1_n2_k1.files: expected a list of files, got 'x'"),
        (_outside, "configs.m1_n2_k1.files[0].path: '../../outside.parquet' is not a path inside the build folder"),
        (_configs_list, "configs: expected an object naming each config"),
    ],
)
@pytest.mark.slow  # two harness runs a case
def test_unverifiable_data_is_refused_in_one_line_unless_trusted(
    tmp_path: Path, data_dir: Path, harness, damage, said: str
) -> None:
    root = _copy_build(data_dir, tmp_path)
    folder = (root / "mmneedle").resolve()
    if damage is None:
        (folder / "build_manifest.json").unlink()
    else:
        manifest = _manifest(root)
        damage(manifest)
        _write_manifest(root, manifest)
    args = _minus_one(root, tmp_path / "out")
    refused = harness(*args)
    assert refused.code == 2 and "Traceback" not in refused.err
    (line,) = refused.err.splitlines()
    assert line.startswith(f"harness: error: {folder}: cannot verify this data: ") and said in line, line
    assert line.endswith("or pass --trust_unverified_data to read it unverified")

    trusted = harness(*args, "--trust_unverified_data")
    assert trusted.code == 0, trusted.err
    data = trusted.results("constant")["datasets"][TASK]
    assert data["verification"] == "unverified" and said in data["unverified_reason"]
    assert [f["path"] for f in data["unverified_files"]] == [
        f"m1_n2_k1/{p.name}" for p in (folder / "m1_n2_k1").iterdir()
    ]
    assert trusted.results("constant")["config"]["trust_unverified_data"] is True
    report = harness("report", tmp_path / "out")
    assert report.code == 0, report.err
    text = (tmp_path / "out" / "report.md").read_text()
    assert (
        f"> - unverified data ({data['unverified_reason']}), read with --trust_unverified_data (1 of 1 tasks)" in text
    )
    assert f"| D1 | `{folder}` **unverified** |" in text


def test_a_data_file_the_manifest_does_not_list_is_not_read_as_verified(
    tmp_path: Path, data_dir: Path, harness
) -> None:
    root = _copy_build(data_dir, tmp_path)
    (shard,) = (root / "mmneedle" / "m1_n2_k1").glob("*.parquet")
    extra = root / "mmneedle" / "extra" / "test-00000-of-00001.parquet"
    extra.parent.mkdir()
    extra.write_bytes(shard.read_bytes())
    task = tmp_path / "t.yaml"
    template = PROJECT / "tasks" / "mmneedle" / "_pos_k1.yaml"
    task.write_text(
        f"include: {template}\ntask: extra_pos\ndataset_name: m1_n2_k1\n"
        "dataset_kwargs:\n  data_files:\n    test: [extra/*.parquet]\n"
    )
    args = run_args(str(task), "constant", model_args="answer=-1", data_dir=root)
    refused = harness(*args)
    assert refused.code == 2 and f"the build manifest does not list {extra}" in refused.err
    assert harness(*args, "--trust_unverified_data").code == 0


# --- the response cache never answers for images that were not verified (issue 17, item 4) ----------------------


class ReadsImagesCached(ReadsImages):
    """`ReadsImages` behind the response cache, as real backends are."""

    _facts = ModelFacts(cache_responses=True)


def test_the_response_cache_answers_only_for_verified_images(
    tmp_path: Path, data_dir: Path, harness, edit_build, broken_image
) -> None:
    root = _copy_build(data_dir, tmp_path)
    args = (*run_args(TASK, "test_reads_images_cached", data_dir=root), "--cache_dir", tmp_path / "c")
    with registered_model("test_reads_images_cached", ReadsImagesCached):
        first = harness(*args, "--output_path", tmp_path / "first")
        assert first.code == 0, first.err
        assert first.results("test_reads_images_cached")["config"]["requests_sent"] == 12
        edit_build(root / "mmneedle", "m1_n2_k1", images=_swap_first_two)  # row hashes kept: bytes now wrong
        shard = next((root / "mmneedle" / "m1_n2_k1").glob("*.parquet"))
        cut = pq.read_table(shard).column("images")[2][0]["bytes"].as_py()[:200]
        broken_image(root / "mmneedle", "m1_n2_k1", 2, cut)  # hash declared to match: only decoding tells
        again = harness(*args, "--output_path", tmp_path / "again")
    assert again.code == 0, again.err
    samples = {s["doc_id"]: s for s in again.samples("test_reads_images_cached", TASK)}
    assert [samples[i]["status"] for i in range(3)] == ["invalid_input"] * 3
    assert "not to the sha256 its row declares" in samples[0]["error"] and "does not decode" in samples[2]["error"]
    assert {samples[i]["status"] for i in range(3, 12)} == {"ok"}
    config = again.results("test_reads_images_cached")["config"]
    assert (config["cache_hits"], config["requests_sent"]) == (9, 0)  # the others from the cache, nothing sent


def test_an_image_larger_than_its_row_declares_is_never_decoded(
    tmp_path: Path, data_dir: Path, harness, broken_image, monkeypatch
) -> None:
    """Issue 106, item 3: row 0's image replaced by a 2,000 x 2,000 PNG, its sha256 declared to match and its
    `image_sizes` left at 512 x 512: its header is read against the row's size before a pixel is decoded, and its
    sample is `invalid_input` in one line (before, it was decoded whole, and scored: 2.4 GB at 12,000 x 12,000)."""
    import io

    from PIL import Image, ImageFile

    root = _copy_build(data_dir, tmp_path)
    png = io.BytesIO()
    Image.new("L", (2000, 2000)).save(png, "PNG")
    broken_image(root / "mmneedle", "m1_n2_k1", 0, png.getvalue())
    decoded: list[tuple[int, int]] = []
    load = ImageFile.ImageFile.load
    monkeypatch.setattr(ImageFile.ImageFile, "load", lambda image: decoded.append(image.size) or load(image))
    with registered_model("test_reads_images_cached", ReadsImagesCached):  # decoded before the cache is asked
        run = harness(*run_args(TASK, "test_reads_images_cached", data_dir=root, out=tmp_path / "out"))
    assert run.code == 0, run.err
    samples = {s["doc_id"]: s for s in run.samples("test_reads_images_cached", TASK)}
    assert samples[0]["status"] == "invalid_input" and samples[0]["error"].endswith(
        "its header says 2000 x 2000, where its row's image_sizes declares 512 x 512; not decoded"
    )
    assert {samples[i]["status"] for i in range(1, 12)} == {"ok"}
    assert decoded and (2000, 2000) not in decoded  # the others decoded; it never was


def test_an_image_past_the_stated_bound_is_not_read(
    tmp_path: Path, data_dir: Path, harness, edit_table, monkeypatch
) -> None:
    """Issue 106, item 2, for an image: a row group storing more of an image column than the harness reads of one at
    once (`ROW_GROUP_MOST`, lowered to 1 MiB here; row 0's image 1.4 MiB of noise, its sha256 and size declared, row
    groups of one row) is not read: its sample is `invalid_input` in one line naming the column and the row, from the
    file's metadata; the other rows' images are read."""
    import hashlib
    import io
    import random

    from PIL import Image

    from builders.core import contract
    from harness.inputs import parquet_split

    monkeypatch.setattr(parquet_split, "ROW_GROUP_MOST", contract.MiB, raising=False)
    png = io.BytesIO()
    Image.frombytes("L", (1200, 1200), random.Random(0).randbytes(1200 * 1200)).save(png, "PNG")
    data = png.getvalue()

    def edit(table):
        rows = table.to_pylist()
        rows[0]["images"][0]["bytes"], rows[0]["image_sha256"] = data, [hashlib.sha256(data).hexdigest()]
        rows[0]["image_sizes"] = [[1200, 1200]]
        return pa.Table.from_pylist(rows, schema=table.schema)

    root = _copy_build(data_dir, tmp_path)
    shard = edit_table(root / "mmneedle", "m1_n2_k1", edit, row_group_size=1)
    with registered_model("test_reads_images", ReadsImages):
        run = harness(*run_args(TASK, "test_reads_images", data_dir=root, out=tmp_path / "out"))
    assert run.code == 0, run.err
    samples = {s["doc_id"]: s for s in run.samples("test_reads_images", TASK)}
    assert samples[0]["status"] == "invalid_input" and samples[0]["error"] == (
        f"invalid_input: {shard}: row 0: column 'images' holds 1.4 MiB decoded (Parquet's count), past the 1 MiB "
        "the harness reads of one row group at once; nothing of it was read"
    )
    assert {samples[i]["status"] for i in range(1, 12)} == {"ok"}


def test_an_input_policys_scaled_images_are_checked_through_their_source(
    tmp_path: Path, data_dir: Path, harness, edit_build, monkeypatch
) -> None:
    """A scaled image's key names its source's sha256 and the scale; its source's bytes are what is checked."""
    from harness.inputs.input_policy import InputPolicy, TaskRule
    from harness.models import aliases

    root = _copy_build(data_dir, tmp_path)
    rule = TaskRule((TASK,), InputPolicy.of(image_scale=0.5), "a test of the mechanism")
    monkeypatch.setitem(aliases.ALIASES, "half-size", aliases.Alias("test_reads_images_cached", {}, rules=(rule,)))
    args = (*run_args(TASK, "half-size", data_dir=root), "--cache_dir", tmp_path / "c")
    with registered_model("test_reads_images_cached", ReadsImagesCached):
        first = harness(*args, "--output_path", tmp_path / "first")
        assert first.code == 0, first.err
        assert {s["status"] for s in first.samples("test_reads_images_cached", TASK)} == {"ok"}
        edit_build(root / "mmneedle", "m1_n2_k1", images=_swap_first_two)
        again = harness(*args, "--output_path", tmp_path / "again")
    assert again.code == 0, again.err
    statuses = [s["status"] for s in sorted(again.samples("test_reads_images_cached", TASK), key=lambda s: s["doc_id"])]
    assert statuses == ["invalid_input"] * 2 + ["ok"] * 10
    config = again.results("test_reads_images_cached")["config"]
    assert (config["cache_hits"], config["requests_sent"]) == (10, 0)
