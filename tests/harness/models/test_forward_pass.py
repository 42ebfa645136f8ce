"""A forward pass per family through the `hf` backend (issue 51): a tiny random model of each family that runs on
this CPU, with its real processor class and published template, is sent a request as a run sends it, and the image
tokens in the text must equal the image features the pixels make (`tests.support.forward_pass`). The families that
cannot run here, and the `vllm` aliases' families whose vLLM processor cannot run here, are in one table with the
reason (`tests.support.forward_families`), which docs/backends.md shows; every `hf` and `vllm` alias has its row.

Every input rule of every alias at every length is `test_forward_pass_rules.py`'s; the calls below are the families'
defaults, the backend's count against the ids it sends, the rules found broken (Idefics2 at 64K/128K, also run
through the `harness` command) and the settings the official wrappers gave at load (LLaVA-OneVision's pinpoints,
Mantis's unsplit images).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from harness.api import Request
from harness.models.aliases import ALIASES
from tests.support.forward_families import BY_NAME, FAMILIES, NOT_CHECKED_YET, RUNNING
from tests.support.forward_pass import forward_pass, tiny_checkpoint
from tests.support.forward_rules import alias_request
from tests.support.model_requests import encode_image, make_request

IMAGES = [encode_image((200, 10, 10), (300, 200), "PNG"), encode_image((0, 100, 10), (120, 500), "PNG")]


def two_image_request(name: str) -> Request:
    images = IMAGES[:1] if name == "paligemma" else IMAGES  # PaliGemma: one image, its images before the text
    return make_request("s", ["Look: ", *images, " What is shown?"])


@pytest.mark.parametrize("name", [family.name for family in RUNNING])
def test_each_family_s_image_tokens_are_its_image_features(name: str) -> None:
    result = forward_pass(name, two_image_request(name))
    assert result.error is None and result.answer is not None
    assert result.image_tokens == result.image_features > 0


@pytest.mark.parametrize("name", [family.name for family in RUNNING])
def test_the_backend_counts_what_it_sends_where_it_says_its_count_is_exact(name: str) -> None:
    """Where the processor counts an image's tokens from its size, the count before sending is the input ids sent:
    Gemma 3's markers and blank lines around its 256 image tokens, PaliGemma's BOS and newline, LLaVA-OneVision's
    base features for each image of a several-image prompt included (`harness.models.shared.hf_expansion`)."""
    result = forward_pass(name, two_image_request(name))
    if result.exact:
        assert result.counted == result.prompt_tokens
    else:  # a family's estimate, labelled as one
        assert result.counted > 0


@pytest.mark.parametrize("name", ["gemma3", "paligemma", "llava-onevision"])
def test_the_count_is_the_ids_sent_for_one_image_and_for_two(name: str) -> None:
    """The three counts mended in issue 51 are exact counts, for one image and for several."""
    one = make_request("s", ["Look: ", encode_image((9, 9, 9), (700, 500), "PNG"), " What?"])
    for request in (one, two_image_request(name)):
        result = forward_pass(name, request)
        assert result.exact and result.counted == result.prompt_tokens


@pytest.fixture(scope="module")
def mmlb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from builders.mmlongbench.build import build_mmlongbench

    root = tmp_path_factory.mktemp("forward-mmlb")
    configs = ["niah_vh_single_8k", "niah_vh_single_64k", "niah_vh_single_128k"]
    build_mmlongbench(source="fixture", out_dir=root, configs=configs)
    return root


@pytest.mark.parametrize("length", ["8k", "64k", "128k"])
@pytest.mark.parametrize("alias", ["idefics2", "idefics2-chatty"])
def test_idefics2_reaches_generation_at_every_length_of_its_rules(alias: str, length: str, mmlb: Path) -> None:
    """Issue 51, item 1: at 64K/128K the run script turns image splitting off on VH; given with the processor call,
    the text held 5x the image tokens of the pixels and generate raised. Applied at load, the row reaches generation."""
    request, args = alias_request(alias, f"mmlongbench_niah_vh_single_{length}", mmlb)
    splits = length == "8k"
    assert dict(request.processor_kwargs) == ({} if splits else {"do_image_splitting": False})
    result = forward_pass("idefics2", request, prompt_style=args["prompt_style"])
    assert result.error is None and result.answer is not None
    crops = 5 if splits else 1
    assert result.image_tokens == result.image_features == crops * 64 * request.num_images


@pytest.mark.slow  # two runs of the command
@pytest.mark.parametrize("length", ["64k", "128k"])
def test_the_idefics2_alias_answers_the_fixture_at_64k_and_128k_through_the_command(
    length: str, mmlb: Path, tmp_path: Path, harness
) -> None:
    """Issue 51's done-when, "a run of the fixture at 64K with `idefics2` reaches generation", through the `harness`
    command: the alias with its checkpoint put in its place (`--model_args pretrained=DIR`, the tiny Idefics2 with
    the real Idefics2Processor and published template) runs the VH rows at 64K and 128K, where the official run
    turned image splitting off; each row's text held 5x the image tokens of its pixels and generate raised before the
    setting was applied as the processor is loaded. Every sample is answered."""
    task = f"mmlongbench_niah_vh_single_{length}"
    checkpoint = tiny_checkpoint("idefics2")
    out = tmp_path / "out"
    run = harness(
        "--tasks",
        task,
        "--model",
        "idefics2",
        "--model_args",
        f"pretrained={checkpoint},dtype=float32,threads=1",
        "--device",
        "cpu",
        "--gen_kwargs",
        "max_gen_toks=2",
        "--limit",
        "2",
        "--data_dir",
        mmlb,
        "--output_path",
        out,
    )
    assert run.code == 0, run.err
    (journal,) = out.rglob(f"journal_{task}.jsonl")
    samples = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    assert len(samples) == 2
    assert all(s["status"] == "ok" and s.get("error") is None and s["response"] is not None for s in samples), samples
    (results,) = journal.parent.glob("results_*.json")
    config = json.loads(results.read_text())["config"]
    assert config["model_args"]["pretrained"] == str(checkpoint)  # the tiny checkpoint ran in the alias's place
    assert config["input_policies"][task] == {"processor_kwargs": {"do_image_splitting": False}}


def test_mantis_s_checkpoint_setting_is_read_by_the_text_and_by_its_estimate() -> None:
    result = forward_pass("mantis-idefics2", two_image_request("mantis-idefics2"), prompt_style="idefics")
    assert result.image_tokens == result.image_features == 2 * 64
    assert not result.exact and abs(result.counted - result.prompt_tokens) <= 2  # the family's rule, unsplit


def test_onevision_pinpoints_kept_to_four_tiles_in_the_processor_and_the_model() -> None:
    """Issue 51, item 3: `max_grid_tiles=4` keeps the pinpoints the official wrapper keeps, and gives the model's
    config the same list; a single large image then makes the tokens of a 2x2 grid, and its features."""
    big = make_request("s", ["Look: ", encode_image((9, 9, 9), (1500, 1500), "PNG"), " What?"])
    whole, kept = forward_pass("llava-onevision", big), forward_pass("llava-onevision", big, max_grid_tiles="4")
    assert whole.image_tokens == whole.image_features and kept.image_tokens == kept.image_features
    assert kept.image_tokens < whole.image_tokens
    assert kept.counted == kept.prompt_tokens  # the screen counts with the kept pinpoints too


def test_onevision_pinpoints_kept_in_the_processor_alone_break_a_single_image() -> None:
    """Why the model's config gets the kept pinpoints too: the official wrapper set them on its processor only, and
    the model (its config's whole grid) then splits the image's tiles by another grid than the processor made."""
    big = make_request("s", ["Look: ", encode_image((9, 9, 9), (1500, 1500), "PNG"), " What?"])
    kept = [[h, w] for h, w in [[384 * r, 384 * c] for r in range(1, 7) for c in range(1, 7)] if h * w <= 4 * 384**2]
    with pytest.raises((RuntimeError, ValueError)):
        forward_pass("llava-onevision", replace(big, processor_kwargs=(("image_grid_pinpoints", kept),)))


def test_every_hf_and_vllm_alias_has_a_forward_pass_or_the_exact_reason_it_has_none() -> None:
    """Each `hf` alias is in a row of its backend's that runs here (its rules are then forward-passed,
    `test_forward_pass_rules.py`) or says why not; each `vllm` alias in a row that checks it through vLLM's processor
    or says what it cannot check and why. A row names only aliases that exist, or a model without one yet ("name
    (note)")."""
    rows = {alias: family for family in FAMILIES for alias in family.aliases}
    for name, alias in ALIASES.items():
        if alias.backend not in ("hf", "vllm"):
            continue
        assert name in rows, f"alias {name} ({alias.backend}) has no row in tests/support/forward_families.py"
        family = rows[name]
        assert family.backend == alias.backend, f"alias {name} runs on {alias.backend}, its row {family.name} on hf"
        assert family.runs or family.reason.strip(), f"{family.name}: neither runs here nor says why"
    for alias in rows:
        assert alias in ALIASES or " (" in alias, f"forward_families names {alias}, which is no alias"


@pytest.mark.parametrize("name", [f.name for f in FAMILIES if not f.runs and f.blocked is not None])
def test_what_a_row_cannot_check_is_still_out_of_reach(name: str) -> None:
    """A row that cannot run says why, and its probe shows the reason still holds (the module that imports
    torchvision: Pixtral's processor, Llama 4's image processor, timm under Gemma 3n's vision tower, vLLM's InternVL
    processor; the processor only the checkpoint's remote code provides): the day it stops holding, this fails and the
    row is turned into a forward pass."""
    family = BY_NAME[name]
    assert family.blocked is not None and family.blocked()


def test_every_row_that_cannot_run_has_a_probe_of_its_reason() -> None:
    """Every `vllm` row, and every `hf` row of a vision model that cannot run here (the text LLM's row has no image to
    pass: its reason is what it is, not a missing module)."""
    for family in FAMILIES:
        if not family.runs and family.name != "qwen2.5 (text)" and not family.reason.startswith(NOT_CHECKED_YET):
            assert family.blocked is not None, f"{family.name}: its reason has no probe"


def test_each_kind_of_alias_is_passed_with_its_own_template_and_its_own_config() -> None:
    """The audit's finding (issue 61, item 6): LLaVA-NeXT's Mistral and Llama 3 checkpoints were passed with LLaVA-1.5's
    template, Qwen3-VL's Thinking aliases with the Instruct template, the MoE aliases as dense configs. Each now has a
    row of its own, with its template and, for a mixture of experts, a MoE config."""
    from tests.support import family_templates as templates

    rows = {alias: family for family in FAMILIES for alias in family.aliases}
    expected = {
        "llava-1.6-7b": templates.LLAVA_1_5,
        "llava-1.6-mistral-7b": templates.LLAVA_NEXT_MISTRAL,
        "llava-next-llama3": templates.LLAVA_NEXT_LLAMA3,
        "qwen3-vl": templates.QWEN3_VL,
        "qwen3-vl-thinking": templates.QWEN3_VL_THINKING,
        "qwen3-vl-30b-a3b-thinking": templates.QWEN3_VL_THINKING,
    }
    for alias, template in expected.items():
        make = rows[alias].make_processor
        assert make is not None and make().chat_template == template, alias
    for name in ("qwen3-vl-30b-a3b", "qwen3-vl-30b-a3b-thinking", "internvl3.5-30b-a3b", "glm-4.5v"):
        family = rows[name]
        assert family.make_processor is not None and family.make_config is not None
        config = family.make_config(family.make_processor().tokenizer)
        assert "moe" in config.get_text_config().model_type, name  # a mixture of experts, as the checkpoint is
