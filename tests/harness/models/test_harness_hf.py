"""The `hf` backend end to end through the `harness` command, on a tiny random LLaVA checkpoint
saved with save_pretrained and loaded back as a user's checkpoint would be."""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from tasks.mmneedle import utils
from tests.support.hf_runs import hf_run

pytestmark = pytest.mark.slow  # a tiny LLaVA generates through the harness command

K1 = "mmneedle_m1_n2_k1"


def test_hf_end_to_end(tmp_path: Path, data_dir: Path, tiny_llava: Path, harness, rows) -> None:
    run = harness(
        *hf_run(f"{K1}_pos,{K1}_neg,mmneedle_m10_n1_k2_pos", data_dir, checkpoint=tiny_llava),
        "--limit",
        "4",
        "--batch_size",
        "4",
        "--gen_kwargs",
        "max_gen_toks=8",
        "--output_path",
        tmp_path,
        "--log_samples",
    )
    assert run.code == 0, run.err
    name = str(tiny_llava).replace("/", "__")
    results = run.results(name)
    identity = results["config"]["model_identity"]
    template = (tiny_llava / "chat_template.jinja").read_text()
    assert identity["chat_template_sha256"] == hashlib.sha256(template.encode()).hexdigest()
    assert identity["dtype"] == "float32" and identity["context_length"] == 4096 and identity["local_files_sha256"]
    # the prompt style's text_key is a message field, not a secret: recorded as the style says, not "<redacted>"
    assert identity["prompt_style"]["text_key"] == "text"
    assert results["configs"][f"{K1}_pos"]["generation_settings"]["max_gen_toks"] == 8
    source = {r["id"]: r for r in rows("m1_n2_k1")} | {r["id"]: r for r in rows("m10_n1_k2")}
    for task in (f"{K1}_pos", f"{K1}_neg", "mmneedle_m10_n1_k2_pos"):
        samples = run.samples(name, task)
        assert len(samples) == 4 and results["sample_counts"][task]["n_scored"] == 4
        for sample in samples:
            assert sample["status"] in ("ok", "empty") and isinstance(sample["response"], str)
            assert 0 < sample["usage"]["completion_tokens"] <= 8 and sample["finish_reason"] in ("stop", "length")
            doc = source[sample["sample_id"]]
            expected = (utils.process_results_pos if doc["is_positive"] else utils.process_results_neg)(
                doc, [sample["response"]]
            )
            assert sample["metrics"] == expected
        exact = [s["metrics"]["existence_acc"] for s in samples]
        assert results["results"][task]["existence_acc,none"] == pytest.approx(sum(exact) / 4)


def test_hf_batching_does_not_change_greedy_answers(tmp_path: Path, data_dir: Path, tiny_llava: Path, harness) -> None:
    answers = []
    for batch_size in ("1", "3"):
        out = tmp_path / batch_size
        run = harness(
            *hf_run("mmneedle_m10_n1_k2_neg", data_dir, checkpoint=tiny_llava),
            "--limit",
            "5",
            "--batch_size",
            batch_size,
            "--gen_kwargs",
            "max_gen_toks=6",
            "--output_path",
            out,
        )
        assert run.code == 0, run.err
        answers.append(
            {
                s["sample_id"]: s["response"]
                for s in run.samples(str(tiny_llava).replace("/", "__"), "mmneedle_m10_n1_k2_neg")
            }
        )
    assert answers[0] == answers[1] and len(answers[0]) == 5


def test_over_length_is_counted_as_the_model_sees_the_prompt(
    tmp_path: Path, data_dir: Path, tiny_llava: Path, harness, rows
) -> None:
    from transformers import AutoProcessor

    # What the model sees of row 0: its chat prompt tokenized, the image placeholder expanded by the
    # processor (the tiny LLaVA: 28 px crops, 4 tokens), whatever the rows' own rule says (324 here).
    row = rows("m1_n2_k1")[0]
    assert row["image_tokens"] == [324]
    processor = AutoProcessor.from_pretrained(tiny_llava)
    chat = [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": row["prompt"].replace("<image>", "")}]}
    ]
    ids = processor.tokenizer(processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)).input_ids
    seen = len(ids) - 1 + 4
    assert seen == len(
        processor(
            text=processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False),
            images=[rows("m1_n2_k1").with_format(None)[0]["images"][0]],
        ).input_ids[0]
    )
    name = str(tiny_llava).replace("/", "__")
    args = ("--limit", "1", "--gen_kwargs", "max_gen_toks=8")
    short_context = hf_run(f"{K1}_pos", data_dir, f"context_length={seen + 7}", checkpoint=tiny_llava)
    short = harness(*short_context, *args, "--output_path", tmp_path / "a")
    assert short.code == 1 and "no sample of this run was scored (1 over_length)" in short.err, short.err
    (sample,) = short.samples(name, f"{K1}_pos")
    assert sample["status"] == "over_length" and sample["token_count"] == seen
    assert sample["error"] == f"{seen + 8} tokens (prompt {seen} + max_gen_toks 8) > context {seen + 7}"
    assert short.results(name)["config"]["token_counting"].startswith("hf processor LlavaProcessor")

    fitting = hf_run(f"{K1}_pos", data_dir, f"context_length={seen + 8}", "max_pixels=50176", checkpoint=tiny_llava)
    fits = harness(*fitting, *args, "--output_path", tmp_path / "b", "--log_samples")
    assert fits.code == 0, fits.err
    (sample,) = fits.samples(name, f"{K1}_pos")
    assert sample["status"] == "ok" and sample["token_count"] == seen and sample["usage"]["prompt_tokens"] == seen
    assert sample["effective_image_sizes"] == [[224, 224]] and sample["image_sizes"] == [[512, 512]]


