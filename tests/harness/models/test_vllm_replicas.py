"""The vllm backend's replicas on Ray (`harness.models.backends.replicas.pool.RayPool`), each a `VLLMModel` over
`fake_vllm.FakeLLM` (vLLM's own `SamplingParams` where vLLM imports), on the session's local Ray cluster.

The real engine's replicas run in tests/harness/models/vllm_cpu/test_vllm_cpu_replicas.py (two replicas' answers a
single engine's, images read and shipped, a replica killed mid-run restarted and its batches run again). The fake
stays where the real engine cannot show or do what a test needs on cue:
- which replica answered which request (the fake's answers name their process): a chunk divided between the
  replicas with the requests sharing a prompt prefix kept on one;
- a replica that hangs (`replica_timeout`), and a batch that kills every replica it reaches: nothing a real engine
  does on a given prompt;
- an engine that cannot start on any replica: a real one can (too small a KV cache), at the cost of two engine starts
  in CI; the real engine's own reason, in one line, is held in one process by test_vllm_cpu_engine_start.py.
The real engine on GPUs: scripts/gpu_check.sh and scripts/vllm_gpu_runs.sh."""

from __future__ import annotations

import pytest

from harness.api import BackendFatalError
from harness.models.backends.replicas.pool import RayPool
from harness.models.backends.replicas.settings import PoolSettings
from tests.support.fake_vllm import fake_replica
from tests.support.model_requests import make_request

pytestmark = pytest.mark.slow  # a Ray cluster and replica processes

HAYSTACK = "A long shared context, the same for every question about it. " * 70  # ~1000 tokens by the prefix rule


def pool(size: int = 2, **settings) -> RayPool:
    args = {"max_model_len": "2048"}
    return RayPool(
        fake_replica("vllm", args, 1, None),
        "vllm",
        args,
        PoolSettings(data_parallel_size=size, **settings),
        build=fake_replica,
    )


def parts(text: str) -> str:
    return text.split("|", 2)[2]


def test_a_chunk_is_divided_between_replicas_keeping_prefix_groups_together(ray_cluster, jpeg_red, png_blue) -> None:
    requests = [
        make_request(f"a{i}", [HAYSTACK, jpeg_red, f"question {i}"], doc_id=i, text_tokens=1000) for i in range(3)
    ]
    requests += [
        make_request(f"b{i}", ["Another " + HAYSTACK, png_blue, f"question {i}"], doc_id=3 + i, text_tokens=1000)
        for i in range(2)
    ]
    requests += [make_request("c", ["a short one", jpeg_red], doc_id=5)]
    single = fake_replica("vllm", {"max_model_len": "2048"}, 1, None)
    try:
        expected = [parts(r.text) for r in single.generate(requests)]
    finally:
        single.close()
    replicas = pool()
    try:
        responses = replicas.generate(requests)
        record = replicas.statistics()["replicas"]
    finally:
        replicas.close()
    assert [parts(r.text) for r in responses] == expected
    pids = [r.text.split("|")[0] for r in responses]
    assert len(set(pids)) == 2 and len(set(pids[:3])) == 1 and len(set(pids[3:5])) == 1  # each group on one replica
    assert record["batches"] == 2 and record["images"]["object_store"] == 6  # made in code: no build to read from


@pytest.mark.parametrize(
    "fault, settings, message",
    [
        (
            "engine",
            {},
            # (the stand-in engine writes no log: none is named)
            r"^vllm replica \d on [\d.]+: the vllm engine could not start: RuntimeError: cannot load model 'explode'$",
        ),
        ("HANG", {"replica_timeout": 1.0}, r"^vllm replica \d on [\d.]+ gave no answer within 1 s \(replica_timeout\)"),
        ("DIE", {"replica_restarts": 1}, r"^vllm replicas died 2 times running the same batch \(1 requests\)"),
    ],
)
def test_a_replica_that_cannot_answer_stops_the_run_with_one_line(ray_cluster, fault, settings, message) -> None:
    args = {"max_model_len": "2048", **({"pretrained": "explode"} if fault == "engine" else {})}
    replicas = RayPool(
        fake_replica("vllm", args, 1, None),
        "vllm",
        args,
        PoolSettings(data_parallel_size=2, **settings),
        build=fake_replica,
    )
    try:
        with pytest.raises(BackendFatalError, match=message) as stopped:
            replicas.generate([make_request("x", [f"{fault} now" if fault != "engine" else "fine"])])
    finally:
        replicas.close()
    assert "\n" not in str(stopped.value)
