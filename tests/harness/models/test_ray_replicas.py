"""Replicas of a model on Ray (`harness.models.backends.replicas`) through the `harness` command, on the session's local Ray
cluster (`ray_cluster`): 1 replica in this process and 2 and 3 on Ray write the same results file (what says how and
when the run was made aside) and the same journal line for every sample; a replica killed mid-batch (SIGKILL of its
worker process, as `kill -9`) is restarted and its batch runs again, the results still the same; a replica that
cannot load its model stops the run with one line. The images reach the replicas both ways: read from the build by
the replicas (embedded images and a shared image table), or as bytes through Ray's object store."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import PROJECT

# What differs between a run in one process and a run on replicas: how it was asked for and when it ran.
POOL_ARGS = ("data_parallel_size", "replica_data")
RUN_FIELDS = (
    ("config", "argv"),
    ("config", "cache"),
    ("config", "backend_stats", "replicas"),
    ("date",),
    ("start_time",),
    ("end_time",),
    ("total_evaluation_time_seconds",),
    ("config", "model_calls"),
)  # the cache counts calls to the model: a pool takes a window of batches each
TASKS = "mmneedle_m10_n1_k2_pos,mmneedle_m1_n2_k1_neg,toy_pairs"


def comparable(results: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(results))
    for path in RUN_FIELDS:
        parent = out
        for key in path[:-1]:
            parent = parent.get(key, {})
        parent.pop(path[-1], None)
    for key in POOL_ARGS:
        out["config"]["model_args"].pop(key, None)
    return out


def journals(folder: Path) -> dict[str, dict[str, Any]]:
    """Each journal's lines by sample id (the header as "header"); a sample journalled twice fails here."""
    out = {}
    for path in sorted(folder.glob("journal_*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        by_sample = {r.get("sample_id", "header"): r for r in records}
        assert len(by_sample) == len(records), f"{path}: a sample journalled twice"
        out[path.name] = by_sample
    return out


def assert_same_run(one: Path, other: Path) -> dict[str, Any]:
    """`other`'s results (and journals) equal `one`'s; `other`'s results."""
    results = [json.loads(sorted(folder.glob("results_*.json"))[-1].read_text()) for folder in (one, other)]
    assert comparable(results[1]) == comparable(results[0])
    assert journals(other) == journals(one) and journals(one)
    return results[1]


@pytest.fixture(scope="module")
def both_storages(tmp_path_factory: pytest.TempPathFactory, data_dir: Path, toy_shared_dir: Path) -> Path:
    """A --data_dir with MMNeedle (images embedded in the rows) and the toy benchmark built with shared image storage."""
    root = tmp_path_factory.mktemp("replica_data")
    (root / "mmneedle").symlink_to(data_dir / "mmneedle")
    (root / "toy").symlink_to(toy_shared_dir / "toy")
    return root


@pytest.fixture
def evaluate(harness, both_storages: Path, toy_tasks: Path):
    def run(out: Path, model: str, model_args: str, *extra: str, tasks: str = TASKS) -> Any:
        result = harness(
            "--tasks",
            tasks,
            "--include_path",
            toy_tasks,
            "--model",
            model,
            "--model_args",
            model_args,
            "--data_dir",
            both_storages,
            "--limit",
            "6",
            "--batch_size",
            "2",
            "--gen_kwargs",
            "max_gen_toks=6",
            "--output_path",
            out,
            *extra,
        )
        assert result.code == 0, result.err
        return result

    return run


@pytest.mark.slow  # a Ray cluster and replicas
def test_random_on_replicas_writes_what_one_process_writes(tmp_path: Path, ray_cluster, evaluate) -> None:
    evaluate(tmp_path / "one", "random", "seed=3")
    for size in (2, 3):
        run = evaluate(tmp_path / str(size), "random", f"seed=3,data_parallel_size={size}", "--ray")
        assert f"{size} random replicas ready on Ray" in run.err
        record = assert_same_run(tmp_path / "one" / "random", tmp_path / str(size) / "random")["config"][
            "backend_stats"
        ]
        replicas = record["replicas"]
        assert replicas["data_parallel_size"] == size and len(replicas["placement"]) == size
        assert replicas["batches"] == 9 and replicas["replica_restarts"] == 0  # 18 samples, 2 per batch


@pytest.mark.slow  # a Ray cluster and replicas of a tiny LLaVA
def test_hf_on_replicas_writes_what_one_process_writes(tmp_path: Path, ray_cluster, evaluate, tiny_llava: Path) -> None:
    folder = str(tiny_llava).replace("/", "__")
    model = f"pretrained={tiny_llava},threads=1"
    evaluate(tmp_path / "one", "hf", model)
    images = 6 * 10 + 6 * 1 + 6 * 2  # mmneedle_m10 rows show 10, mmneedle_m1 1, toy_pairs 2
    # 2 replicas read the images from the build (embedded and a shared image table); 3 get them through the object store.
    for size, route in ((2, "auto"), (3, "ship")):
        evaluate(tmp_path / str(size), "hf", f"{model},data_parallel_size={size},replica_data={route}")
        stats = assert_same_run(tmp_path / "one" / folder, tmp_path / str(size) / folder)["config"]["backend_stats"]
        counts = stats["replicas"]["images"]
        if route == "auto":
            assert (counts["read_by_replicas"], counts["object_store"]) == (images, 0), counts
            assert counts["route"].startswith("replicas read the images from the verified build")
        else:
            assert (counts["read_by_replicas"], counts["object_store"]) == (0, images), counts
            assert counts["object_store_bytes"] > 0


class ReplicaKiller(threading.Thread):
    """Sends SIGKILL (`kill -9`) to one replica's worker process while it runs a batch, once `journal` holds more than
    `after` samples: a replica of this run (a Ray worker under this test process) dies mid-batch."""

    def __init__(self, journal: Path, after: int) -> None:
        super().__init__(daemon=True)
        self.journal, self.after = journal, after
        self.killed: int | None = None
        self.done = threading.Event()

    def run(self) -> None:
        import psutil

        while not self.done.is_set():
            if self.journal.exists() and len(self.journal.read_text().splitlines()) > self.after + 1:
                for process in psutil.Process().children(recursive=True):
                    try:
                        running = " ".join(process.cmdline()).startswith("ray::Replica.run")
                    except psutil.Error:
                        continue
                    if running:
                        process.kill()
                        self.killed = process.pid
                        return
            time.sleep(0.01)


@pytest.mark.slow  # a Ray cluster and replicas of a tiny LLaVA
def test_replica_killed_mid_batch_is_restarted_and_the_results_stay_the_same(
    tmp_path: Path, ray_cluster, evaluate, tiny_llava: Path
) -> None:
    folder = str(tiny_llava).replace("/", "__")
    task = "mmneedle_m10_n1_k2_pos"
    model = f"pretrained={tiny_llava},threads=1"
    extra = ("--limit", "12", "--batch_size", "1", "--gen_kwargs", "max_gen_toks=32")  # long enough to be killed in
    evaluate(tmp_path / "one", "hf", model, *extra, tasks=task)
    killer = ReplicaKiller(tmp_path / "two" / folder / f"journal_{task}.jsonl", after=2)
    killer.start()
    try:
        run = evaluate(tmp_path / "two", "hf", f"{model},data_parallel_size=2", *extra, tasks=task)
    finally:
        killer.done.set()
    assert killer.killed is not None, "the run ended before a replica could be killed"
    assert "died" in run.err and "its batches run again" in run.err
    replicas = assert_same_run(tmp_path / "one" / folder, tmp_path / "two" / folder)["config"]["backend_stats"][
        "replicas"
    ]
    assert replicas["replica_restarts"] == 1 and replicas["batches_rerun"] >= 1
    assert replicas["batches"] == 12  # every batch answered once


@pytest.mark.slow  # a Ray cluster and replicas
def test_replica_that_cannot_load_its_model_stops_the_run_with_one_line(
    tmp_path: Path, ray_cluster, harness, data_dir: Path, tiny_llava: Path
) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(tiny_llava, broken)
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")  # the driver reads only the processor
    run = harness(
        "--tasks",
        "mmneedle_m1_n2_k1_neg",
        "--model",
        "hf",
        "--model_args",
        f"pretrained={broken},data_parallel_size=2",
        "--data_dir",
        data_dir,
        "--limit",
        "2",
        "--output_path",
        tmp_path / "out",
    )
    assert run.code == 1
    errors = [line for line in run.err.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and "Traceback" not in run.err, run.err
    assert errors[0].startswith("harness: error: hf replica ") and " of 2 could not start " in errors[0], errors[0]
    # The tests' cluster was started by the session, not the run: the line says which one the replica could not start on
    address = ray_cluster.get_runtime_context().gcs_address
    assert f" could not start on the Ray cluster at {address} (not started by this run): " in errors[0], errors[0]


def test_replicas_without_ray_installed_say_what_to_install(
    tmp_path: Path, harness, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as it does where Ray is not installed
    run = harness(
        "--tasks",
        "mmneedle_m1_n2_k1_neg",
        "--model",
        "random",
        "--model_args",
        "data_parallel_size=2",
        "--data_dir",
        data_dir,
        "--limit",
        "2",
        "--output_path",
        tmp_path,
    )
    assert run.code == 2
    assert run.err.strip().splitlines()[-1] == (
        "harness: error: data_parallel_size > 1 runs its replicas on Ray, which "
        "is not installed: pip install -e '.[ray]' (or pip install 'ray[default]')"
    )


@pytest.mark.slow  # a harness run in a child process
def test_one_replica_runs_in_process_without_importing_ray(tmp_path: Path, data_dir: Path, script_env) -> None:
    script = (
        "import sys; from harness.run.cli import main; "
        f"code = main(['--tasks', 'mmneedle_m1_n2_k1_neg', '--model', 'random', '--model_args', "
        f"'data_parallel_size=1', '--ray', '--data_dir', {str(data_dir)!r}, '--limit', '2', '--no_progress']); "
        "print(code, 'ray' in sys.modules)"
    )
    repo = str(PROJECT)
    env = {**script_env, "PYTHONPATH": os.pathsep.join([repo, script_env.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.stdout.strip().splitlines()[-1] == "0 False", done.stderr
    assert "data_parallel_size is 1, so the model runs in this process" in done.stderr


@pytest.mark.parametrize("storage", ["embedded", "shared"])
def test_a_located_image_is_read_by_another_process_as_the_driver_reads_it(
    storage: str, toy_dir: Path, toy_shared_dir: Path, toy_tasks: Path
) -> None:
    """What a replica receives for an image of a build (`BuildImage`, pickled) reads the same bytes, through the same
    checks: files that are not the verified ones, or bytes that are not the image's, are refused."""
    from dataclasses import replace

    from harness.config.task_index import TaskIndex
    from harness.inputs.build_images import locate, unreadable
    from harness.inputs.integrity import ImageIntegrityError
    from harness.running.task.task import Task

    task = Task(TaskIndex([toy_tasks]).tasks["toy_pairs"])
    task.load(toy_dir if storage == "embedded" else toy_shared_dir)
    request = task.build_request(0, task.doc(0), task.generation_settings())
    located = [locate(ref) for ref in request.images]
    assert len(located) == 2 and all(image is not None for image in located)
    assert (located[0].column is None) == (storage == "shared")
    for ref, image in zip(request.images, located, strict=True):
        assert pickle.loads(pickle.dumps(image))() == ref.data()
    image = located[0]
    assert unreadable(image.files) is None
    with pytest.raises(KeyError if storage == "shared" else ImageIntegrityError):  # not in the table; not its bytes
        replace(image, sha256="0" * 64)()
    other = replace(image.files, sha256=("0" * 64,) * len(image.files.sha256))
    with pytest.raises(ValueError, match="the nodes do not see the same build"):
        replace(image, files=other)()
    elsewhere = replace(image.files, paths=tuple(f"/nowhere/{Path(p).name}" for p in image.files.paths))
    assert "/nowhere/" in str(unreadable(elsewhere))
