"""`--max_batch_tokens` for the `hf` backend on a task whose prompts differ a lot in length (1-image
and 10-image MMNeedle rows in one task), and the response cache in front of it: what reaches
`HFModel.generate` is recorded by wrapping the real method (the model still runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.task_index import TaskIndex
from harness.models.backends.hf.model import HFModel
from tests.support.hf_runs import hf_run
from tests.support.run_setups import checkpoint_folder

BUDGET = 2400
TASK = "mmneedle_mixed_neg"


@pytest.fixture
def mixed_task(tmp_path: Path) -> Path:
    """Negatives of m1_n2_k1 (one image, a short prompt) and m10_n1_k2 (ten images, a longer prompt)."""
    template = Path(TaskIndex().tasks["mmneedle_m1_n2_k1_neg"].source).parent / "_neg.yaml"
    path = tmp_path / "mixed.yaml"
    path.write_text(
        f"include: {template}\ntask: {TASK}\ndataset_kwargs:\n  data_files:\n"
        "    test: [m1_n2_k1/*.parquet, m10_n1_k2/*.parquet]\n"
    )
    return path


@pytest.fixture
def generate_calls(monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[str, int]]]:
    """(sample id, padded-batch cost) of every request of every `HFModel.generate` call."""
    calls: list[list[tuple[str, int]]] = []
    original = HFModel.generate

    def recording(self: HFModel, requests):
        calls.append([(r.sample_id, self.request_cost(r)) for r in requests])
        return original(self, requests)

    monkeypatch.setattr(HFModel, "generate", recording)
    return calls


@pytest.mark.slow
def test_token_budget_batches_respect_the_budget_and_keep_answers(
    tmp_path: Path, data_dir: Path, tiny_llava: Path, mixed_task: Path, harness, generate_calls
) -> None:
    name = checkpoint_folder(tiny_llava)
    mixed = ("--include_path", mixed_task, "--gen_kwargs", "max_gen_toks=4")
    base = (*hf_run(TASK, data_dir, checkpoint=tiny_llava), *mixed)
    budget = harness(*base, "--max_batch_tokens", str(BUDGET), "--output_path", tmp_path / "budget")
    assert budget.code == 0, budget.err
    batches = list(generate_calls)
    generate_calls.clear()
    fixed = harness(*base, "--batch_size", "1", "--output_path", tmp_path / "fixed")
    assert fixed.code == 0, fixed.err
    assert len(generate_calls) == 24  # one request per call

    costs = [cost for batch in batches for _, cost in batch]
    # A mixed-length task, as the model counts it (its processor: 4 tokens per tiny-LLaVA image).
    assert len(costs) == 24 and max(costs) > 1.8 * min(costs)
    for batch in batches:
        batch_costs = [cost for _, cost in batch]
        assert len(batch) * max(batch_costs) <= BUDGET  # padded size within the budget
        assert batch_costs == sorted(batch_costs, reverse=True)
    assert max(batches[0], key=lambda item: item[1])[1] == max(costs)  # the longest prompts run first
    for batch, following in zip(batches[:-1], batches[1:], strict=True):  # greedy: the next one did not fit
        assert (len(batch) + 1) * max(batch[0][1], following[0][1]) > BUDGET
    sizes = [len(b) for b in batches]
    assert min(sizes) >= 2 and max(sizes) > min(sizes)  # short prompts share bigger batches
    assert sorted(s for b in batches for s, _ in b) == sorted(s["sample_id"] for s in fixed.samples(name, TASK))

    by_budget = {s["sample_id"]: s["response"] for s in budget.samples(name, TASK)}
    assert len(set(by_budget.values())) > 1  # the random model's answers differ between prompts
    assert by_budget == {s["sample_id"]: s["response"] for s in fixed.samples(name, TASK)}
    config = budget.results(name)["config"]
    assert (config["max_batch_tokens"], config["batch_size"]) == (BUDGET, 64)
    assert budget.results(name)["results"] == fixed.results(name)["results"]


@pytest.mark.slow
def test_cached_hf_rerun_calls_the_model_zero_times(
    tmp_path: Path, data_dir: Path, tiny_llava: Path, harness, generate_calls
) -> None:
    name = checkpoint_folder(tiny_llava)
    task = "mmneedle_m10_n1_k2_pos"
    settings = ("--limit", "4", "--batch_size", "2", "--gen_kwargs", "max_gen_toks=4", "--output_path", tmp_path)
    args = (*hf_run(task, data_dir, checkpoint=tiny_llava), *settings)
    first = harness(*args)
    assert first.code == 0, first.err
    assert sum(len(batch) for batch in generate_calls) == 4
    assert (tmp_path / name / "cache.sqlite3").is_file()
    answers = {s["sample_id"]: s["response"] for s in first.samples(name, task)}
    generate_calls.clear()

    (tmp_path / name / f"journal_{task}.jsonl").unlink()  # no journal to resume from
    again = harness(*args)
    assert again.code == 0, again.err
    assert generate_calls == []  # not one call reached the model
    assert {s["sample_id"]: s["response"] for s in again.samples(name, task)} == answers
    config = again.results(name)["config"]
    assert (config["cache_hits"], config["model_calls"], config["requests_sent"]) == (4, 0, 0)
    assert again.results(name)["results"] == first.results(name)["results"]
