"""Input policies: the per-model, per-task input settings of a paper (keep the last N images, halve the images,
processor settings), applied to the requests a run builds, screened, cached and recorded as applied."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from PIL import Image

from builders.core.contract import image_tokens
from harness.api import GenerationSettings, ImagePart, ImageRef, Message, Request, TextPart
from harness.inputs.input_policy import InputPolicy, TaskRule, apply_policy, policy_for
from harness.models import aliases
from harness.running.cache import input_material


def png(width: int, height: int, colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, format="PNG")
    return out.getvalue()


def request_with(images: list[bytes]) -> Request:
    parts: list = [TextPart("Look:")]
    for k, data in enumerate(images):
        parts += [
            ImagePart(ImageRef(f"sha{k}", lambda data=data: data, *Image.open(io.BytesIO(data)).size)),
            TextPart(f"after image {k}."),
        ]
    return Request(
        task="t",
        doc_id=0,
        sample_id="s",
        messages=(Message("user", tuple(parts)),),
        settings=GenerationSettings(),
        text_tokens=9,
        image_tokens=tuple(range(10, 10 + len(images))),
    )


def test_keep_last_images_drops_the_earliest_with_their_places_and_keeps_the_text() -> None:
    request = request_with([png(8, 8, (k * 40, 0, 0)) for k in range(5)])
    kept = apply_policy(request, InputPolicy.of(keep_last_images=2))
    assert [i.sha256 for i in kept.images] == ["sha3", "sha4"] and kept.image_tokens == (13, 14)
    texts = [p.text for p in kept.messages[0].content if isinstance(p, TextPart)]
    assert texts == ["Look:"] + [f"after image {k}." for k in range(5)]
    assert apply_policy(request, InputPolicy.of(keep_last_images=9)) == request
    assert apply_policy(request, InputPolicy()) is request


def test_image_scale_resizes_recounts_and_keys_the_derived_image() -> None:
    request = request_with([png(1000, 560, (200, 10, 10))])
    scaled = apply_policy(request, InputPolicy.of(image_scale=0.5, processor_kwargs={"max_patches": 1}))
    (ref,) = scaled.images
    assert (ref.width, ref.height) == (500, 280)
    assert Image.open(io.BytesIO(ref.load())).size == (500, 280)
    assert scaled.image_tokens == (image_tokens(500, 280),) and request.image_tokens == (10,)
    assert (
        ref.sha256 != "sha0" and ref.sha256 == apply_policy(request, InputPolicy.of(image_scale=0.5)).images[0].sha256
    )
    # The cache and the journal key what the model is shown, processor settings included.
    assert input_material(scaled)["processor_kwargs"] == {"max_patches": 1}
    assert "processor_kwargs" not in input_material(request)


def test_later_rules_refine_earlier_ones() -> None:
    rules = (
        TaskRule(("mmlongbench_*",), InputPolicy.of(processor_kwargs={"max_patches": 4})),
        TaskRule(
            ("mmlongbench_icl_*_128k",), InputPolicy.of(keep_last_images=400, processor_kwargs={"max_patches": 1})
        ),
    )
    assert policy_for("mmlongbench_icl_food101_128k", rules) == InputPolicy.of(400, None, {"max_patches": 1})
    assert policy_for("mmlongbench_icl_food101_8k", rules) == InputPolicy.of(processor_kwargs={"max_patches": 4})
    assert not policy_for("mmneedle_m10_n8_k1_pos", rules)


def test_the_alias_table_applies_each_setting_only_at_the_official_lengths() -> None:
    """run_eval.sh and run_api.sh split their commands by --length_list: the reduced settings are the 64K/128K
    commands' alone (issue 42, finding 3; the old table applied them at every length). Each alias's policy on a task
    is its own rules and then its paper run's in the task's benchmark (issue 50)."""

    class Policies:
        def __init__(self, name: str) -> None:
            self.name = name

        def policy_for(self, task: str) -> InputPolicy:
            return aliases.alias_policy(self.name, task)

    table = {name: Policies(name) for name in aliases.ALIASES}
    split_off = InputPolicy.of(processor_kwargs={"do_image_splitting": False})
    # Idefics2 splits at 8K-32K; at 64K/128K not on VH (and the rest of vh, mm_niah, icl), but still on VRAG.
    assert not table["idefics2"].policy_for("mmlongbench_niah_vh_single_8k")
    assert not table["idefics2"].policy_for("mmlongbench_icl_food101_32k")
    assert table["idefics2"].policy_for("mmlongbench_niah_vh_single_64k") == split_off
    assert table["idefics2"].policy_for("mmlongbench_niah_mmniah_count_text_128k") == split_off
    assert not table["idefics2"].policy_for("mmlongbench_vrag_infoseek_64k")
    assert table["idefics2-chatty"].policy_for("mmlongbench_vrag_infoseek_64k") == split_off
    assert not table["idefics2"].policy_for("mmlongbench_docvqa_slidevqa_128k")
    # Idefics3: do_resize off everywhere; splits and keeps pages whole at 8K-32K.
    no_resize = InputPolicy.of(processor_kwargs={"do_resize": False})
    assert table["idefics3"].policy_for("mmlongbench_summ_govreport_8k") == no_resize
    assert table["idefics3"].policy_for("mmlongbench_icl_sun397_32k") == no_resize
    assert table["idefics3"].policy_for("mmlongbench_summ_govreport_64k") == InputPolicy.of(
        image_scale=0.5, processor_kwargs={"do_resize": False}
    )
    assert table["idefics3"].policy_for("mmlongbench_icl_sun397_128k") == InputPolicy.of(
        processor_kwargs={"do_resize": False, "do_image_splitting": False}
    )
    # Pixtral keeps full-size images at 8K-32K, halves them on every task at 64K/128K.
    assert not table["pixtral"].policy_for("mmlongbench_summ_govreport_8k")
    assert not table["pixtral"].policy_for("mmlongbench_icl_sun397_32k")
    assert {
        table["pixtral"].policy_for(f"mmlongbench_{t}").image_scale for t in ("summ_govreport_64k", "icl_sun397_128k")
    } == {0.5}
    assert not table["pixtral"].policy_for("mmneedle_m10_n8_k1_pos")
    # GPT-4o: detail auto at 8K-32K and on documents, low on natural images at 64K/128K.
    gpt4o = table["gpt-4o"]
    auto, low = ({"image_detail": "auto"}, {"image_detail": "low"})
    assert dict(gpt4o.policy_for("mmlongbench_niah_vh_single_8k").processor_kwargs) == auto
    assert dict(gpt4o.policy_for("mmlongbench_icl_food101_32k").processor_kwargs) == auto
    assert dict(gpt4o.policy_for("mmlongbench_niah_vh_single_64k").processor_kwargs) == low
    assert dict(gpt4o.policy_for("mmlongbench_docvqa_slidevqa_128k").processor_kwargs) == auto
    # InternVL: 4 tiles everywhere; one tile and the last 400 images on natural images at 64K/128K, but not for the
    # sizes run_eval.sh ran with defaults at every length.
    four = {"crop_to_patches": True, "max_patches": 4}
    internvl = table["internvl"]
    assert internvl.policy_for("mmlongbench_niah_vh_single_32k") == InputPolicy.of(processor_kwargs=four)
    assert internvl.policy_for("mmlongbench_niah_vh_single_64k") == InputPolicy.of(
        400, None, {**four, "max_patches": 1}
    )
    assert internvl.policy_for("mmlongbench_docvqa_slidevqa_128k") == InputPolicy.of(processor_kwargs=four)
    assert table["internvl3-1b"].policy_for("mmlongbench_niah_vh_single_128k") == InputPolicy.of(processor_kwargs=four)
    assert table["internvl2.5-8b"].policy_for("mmlongbench_icl_food101_64k") == InputPolicy.of(
        400, None, {"max_dynamic_patch": 1}
    )
    assert table["gemma3"].policy_for("mmlongbench_icl_sun397_128k").keep_last_images == 400
    assert not table["gemma3"].policy_for("mmlongbench_icl_sun397_64k")
    assert not table["gemma3"].policy_for("mmlongbench_vrag_infoseek_128k")
    assert not table["qwen2.5-vl"].policy_for("mmlongbench_icl_food101_128k")  # no override for Qwen
    ovis2 = table["ovis2"]
    tiles = {"crop_to_patches": True, "max_patches": 4}
    assert ovis2.policy_for("mmlongbench_icl_food101_64k") == InputPolicy.of(400, 0.5, tiles)
    assert ovis2.policy_for("mmlongbench_icl_food101_32k") == InputPolicy.of(processor_kwargs=tiles)
    assert ovis2.policy_for("mmlongbench_summ_govreport_128k") == InputPolicy.of(processor_kwargs=tiles)
    phi3 = table["phi3.5-vision"]
    assert phi3.policy_for("mmlongbench_vrag_infoseek_128k") == InputPolicy.of(400, None, {"num_crops": 1})
    assert phi3.policy_for("mmlongbench_vrag_infoseek_32k") == InputPolicy.of(processor_kwargs={"num_crops": 4})
    phi4 = table["phi4-multimodal"]
    assert phi4.policy_for("mmlongbench_niah_vh_multi_64k") == InputPolicy.of(300, None, {"dynamic_hd": 1})
    assert phi4.policy_for("mmlongbench_docvqa_slidevqa_128k") == InputPolicy.of(processor_kwargs={"dynamic_hd": 4})
    gemini = table["gemini-2.5-pro"]
    assert gemini.policy_for("mmlongbench_icl_food101_128k") == InputPolicy.of(400, max_image_side=384)
    assert not gemini.policy_for("mmlongbench_icl_food101_32k") and not gemini.policy_for(
        "mmlongbench_summ_govreport_64k"
    )


def test_max_image_side_fits_only_larger_images_as_the_official_resize() -> None:
    """MMLongBench's `resize_image_max_size`: the longer side to 384, the other `int(384 / long * short)`."""
    request = request_with([png(1000, 560, (200, 10, 10)), png(300, 200, (0, 90, 0)), png(500, 2000, (0, 0, 9))])
    fitted = apply_policy(request, InputPolicy.of(max_image_side=384))
    assert [(r.width, r.height) for r in fitted.images] == [(384, 215), (300, 200), (96, 384)]
    assert Image.open(io.BytesIO(fitted.images[2].load())).size == (96, 384)
    assert fitted.images[1] is request.images[1] and fitted.images[0].sha256 != "sha0"
    assert fitted.image_tokens[0] == image_tokens(384, 215)


