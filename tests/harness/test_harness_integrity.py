"""The harness verifies what it reads: data files against the build manifest, image bytes against their
row's hash (and that they decode before an API sees them), and journalled answers against their inputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq

from harness.api import Model, Response
from harness.sample_store import journal_name

TASK = "mmneedle_m1_n2_k1_pos"


def _copy_build(data_dir: Path, tmp_path: Path) -> Path:
    root = tmp_path / "data"
    shutil.copytree(data_dir / "mmneedle", root / "mmneedle")
    return root


def test_a_data_file_changed_after_the_build_is_refused(tmp_path: Path, data_dir: Path, harness) -> None:
    root = _copy_build(data_dir, tmp_path)
    args = ("--tasks", TASK, "--model", "constant", "--model_args", "answer=-1", "--data_dir", root)
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

    cache_responses = False

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


def test_image_bytes_that_do_not_match_their_row_are_invalid_input(tmp_path: Path, data_dir: Path, harness,
                                                                   edit_build) -> None:
    root = _copy_build(data_dir, tmp_path)

    def swap_first_two(images):
        images[0], images[1] = images[1], images[0]
        return images

    edit_build(root / "mmneedle", "m1_n2_k1", images=swap_first_two)  # rows 0 and 1 now hold each other's image
    from harness.models.registry import _REGISTRY, register_model

    register_model("test_reads_images")(ReadsImages)
    try:
        run = harness("--tasks", TASK, "--model", "test_reads_images", "--data_dir", root, "--output_path", tmp_path)
    finally:
        _REGISTRY.pop("test_reads_images")
    assert run.code == 0, run.err
    statuses = {s["doc_id"]: (s["status"], s.get("error") or "") for s in run.samples("test_reads_images", TASK)}
    assert statuses[0][0] == statuses[1][0] == "invalid_input"
    assert "not to the sha256 its row declares" in statuses[0][1]
    assert {statuses[i][0] for i in range(2, 12)} == {"ok"}


def test_openai_never_sends_an_image_that_does_not_decode(tmp_path: Path, data_dir: Path, harness,
                                                           broken_image) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from backends.chat_server import ChatServer

    root = _copy_build(data_dir, tmp_path)
    first = pq.read_table(next((root / "mmneedle" / "m1_n2_k1").glob("*.parquet"))).column("images")[0][0]
    broken = first["bytes"].as_py()[:200]  # a JPEG cut short: right magic number, no picture
    broken_image(root / "mmneedle", "m1_n2_k1", 0, broken)
    server = ChatServer(answer=lambda body: "-1")
    server.start()
    try:
        run = harness("--tasks", TASK, "--model", "openai", "--model_args", f"model=m,base_url={server.base_url}",
                      "--data_dir", root, "--output_path", tmp_path)
    finally:
        server.stop()
    assert run.code == 0, run.err
    samples = {s["doc_id"]: s for s in run.samples("openai__m", TASK)}
    assert samples[0]["status"] == "invalid_input" and "does not decode" in samples[0]["error"]
    assert len(server.received) == 11  # every other sample, and not the broken one


def test_a_journalled_answer_for_other_inputs_is_not_reused(tmp_path: Path, data_dir: Path, harness) -> None:
    args = ("--tasks", TASK, "--model", "constant", "--model_args", "answer=-1", "--data_dir", data_dir,
            "--output_path", tmp_path)
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
