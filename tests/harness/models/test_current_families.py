"""The families the papers never ran (issue 51, item 6): each image-token rule the screen estimates with counts what
the family's own processor makes of an image (transformers' classes where 5.20.2 has them, vLLM's count where only
vLLM loads the model), and each family is found by its own names, Gemma 3n apart from Gemma 3."""

from __future__ import annotations

import ast
import importlib.util
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image

from harness.models.families import alias_family, family_of
from tests.support import current_families
from tests.support import tiny_vlm_processors as processors
from tests.support.hf_runs import hf_run
from tests.support.processor_counts import SIZES, expanded


@pytest.mark.parametrize(
    ("model_type", "make", "image_token"),
    [
        ("qwen3_vl", processors.qwen3_vl, "<|image_pad|>"),
        ("glm4v", processors.glm4v, "<|image|>"),
    ],
)
def test_the_dynamic_resolution_rules_count_as_the_processors_expand(model_type: str, make, image_token: str) -> None:
    family, processor = family_of(model_type), make()
    assert family is not None
    for width, height in SIZES:  # + the two markers around each image, which the template writes
        assert family.image_tokens(width, height, {}) == expanded(processor, image_token, width, height) + 2
    cap = 28 * 28 * 64  # a request's pixel cap, as an input policy gives it
    size = {"shortest_edge": processor.image_processor.size.shortest_edge, "longest_edge": cap}
    tokens = expanded(processor, image_token, 3000, 2000, size=size)
    assert family.image_tokens(3000, 2000, {"max_pixels": cap}) == tokens + 2 < 70


def test_glm_4_1v_s_bound_is_its_checkpoints_and_its_template_hashes_to_the_sha256_cited() -> None:
    """The bound its processor configs ship (9,633,792 pixels for two frames), not the class default (11,760,000): a
    3,000 x 2,000 image lands between the two; and the template's sha256 the module cites is its text's."""
    import hashlib
    import re

    from harness.models.families import glm4v
    from tests.support import family_templates as templates

    processor = processors.glm4v()
    assert processor.image_processor.size.longest_edge == glm4v.MAX_PIXELS == 9633792
    assert family_of("glm4v").image_tokens(3000, 2000, {}) == expanded(processor, "<|image|>", 3000, 2000) + 2
    (cited,) = re.findall(r"hashes to sha256 ([0-9a-f]{8,})", " ".join((glm4v.__doc__ or "").split()))
    assert hashlib.sha256(templates.GLM4_1V.encode("utf-8")).hexdigest().startswith(cited)


def test_gemma3n_is_its_own_family_and_counts_as_its_processor_expands() -> None:
    assert family_of("gemma3n").name == alias_family("google/gemma-3n-E4B-it").name == "Gemma 3n"
    assert family_of("gemma3").name == alias_family("google/gemma-3-12b-it").name == "Gemma 3"
    processor = current_families.gemma3n()
    inputs = processor(text=["a <image_soft_token> b"], images=[Image.new("RGB", (1000, 700))], return_tensors="pt")
    ids = inputs["input_ids"][0].tolist()
    marks = [processor.tokenizer.convert_tokens_to_ids(t) for t in ("<start_of_image>", "<end_of_image>")]
    # 256 soft tokens and their two markers; the blank line either side is one token each in Gemma's own vocabulary
    # (as Gemma 3's rule counts it), two bytes in this tiny one
    assert ids.count(processor.image_token_id) == 256 and all(ids.count(m) == 1 for m in marks)
    expanded = ids.count(processor.image_token_id) + sum(ids.count(m) for m in marks)  # what the processor put in
    assert family_of("gemma3n").image_tokens(1000, 700, {}) == expanded + 2  # and the two blank lines


def test_gemma3n_counts_its_images_as_its_processor_sends_them_in_gemma_s_own_vocabulary() -> None:
    """Gemma 3n's call expands its image token (Gemma 3's its begin marker) into a blank line, the markers and soft
    tokens, a blank line; Gemma's vocabulary holds runs of newlines as tokens, so the blank lines merge with the
    template's newlines beside them. Measured alone each image was a token over (the engine sweep: 1,521 counted
    for 1,517 sent, four images)."""
    from harness.models.shared.hf_counting import ProcessorCount
    from tests.support.model_requests import encode_image, make_request

    processor = current_families.gemma3n()
    processor.tokenizer.add_tokens(["\n", "\n\n", "\n\n\n", "\n\n\n\n"])
    count = ProcessorCount(processor, None, name="gemma3n")
    sizes = [(1000, 700), (256, 256), (64, 900)]
    request = make_request("s", ["Look:", *(encode_image((1, 2, 3), size, "PNG") for size in sizes), "What?"])
    images = [Image.new("RGB", size) for size in sizes]
    sent = processor(text=[count.render(request)], images=[images])["input_ids"][0]
    assert count.prompt_tokens(request) == len(sent)