@pytest.fixture(scope="module")
def vh_dir(fixture_builds) -> Path:
    return fixture_builds(mmlongbench=["niah_vh_single_8k"])


def test_a_run_applies_its_aliases_policy_and_records_it(vh_dir: Path, tmp_path: Path, harness, monkeypatch) -> None:
    rule = TaskRule(("mmlongbench_niah_vh_*",), InputPolicy.of(keep_last_images=2), "a test of the mechanism")
    monkeypatch.setitem(aliases.ALIASES, "yes-sayer", aliases.Alias("constant", {"answer": "Yes"}, rules=(rule,)))
    out = tmp_path / "out"
    run = harness(
        "--tasks",
        "mmlongbench_niah_vh_single_8k",
        "--model",
        "yes-sayer",
        "--data_dir",
        vh_dir,
        "--output_path",
        out,
        "--log_samples",
    )
    assert run.code == 0, run.err
    (results_file,) = (out / "constant").glob("results_*.json")
    results = json.loads(results_file.read_text())
    assert results["config"]["input_policies"] == {"mmlongbench_niah_vh_single_8k": {"keep_last_images": 2}}
    (log,) = (out / "constant").glob("samples_mmlongbench_niah_vh_single_8k_*.jsonl")
    samples = [json.loads(line) for line in log.read_text().splitlines()]
    files = sorted((vh_dir / "mmlongbench" / "niah_vh_single_8k").glob("*.parquet"))
    table = pq.read_table(files).to_pylist()
    rows = {row["id"]: row for row in table}
    assert len(samples) == len(rows)
    for sample in samples:  # the model saw the last 2 of each row's images, in order
        assert sample["image_sha256"] == rows[sample["doc"]["id"]]["image_sha256"][-2:]
    assert results["config"]["alias_info"]["rules"][0]["keep_last_images"] == 2
