"""The `hf` backend end to end through the `harness` command, on a tiny random LLaVA checkpoint
saved with save_pretrained and loaded back as a user's checkpoint would be."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from tasks.mmneedle import utils

K1 = "mmneedle_m1_n2_k1"


def hf(tiny_llava: Path, extra: str = "") -> tuple[str, str]:
    return "--model_args", f"pretrained={tiny_llava},threads=1" + (f",{extra}" if extra else "")


def test_hf_end_to_end(tmp_path: Path, data_dir: Path, tiny_llava: Path, harness, rows) -> None:
    run = harness("--tasks", f"{K1}_pos,{K1}_neg,mmneedle_m10_n1_k2_pos", "--model", "hf", *hf(tiny_llava),
                  "--data_dir", data_dir, "--limit", "4", "--batch_size", "4", "--gen_kwargs", "max_gen_toks=8",
                  "--output_path", tmp_path, "--log_samples")
    assert run.code == 0, run.err
    name = str(tiny_llava).replace("/", "__")
    results = run.results(name)
    identity = results["config"]["model_identity"]
    template = (tiny_llava / "chat_template.jinja").read_text()
    assert identity["chat_template_sha256"] == hashlib.sha256(template.encode()).hexdigest()
    assert identity["dtype"] == "float32" and identity["context_length"] == 4096 and identity["local_files_sha256"]
    assert results["configs"][f"{K1}_pos"]["generation_settings"]["max_gen_toks"] == 8
    source = {r["id"]: r for r in rows("m1_n2_k1")} | {r["id"]: r for r in rows("m10_n1_k2")}
    for task in (f"{K1}_pos", f"{K1}_neg", "mmneedle_m10_n1_k2_pos"):
        samples = run.samples(name, task)
        assert len(samples) == 4 and results["results"][task]["n_scored"] == 4
        for sample in samples:
            assert sample["status"] in ("ok", "empty") and isinstance(sample["response"], str)
            assert 0 < sample["usage"]["completion_tokens"] <= 8 and sample["finish_reason"] in ("stop", "length")
            doc = source[sample["sample_id"]]
            expected = (utils.process_results_pos if doc["is_positive"] else utils.process_results_neg)(doc, [sample["response"]])
            assert sample["metrics"] == expected
        exact = [s["metrics"]["existence_acc"] for s in samples]
        assert results["results"][task]["existence_acc,none"] == pytest.approx(sum(exact) / 4)


def test_hf_batching_does_not_change_greedy_answers(tmp_path: Path, data_dir: Path, tiny_llava: Path, harness) -> None:
    answers = []
    for batch_size in ("1", "3"):
        out = tmp_path / batch_size
        run = harness("--tasks", "mmneedle_m10_n1_k2_neg", "--model", "hf", *hf(tiny_llava), "--data_dir", data_dir,
                      "--limit", "5", "--batch_size", batch_size, "--gen_kwargs", "max_gen_toks=6", "--output_path", out)
        assert run.code == 0, run.err
        answers.append({s["sample_id"]: s["response"] for s in run.samples(str(tiny_llava).replace("/", "__"), "mmneedle_m10_n1_k2_neg")})
    assert answers[0] == answers[1] and len(answers[0]) == 5


def test_over_length_is_recorded_and_pixel_caps_count(tmp_path: Path, data_dir: Path, tiny_llava: Path, harness, rows) -> None:
    # A 512x512 image is 324 vision tokens by the rows' rule; under max_pixels=224*224 it is 64.
    row = rows("m1_n2_k1")[0]
    assert row["image_tokens"] == [324]
    name = str(tiny_llava).replace("/", "__")
    context = row["text_tokens"] + 64 + 8 + 40  # room for the capped image only
    run = harness("--tasks", f"{K1}_pos", "--model", "hf", *hf(tiny_llava, f"context_length={context}"),
                  "--data_dir", data_dir, "--limit", "3", "--gen_kwargs", "max_gen_toks=8", "--output_path", tmp_path / "a")
    assert run.code == 1 and "no sample of this run was scored (3 over_length)" in run.err, run.err
    samples = run.samples(name, f"{K1}_pos")
    assert [s["status"] for s in samples] == ["over_length"] * 3
    assert f"> context {context}" in samples[0]["error"] and "max_gen_toks 8" in samples[0]["error"]
    entry = run.results(name)["results"][f"{K1}_pos"]
    assert entry["n_over_length"] == 3 and entry["n_scored"] == 0 and entry["exact_acc,none"] == "N/A"

    capped = harness("--tasks", f"{K1}_pos", "--model", "hf", *hf(tiny_llava, f"context_length={context},max_pixels=50176"),
                     "--data_dir", data_dir, "--limit", "3", "--gen_kwargs", "max_gen_toks=8", "--output_path",
                     tmp_path / "b", "--log_samples")
    samples = {s["doc_id"]: s for s in capped.samples(name, f"{K1}_pos")}
    assert [samples[i]["status"] for i in range(3)] == ["ok"] * 3
    assert samples[0]["effective_image_sizes"] == [[224, 224]] and samples[0]["image_sizes"] == [[512, 512]]
    assert samples[0]["token_count"] == row["text_tokens"] + 64


def test_too_many_images_is_recorded_per_sample(tmp_path: Path, data_dir: Path, tiny_llava: Path, harness) -> None:
    run = harness("--tasks", "mmneedle_m10_n1_k2_pos", "--model", "hf", *hf(tiny_llava, "max_images=5"),
                  "--data_dir", data_dir, "--limit", "2", "--output_path", tmp_path)
    samples = run.samples(str(tiny_llava).replace("/", "__"), "mmneedle_m10_n1_k2_pos")
    assert [s["status"] for s in samples] == ["too_many_images"] * 2
    assert samples[0]["error"] == "10 images; the model takes at most 5"


def test_an_image_that_fails_to_decode_fails_only_its_sample(tmp_path: Path, data_dir: Path, tiny_llava: Path, harness,
                                                             edit_build) -> None:
    broken = tmp_path / "data"
    shutil.copytree(data_dir / "mmneedle", broken / "mmneedle")

    def damage_second(images):
        images[1][0]["bytes"] = b"this is not a JPEG"
        return images

    def hash_the_damage(hashes):  # a build that shipped the broken file as it is, hash and all
        hashes[1] = [hashlib.sha256(b"this is not a JPEG").hexdigest()]
        return hashes

    edit_build(broken / "mmneedle", "m1_n2_k1", images=damage_second, image_sha256=hash_the_damage)
    run = harness("--tasks", f"{K1}_pos", "--model", "hf", *hf(tiny_llava), "--data_dir", broken, "--limit", "4",
                  "--batch_size", "2", "--gen_kwargs", "max_gen_toks=4", "--output_path", tmp_path / "out")
    assert run.code == 0, run.err
    samples = {s["doc_id"]: s for s in run.samples(str(tiny_llava).replace("/", "__"), f"{K1}_pos")}
    # Final (invalid_input), not an error a rerun would retry: the same bytes fail again.
    assert samples[1]["status"] == "invalid_input" and "image 1 (sha256" in samples[1]["error"]
    assert "failed to decode" in samples[1]["error"]
    assert [samples[i]["status"] for i in (0, 2, 3)] == ["ok", "ok", "ok"]
    entry = run.results(str(tiny_llava).replace("/", "__"))["results"][f"{K1}_pos"]
    assert entry["n_invalid_input"] == 1 and entry["n_error"] == 0 and entry["n_scored"] == 3


def test_hf_bad_checkpoint_is_a_clear_error(tmp_path: Path, data_dir: Path, harness) -> None:
    run = harness("--tasks", f"{K1}_pos", "--model", "hf", "--model_args", f"pretrained={tmp_path / 'nothing'}",
                  "--data_dir", data_dir, "--limit", "1")
    assert run.code == 2 and "model 'hf'" in run.err and "Traceback" not in run.err
    run = harness("--tasks", f"{K1}_pos", "--model", "hf", "--model_args", "dtype=float32", "--data_dir", data_dir)
    assert run.code == 2 and "hf needs a checkpoint" in run.err


def test_system_prompt_and_assistant_prefill_reach_the_chat_template(tmp_path: Path, data_dir: Path, tiny_llava: Path) -> None:
    from harness.models.hf import HFModel
    from harness.task import Task
    from harness.task_config import parse_task
    from harness.task_index import TaskIndex
    from harness.yaml_loader import load_config

    base = TaskIndex().tasks[f"{K1}_pos"].source
    (tmp_path / "t.yaml").write_text(f"include: {base}\ntask: prefilled\nsystem_prompt: Be brief.\nassistant_prefix: 'Answer:'\n")
    task = Task(parse_task(load_config(tmp_path / "t.yaml")))
    task.load(data_dir, limit=1)
    doc_id, doc = next(task.iter_docs())
    request = task.build_request(doc_id, doc, task.generation_settings({"max_gen_toks": 3}))
    model = HFModel.from_args({"pretrained": str(tiny_llava), "threads": "1"})
    prompt = model._prompt(request)
    assert prompt.startswith("system: Be brief.\nuser: <image>Given 1 image")
    assert prompt.endswith(doc["captions"][0] + "\nassistant:Answer:")
    (response,) = model.generate([request])
    assert response.ok and response.usage["completion_tokens"] <= 3  # only what the model adds