def test_minicpm_v_slices_as_minicpm_v_s_image_processor() -> None:
    """The grid is the one MiniCPM-V's processor picks (transformers restates it for 4.6); the tokens follow it."""
    from transformers import MiniCPMV4_6ImageProcessorPil

    from harness.models.families.minicpm_v import sliced_grid

    reference = MiniCPMV4_6ImageProcessorPil()
    for width, height in [*SIZES, (448, 448), (449, 448), (1344, 1344), (896, 448), (4000, 500)]:
        theirs = reference.get_sliced_grid((height, width), max_slice_nums=9, scale_resolution=448)
        assert sliced_grid(width, height, 9) == (tuple(theirs) if theirs else None), (width, height)
    family = alias_family("openbmb/MiniCPM-V-4_5")
    assert family.image_tokens(448, 448, {}) == 3 + 66  # kept whole: its id, <image>, 64 queries, </image>
    assert family.image_tokens(1344, 1344, {}) == 3 + 66 + 9 * 66 + 2  # 3 x 3 slices, two newlines between rows
    assert family.image_tokens(1344, 1344, {"max_slice_nums": 4}) == 3 + 66 + 4 * 66 + 1


def test_minicpm_v_4_5_renders_with_the_template_vllm_ships() -> None:
    """vLLM 0.33.0's `template_minicpmv45.jinja`, not a stand-in: no system turn unless one is sent, the generation
    prompt's empty thinking block unless the thinking style turns `enable_thinking` on (then an open one)."""
    from harness.models.families import style_named
    from harness.models.shared.hf_counting import ProcessorCount
    from tests.support.family_templates import minicpm_v_4_5
    from tests.support.model_requests import encode_image, make_request

    tokenizer = current_families.minicpm_v()
    assert tokenizer.chat_template == minicpm_v_4_5()
    request = make_request("s", ["Where is it?", encode_image((9, 9, 9), (40, 30), "PNG"), "Answer."])
    for style, tail in (
        ("minicpm_v", "<|im_start|>assistant\n<think>\n\n</think>\n\n"),
        ("minicpm_v_thinking", "<|im_start|>assistant\n<think>\n"),
    ):
        prompt = ProcessorCount(tokenizer, None, name="minicpm", style=style_named(style)).render(request)
        assert prompt == f"<|im_start|>user\nWhere is it?\n(<image>./</image>)\nAnswer.<|im_end|>\n{tail}", style


def vllm_kimi_count():
    """vLLM 0.33.0's own `KimiVLProcessingInfo.get_num_image_tokens`, read from its source (the module imports GPU
    kernels' dependencies this machine lacks), over a stand-in for the checkpoint's image processor settings."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or spec.origin is None:
        pytest.skip("vLLM is not installed")
    source = Path(spec.origin).parent / "model_executor" / "models" / "kimi_vl.py"
    tree = ast.parse(source.read_text())
    (info,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "KimiVLProcessingInfo"]
    (count,) = [n for n in info.body if isinstance(n, ast.FunctionDef) and n.name == "get_num_image_tokens"]
    namespace: dict[str, object] = {"math": math}
    exec(compile(ast.Module(body=[count], type_ignores=[]), str(source), "exec"), namespace)
    return namespace["get_num_image_tokens"]


def test_kimi_vl_counts_as_vllm_counts() -> None:
    count = vllm_kimi_count()
    family = family_of("kimi_vl")
    for limit in (4096, 1024):
        settings = SimpleNamespace(patch_size=14, merge_kernel_size=[2, 2], in_token_limit=limit)
        info = SimpleNamespace(get_hf_processor=lambda s=settings: SimpleNamespace(image_processor=s))
        for width, height in [*SIZES, (1792, 1792)]:
            tokens = count(info, image_width=width, image_height=height)
            assert family.image_tokens(width, height, {"in_token_limit": limit}) == tokens + 4  # + its 4 markers


def test_each_family_is_found_by_its_config_names() -> None:
    for model_type, name in (
        ("qwen3_vl_moe", "Qwen3-VL"),
        ("glm4v_moe", "GLM-4.1V"),
        ("kimi_vl", "Kimi-VL"),
        ("gemma3n", "Gemma 3n"),
        ("internvl", "InternVL"),
    ):
        assert family_of(model_type).name == name
    assert family_of(None, architectures=["Glm4vMoeForConditionalGeneration"]).name == "GLM-4.1V"
    # MiniCPM-V's config names (MiniCPMV, minicpmv) are every version's: 4.5 is known by the alias that names it alone
    assert family_of("minicpmv", ["MiniCPMV"]) is None and alias_family("openbmb/MiniCPM-V-2_6") is None
    assert alias_family("openbmb/MiniCPM-V-4_5").name == "MiniCPM-V 4.5"


def test_a_gemma3n_checkpoint_without_timm_says_timm_before_any_file(harness, data_dir: Path, tmp_path: Path) -> None:
    """Issue 89: Gemma 3n's config-only folder got transformers' line about a missing preprocessor_config.json, where
    what its vision tower needs first is timm (`gemma3n_vision` is AutoModel's `TimmWrapperModel`)."""
    from transformers import Gemma3nConfig

    if importlib.util.find_spec("timm") is not None:
        pytest.skip("timm is installed: nothing to say")
    Gemma3nConfig().save_pretrained(tmp_path / "gemma3n")
    run = harness(*hf_run("mmneedle_m1_n2_k1_pos", data_dir, checkpoint=tmp_path / "gemma3n"), "--limit", "1")
    assert run.code == 2 and run.err.strip().splitlines()[-1] == (
        f"harness: error: model 'hf': checkpoint {tmp_path / 'gemma3n'}: its vision_config gemma3n_vision "
        "(TimmWrapperModel) is built with timm, which is not installed here: pip install timm"
    )
