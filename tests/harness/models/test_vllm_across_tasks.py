"""The runner gives the vllm backend every task's pending requests as one sequence (`Runner.run_together`): one
engine call for the whole run where the chunk allows, each answer still journalled in its own task as its chunk
arrives, the same results as one call per task, and a run stopped between chunks resumes without repeating a sample.
The engine is `fake_vllm.FakeLLM` (the real one needs a GPU: scripts/gpu_check.sh)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from harness.config.task_index import TaskIndex
from harness.running.runner import Runner, RunOptions
from harness.running.task.task import Task
from tests.support import fake_vllm
from tests.support.fake_vllm import FAKE_LLM as FAKE_LLM_SPEC
from tests.support.fake_vllm import FAKE_SAMPLING, FakeLLM, fake_model

TASKS = ("mmneedle_m1_n2_k1_pos", "mmneedle_m1_n2_k1_neg", "mmneedle_m10_n1_k1_neg")
GEN = {"max_gen_toks": 8}


class StoppedLLM(FakeLLM):
    """Answers its first `chat` call, then stops the run as a kill would (KeyboardInterrupt)."""

    def chat(self, conversations, sampling_params, **options):
        if any(call["kwargs"] is self.kwargs for call in fake_vllm.CALLS):
            raise KeyboardInterrupt
        return super().chat(conversations, sampling_params, **options)


def load_tasks(data: Path) -> list[Task]:
    index = TaskIndex([])
    tasks = [Task(index.tasks[name]) for name in TASKS]
    for task in tasks:
        task.load(data)
    return tasks


def journal(out: Path, task: str) -> list[dict]:
    lines = (out / f"journal_{task}.jsonl").read_text().splitlines()[1:]
    return [json.loads(line) for line in lines]


def run(model, data: Path, out: Path):
    fake_vllm.CALLS.clear()
    try:
        return Runner(model, RunOptions(data_dir=data, gen_kwargs=GEN, output_dir=out, progress=False)).run(
            load_tasks(data)
        )
    finally:
        model.close()


@pytest.mark.slow  # two runs of every MMNeedle task
def test_every_task_reaches_the_engine_in_one_call_with_the_results_of_one_call_per_task(mmneedle_dir, tmp_path):
    together_model = fake_model(max_model_len=32768)
    together = run(together_model, mmneedle_dir, tmp_path / "together")
    calls = [len(call["conversations"]) for call in fake_vllm.CALLS]
    # Each image named by its sha256 (the parts' `uuid`); the results count those sent and those distinct, an image
    # that recurs across rows, depths and lengths reaching vLLM's caches under the same name.
    names = fake_vllm.image_uuids_sent()
    stats = together_model.statistics()
    assert stats["engine_images"] == len(names) and stats["engine_distinct_images"] == len(set(names))
    per_task_model = fake_model(max_model_len=32768)
    per_task_model._facts = replace(
        per_task_model.facts, generates_across_tasks=False
    )  # as the runner called every backend before
    apart = run(per_task_model, mmneedle_dir, tmp_path / "apart")
    sizes = [len(task) for task in load_tasks(mmneedle_dir)]
    assert calls == [sum(sizes)]  # every sample of the three tasks in one LLM.chat call
    assert [len(call["conversations"]) for call in fake_vllm.CALLS] == sizes  # before: one call per task
    for name, a, b in zip(TASKS, together, apart, strict=True):
        assert a.task.name == b.task.name == name
        assert a.counts == b.counts and a.counts["ok"] == len(a.task) and a.values == b.values
        mine, theirs = journal(tmp_path / "together", name), journal(tmp_path / "apart", name)
        assert sorted((r["sample_id"], r["response"], r["token_count"]) for r in mine) == sorted(
            (r["sample_id"], r["response"], r["token_count"]) for r in theirs
        )
        # each journal holds its own task's prompts: the fake's answer spells what it was sent
        assert len(mine) == len(a.task) and all(r["response"] for r in mine)


@pytest.mark.slow  # two runs of four tasks (~5 s)
def test_a_run_stopped_after_a_chunk_keeps_it_in_each_tasks_journal_and_resumes(mmneedle_dir, tmp_path):
    from harness.models.backends.vllm_engine.backend import VLLMModel

    sizes = [len(task) for task in load_tasks(mmneedle_dir)]
    chunk = sizes[0] + 2  # the first chunk ends inside the second task
    out = tmp_path / "out"
    # Tasks in turn (request_order=length), so the first chunk ends inside the second task as counted here.
    stopped = VLLMModel(
        fake_vllm.settings(max_model_len=32768, chunk_size=chunk, request_order="length"),
        llm_factory=f"{__name__}:StoppedLLM",
        sampling_factory=FAKE_SAMPLING,
    )
    with pytest.raises(KeyboardInterrupt):
        run(stopped, mmneedle_dir, out)
    assert [len(call["conversations"]) for call in fake_vllm.CALLS] == [chunk]
    assert len(journal(out, TASKS[0])) == sizes[0] and len(journal(out, TASKS[1])) == 2
    assert journal(out, TASKS[2]) == []  # opened and screened, nothing generated yet

    results = run(fake_model(max_model_len=32768, chunk_size=chunk, request_order="length"), mmneedle_dir, out)
    assert [r.resumed for r in results] == [sizes[0], 2, 0]
    assert [r.generated for r in results] == [0, sizes[1] - 2, sizes[2]]
    assert sum(len(call["conversations"]) for call in fake_vllm.CALLS) == sizes[1] - 2 + sizes[2]
    assert all(r.counts["ok"] == len(r.task) for r in results)


@pytest.mark.slow  # vLLM's processor built on the CPU (~3 s)
def test_a_prompt_counted_by_the_engines_processor_reaches_generate_as_that_processor_renders_it(
    tmp_path, jpeg_red, png_blue
):
    """Where the backend counts with the checkpoint's processor, it renders the prompt with it too and calls
    `LLM.generate` (vLLM's `LLM.chat` would parse and render every conversation again); the images follow in
    prompt order. Without the processor (an estimate), conversations go to `LLM.chat` as before."""
    from harness.models.backends.vllm_engine.backend import VLLMModel
    from tests.support.model_requests import make_request
    from tests.support.tiny_llava import build_tiny_llava

    checkpoint = build_tiny_llava(tmp_path / "llava")
    requests = [
        make_request("a", ["first", jpeg_red, "then", png_blue, "which?"], doc_id=0),
        make_request("b", ["only text"], doc_id=1, prefix="Answer:"),
    ]
    model = VLLMModel(
        fake_vllm.settings(pretrained=str(checkpoint), max_model_len=4096),
        llm_factory=FAKE_LLM_SPEC,
        sampling_factory=FAKE_SAMPLING,
        count_online=False,
    )
    fake_vllm.CALLS.clear()
    try:
        responses = model.generate(requests)
    finally:
        model.close()
    assert all(r.ok for r in responses), responses
    (call,) = fake_vllm.CALLS
    assert "conversations" not in call
    assert [p["prompt"] for p in call["prompts"]] == [model.count.processor.render(r) for r in requests]
    assert call["prompts"][1]["prompt"].endswith("Answer:")
    assert [i.size for i in call["prompts"][0]["multi_modal_data"]["image"]] == [(16, 12), (10, 14)]
    assert "multi_modal_data" not in call["prompts"][1]

    estimated = fake_model(max_model_len=4096)  # its checkpoint cannot be loaded: the engine renders
    fake_vllm.CALLS.clear()
    try:
        assert all(r.ok for r in estimated.generate(requests))
    finally:
        estimated.close()
    assert [len(c["conversations"]) for c in fake_vllm.CALLS] == [1, 1]  # one LLM.chat per chat flag