def test_a_context_past_the_checkpoint_s_window_runs_only_when_told(
    tmp_path: Path, data_dir: Path, tiny_llava: Path, harness
) -> None:
    """A context_length past the checkpoint's window (its max_position_embeddings) is kept to the window: a row
    longer is over_length; past_window=true (or no_context_limit=true) runs it, and its record says it ran past."""
    import json

    args = ("--limit", "1", "--gen_kwargs", "max_gen_toks=8")
    probe = harness(*hf_run(f"{K1}_pos", data_dir, checkpoint=tiny_llava), *args, "--output_path", tmp_path / "p",
                    "--log_samples")  # fmt: skip
    (seen,) = [s["token_count"] for s in probe.samples(str(tiny_llava).replace("/", "__"), f"{K1}_pos")]
    checkpoint = tmp_path / "short-window"
    shutil.copytree(tiny_llava, checkpoint)
    config = json.loads((checkpoint / "config.json").read_text())
    config["text_config"]["max_position_embeddings"] = window = seen + 7  # the row and max_gen_toks: one over
    (checkpoint / "config.json").write_text(json.dumps(config))
    name = str(checkpoint).replace("/", "__")
    outcomes = {}
    for given in ("", ",past_window=true", ",no_context_limit=true"):
        run_args = hf_run(f"{K1}_pos", data_dir, f"context_length={seen + 100}{given}", checkpoint=checkpoint)
        run = harness(*run_args, *args, "--output_path", tmp_path / given.strip(",="), "--log_samples")
        (sample,) = run.samples(name, f"{K1}_pos")
        outcomes[given] = (sample["status"], sample.get("past_window"), "answers ran past the" in run.err)
    assert outcomes == {
        "": ("over_length", None, False),
        ",past_window=true": ("ok", window, True),
        ",no_context_limit=true": ("ok", window, True),
    }


def test_a_576_token_image_model_is_screened_by_its_own_count(
    tmp_path: Path, data_dir: Path, tiny_llava_336: Path, harness, rows
) -> None:
    # Ten 256 px images are 81 tokens each by the rows' rule (about 940 tokens a row); a LLaVA-336-shaped
    # processor makes each 576 (about 6,000): against a 2,048 context none of these rows may be sent.
    assert rows("m10_n1_k2")[0]["image_tokens"] == [81] * 10
    name = str(tiny_llava_336).replace("/", "__")
    short_context = hf_run("mmneedle_m10_n1_k2_pos", data_dir, "context_length=2048", checkpoint=tiny_llava_336)
    run = harness(*short_context, "--limit", "3", "--output_path", tmp_path)
    assert run.code == 1, run.err
    samples = run.samples(name, "mmneedle_m10_n1_k2_pos")
    assert [s["status"] for s in samples] == ["over_length"] * 3
    assert all(10 * 576 < s["token_count"] < 10 * 576 + 1000 for s in samples)
    assert "usage" not in samples[0]  # nothing reached the model


def test_the_real_input_ids_are_checked_before_generate(tmp_path: Path, data_dir: Path, tiny_llava: Path) -> None:
    from harness.config.task_index import TaskIndex
    from harness.models.backends.hf.model import HFModel
    from harness.running.task.task import Task

    task = Task(TaskIndex().tasks[f"{K1}_pos"])
    task.load(data_dir, 6)
    settings = task.generation_settings({"max_gen_toks": 8}, 0)
    model = HFModel.from_args({"pretrained": str(tiny_llava), "threads": "1"})
    by_length = {model.prompt_tokens(r): r for r in (task.build_request(i, task.doc(i), settings) for i in range(6))}
    short, long = by_length[min(by_length)], by_length[max(by_length)]
    assert model.prompt_tokens(long) > model.prompt_tokens(short)  # captions differ in length
    model._facts = replace(model.facts, context_length=model.prompt_tokens(short) + 8)
    model.count._counted[(long.task, long.doc_id, len(long.images), long.text_tokens, ())] = (
        0  # a screen that miscounted it
    )
    assert model.prompt_tokens(long) == 0
    responses = model.generate([short, long])
    model.close()
    assert responses[0].ok
    assert responses[1].error == (
        f"over_length: {max(by_length)} prompt tokens (the processor's input_ids) + "
        f"max_gen_toks 8 > context {model.facts.context_length}"
    )


def test_too_many_images_is_recorded_per_sample(tmp_path: Path, data_dir: Path, tiny_llava: Path, harness) -> None:
    too_many = hf_run("mmneedle_m10_n1_k2_pos", data_dir, "max_images=5", checkpoint=tiny_llava)
    run = harness(*too_many, "--limit", "2", "--output_path", tmp_path)
    samples = run.samples(str(tiny_llava).replace("/", "__"), "mmneedle_m10_n1_k2_pos")
    assert [s["status"] for s in samples] == ["too_many_images"] * 2
    assert samples[0]["error"] == "10 images; the model takes at most 5"


def test_an_image_that_fails_to_decode_fails_only_its_sample(
    tmp_path: Path, data_dir: Path, tiny_llava: Path, harness, broken_image
) -> None:
    broken = tmp_path / "data"
    shutil.copytree(data_dir / "mmneedle", broken / "mmneedle")

    broken_image(broken / "mmneedle", "m1_n2_k1", 1, b"this is not a JPEG")  # row 1: the second positive
    run = harness(
        *hf_run(f"{K1}_pos", broken, checkpoint=tiny_llava),
        "--limit",
        "4",
        "--batch_size",
        "2",
        "--gen_kwargs",
        "max_gen_toks=4",
        "--output_path",
        tmp_path / "out",
    )
    assert run.code == 0, run.err
    samples = {s["doc_id"]: s for s in run.samples(str(tiny_llava).replace("/", "__"), f"{K1}_pos")}
    # Final (invalid_input), not an error a rerun would retry: the same bytes fail again.
    assert samples[1]["status"] == "invalid_input" and "image 1 (sha256" in samples[1]["error"]
    # Found by the backend's one decode of it, in its batch (`ModelFacts.decodes_images`): the check before the response
    # cache verifies its bytes only, and no answer of this backend can be cached for bytes it never decoded.
    assert "does not decode" in samples[1]["error"]
    assert [samples[i]["status"] for i in (0, 2, 3)] == ["ok", "ok", "ok"]
    entry = run.results(str(tiny_llava).replace("/", "__"))["sample_counts"][f"{K1}_pos"]
    assert entry["n_invalid_input"] == 1 and entry["n_error"] == 0 and entry["n_scored"] == 3


def test_hf_bad_checkpoint_is_a_clear_error(tmp_path: Path, data_dir: Path, harness) -> None:
    run = harness(*hf_run(f"{K1}_pos", data_dir, f"pretrained={tmp_path / 'nothing'}"), "--limit", "1")
    assert run.code == 2 and "model 'hf'" in run.err and "Traceback" not in run.err
    run = harness(*hf_run(f"{K1}_pos", data_dir, "dtype=float32"))
    assert run.code == 2 and "hf needs a checkpoint" in run.err


def test_system_prompt_and_assistant_prefill_reach_the_chat_template(
    tmp_path: Path, data_dir: Path, tiny_llava: Path
) -> None:
    from harness.config.task_config import parse_task
    from harness.config.task_index import TaskIndex
    from harness.config.yaml_loader import load_config
    from harness.models.backends.hf.model import HFModel
    from harness.running.task.task import Task

    base = TaskIndex().tasks[f"{K1}_pos"].source
    (tmp_path / "t.yaml").write_text(
        f"include: {base}\ntask: prefilled\nsystem_prompt: Be brief.\nassistant_prefix: 'Answer:'\n"
    )
    task = Task(parse_task(load_config(tmp_path / "t.yaml")))
    task.load(data_dir, limit=1)
    doc_id, doc = next(task.iter_docs())
    request = task.build_request(doc_id, doc, task.generation_settings({"max_gen_toks": 3}))
    model = HFModel.from_args({"pretrained": str(tiny_llava), "threads": "1"})
    prompt = model._prompt(request)
    assert prompt.startswith("system: Be brief.\nuser: <image>Given 1 image")
    # The prefix as the official wrappers send it: a final assistant message, continued (the template's "role: ").
    assert prompt.endswith(doc["captions"][0] + "\nassistant: Answer:")
    (response,) = model.generate([request])
    assert response.ok and response.usage["completion_tokens"] <= 3  # only what the model adds
