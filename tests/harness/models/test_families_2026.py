"""The 2026 families (issue 61, item 2): GLM-4.6V, MiMo-VL, Qwen3.5/3.6, Gemma 4, LLaVA-OneVision-2, Kimi K3 and NVILA.

`harness models` lists every family of the registry with the backends its aliases run on or the exact reason none
does; each architecture a family declares is one transformers or vLLM registers (or its reason names it); each new
image-token rule counts what its processor writes (transformers' classes where 5.20.2 has them, vLLM's own count or
processor where only vLLM loads the model); the published templates are the files their sources hold, and the
harness renders a request with them as the model card's call does. The forward passes are `test_forward_pass.py`'s
(`tests/support/forward_families.py`'s 2026 rows).
"""

from __future__ import annotations
import __future__

import ast
import hashlib
import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image

from harness.inputs.round_trip import user_prompt
from harness.models.aliases import resolve
from harness.models.aliases.listing import listing
from harness.models.families import families, family_of, style_named
from harness.models.shared.hf_counting import ProcessorCount
from tests.support import current_families, official_wrappers
from tests.support import families_2026 as current
from tests.support.family_templates import PUBLISHED
from tests.support.model_requests import encode_image, make_request
from tests.support.processor_counts import SIZES, expanded


def test_harness_models_lists_every_family_with_a_backend_or_the_exact_reason() -> None:
    lines = listing([], []).splitlines()
    for family in families():
        (line,) = [line for line in lines if line.startswith(f"  {family.name} (")]
        backends = sorted({alias.backend for alias in family.aliases.values()})
        if backends:
            assert line.endswith(f": runs on {', '.join(backends)}"), line
        else:  # no alias: the family says why no backend here loads it
            assert family.unavailable and line.endswith(f": no backend here: {family.unavailable}"), family.name
        for variant in family.variants:
            assert f"{variant.name}: {', '.join(variant.model_types) or 'no model_type'}" in line


def _registered() -> set[str]:
    from transformers.models.auto import modeling_auto
    from vllm.model_executor.models.registry import _MULTIMODAL_MODELS

    tables = [table for key, table in vars(modeling_auto).items() if key.endswith("_MAPPING_NAMES")]
    return {name for table in tables for name in table.values() if isinstance(name, str)} | set(_MULTIMODAL_MODELS)


def test_each_architecture_a_family_declares_is_registered_or_its_reason_names_it() -> None:
    """A checkpoint is known by its config's architectures: each a family declares is a class transformers' auto
    mappings or vLLM's registry name, or the family's reason for having no backend names it (NVILA's VILAForCausalLM,
    the remote code of MMLongBench's checkpoints)."""
    registered = _registered()
    for family in families():
        for variant in family.variants:
            for architecture in variant.architectures:
                assert architecture in registered or architecture in family.unavailable, (family.name, architecture)


def test_the_2026_checkpoints_are_known_by_their_config_names() -> None:
    for model_type, architecture, variant in (
        ("glm4v_moe", "Glm4vMoeForConditionalGeneration", "GLM-4.1V"),  # zai-org/GLM-4.6V
        ("glm4v", "Glm4vForConditionalGeneration", "GLM-4.1V"),  # zai-org/GLM-4.6V-Flash
        ("qwen2_5_vl", "Qwen2_5_VLForConditionalGeneration", "Qwen2-VL"),  # XiaomiMiMo/MiMo-VL-7B-*
        ("qwen3_5_moe", "Qwen3_5MoeForConditionalGeneration", "Qwen3.5"),
        ("gemma4_unified", "Gemma4UnifiedForConditionalGeneration", "Gemma 4"),
        ("llava_onevision2", "LlavaOnevision2ForConditionalGeneration", "LLaVA-OneVision-2"),
        ("kimi_k3", "KimiK3ForConditionalGeneration", "Kimi K3"),
        ("nvila_lite", "NVILALiteForConditionalGeneration", "NVILA"),
    ):
        assert family_of(model_type).name == family_of(None, architectures=[architecture]).name == variant


@pytest.mark.parametrize(
    ("model_type", "make", "image_token"),
    [("qwen3_5", current.qwen3_5, "<|image_pad|>"), ("glm46v", current.glm46v, "<|image|>")],
)
def test_the_rules_count_as_their_processors_expand(model_type: str, make, image_token: str) -> None:
    """Qwen3.5's processor (transformers maps qwen3_5 to Qwen3VLProcessor) and GLM-4.6V's (Glm46VProcessor): each
    image's tokens, + the two markers the template writes around it."""
    family, processor = family_of(model_type), make()
    for width, height in SIZES:
        assert family.image_tokens(width, height, {}) == expanded(processor, image_token, width, height) + 2


def test_gemma4_counts_as_its_image_processor_makes_soft_tokens() -> None:
    """Gemma4ImageProcessorPil (its processor's module needs torchvision): the soft tokens of each image at each
    supported budget, + `<|image>` and `<image|>`."""
    from transformers import Gemma4ImageProcessorPil

    family = family_of("gemma4")
    for budget in (70, 280, 1120):
        processor = Gemma4ImageProcessorPil(max_soft_tokens=budget)
        for width, height in [*SIZES, (4000, 40)]:
            made = processor(Image.new("RGB", (width, height)), return_tensors="np")["num_soft_tokens_per_image"]
            assert family.image_tokens(width, height, {"max_soft_tokens": budget}) == int(made[0]) + 2, (budget, width)


def test_the_tiny_gemma4_makes_a_feature_for_each_soft_token_its_image_processor_counts() -> None:
    """The forward-pass row's config (`families_2026.gemma4_config`) checked here, where its processor cannot run:
    Gemma4ImageProcessorPil's pixels of two images, the prompt expanded as Gemma4Processor expands it (`<|image>`, a
    `<|image|>` per soft token, `<image|>`), and the model's own check that tokens and features agree passes; a
    token short, it refuses."""
    import torch
    from transformers import AutoModelForImageTextToText, Gemma4ImageProcessorPil

    made = current.gemma4_tokenizer()
    torch.manual_seed(0)
    model = AutoModelForImageTextToText.from_config(current.gemma4_config(made)).eval()
    images = [Image.new("RGB", (700, 500), (9, 80, 200)), Image.new("RGB", (300, 1920), (200, 9, 80))]
    pixels = Gemma4ImageProcessorPil()(images, return_tensors="pt")
    soft = [int(n) for n in pixels.pop("num_soft_tokens_per_image")]
    assert soft == [family_of("gemma4").image_tokens(*image.size, {}) - 2 for image in images]

    def generate(counts: list[int]) -> tuple[int, int]:
        marked = "".join(f"<|image>{'<|image|>' * n}<image|>" for n in counts)
        ids = made(f"<bos><|turn>user\nLook: {marked} what?<turn|>\n", return_tensors="pt", add_special_tokens=False)
        with torch.no_grad():
            out = model.generate(**ids, **pixels, max_new_tokens=1, do_sample=False)
        return ids.input_ids.shape[1], out.shape[1]

    sent, made_ids = generate(soft)
    assert made_ids == sent + 1 and sent > sum(soft)
    with pytest.raises((ValueError, RuntimeError)):
        generate([soft[0] - 1, soft[1]])


def test_the_hf_count_of_a_gemma4_prompt_is_the_ids_its_processor_makes() -> None:
    """Gemma4Processor's own expansion (each image token becomes `<|image>`, a `<|image|>` per soft token, `<image|>`)
    against the `hf` backend's count before sending, which missed the two markers of each image until the forward
    pass ran on a GPU machine (bench/RESULTS.md). Its module imports image_processing_gemma4 (torchvision's): the PIL
    module, which defines the same two names it imports, stands in for it while it is imported, and both are
    forgotten after (the forward-pass row's probe imports the real module again, and must still fail here). The
    instance is made without its constructor, whose video and audio parts need torchvision too; its `__call__` and
    `_get_num_multimodal_tokens` are transformers' own, around Gemma 4's PIL image processor. (Gemma4UnifiedProcessor,
    google/gemma-4-12B-it's, frames its images with the same `replace_image_token`, and its count needs torchvision.)"""
    import importlib
    import sys

    from transformers import Gemma4ImageProcessorPil
    from transformers.models.gemma4 import image_processing_pil_gemma4

    stand_in, module = (f"transformers.models.gemma4.{part}_gemma4" for part in ("image_processing", "processing"))
    sys.modules[stand_in] = image_processing_pil_gemma4
    try:
        processor_class = importlib.import_module(module).Gemma4Processor
    finally:
        del sys.modules[stand_in]
        sys.modules.pop(module, None)
        vars(sys.modules["transformers.models.gemma4"]).pop("processing_gemma4", None)
    made = current.gemma4_tokenizer()
    processor = processor_class.__new__(processor_class)
    processor.tokenizer, processor.image_processor, processor.chat_template = made, Gemma4ImageProcessorPil(), None
    processor.feature_extractor = processor.video_processor = None
    processor.image_seq_length = 280
    for mark in (*current.GEMMA4_MARKS, "image_token_id"):
        setattr(processor, mark, getattr(made, mark))
    count = ProcessorCount(processor, current.gemma4_config(made), name="tiny-gemma4", style=style_named("gemma4"))
    sizes = [(700, 500), (300, 1920), (64, 64)]
    request = make_request("s", ["Look: ", *(encode_image((9, 9, 9), size, "PNG") for size in sizes), " What?"])
    images = [Image.new("RGB", size) for size in sizes]
    sent = processor(text=[count.render(request)], images=[images], return_tensors="np")["input_ids"]
    assert count.prompt_tokens(request) == sent.shape[1]
    assert count.image_tokens(request) == [family_of("gemma4").image_tokens(w, h, {}) - 2 for w, h in sizes]


def _vllm_source(*parts: str) -> Path:
    spec = importlib.util.find_spec("vllm")
    if spec is None or spec.origin is None:
        pytest.skip("vLLM is not installed")
    return Path(spec.origin).parent.joinpath(*parts)


def test_llava_onevision_2_counts_as_vllm_counts() -> None:
    """vLLM 0.33.0's `LlavaOnevision2ProcessingInfo._get_vision_info`, read from its source (the module imports GPU
    kernels' dependencies this machine lacks), over vLLM's fallback settings: its pads, + the two Qwen markers."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    source = _vllm_source("model_executor", "models", "llava_onevision2.py")
    (info,) = [
        n for n in ast.parse(source.read_text()).body if getattr(n, "name", "") == "LlavaOnevision2ProcessingInfo"
    ]
    (count,) = [n for n in info.body if getattr(n, "name", "") == "_get_vision_info"]
    namespace: dict[str, object] = {"smart_resize": smart_resize, "ImageSize": SimpleNamespace}
    module = ast.Module(body=[count], type_ignores=[])  # its annotations left unevaluated, as its module leaves them
    exec(compile(module, str(source), "exec", flags=__future__.annotations.compiler_flag), namespace)
    vision = SimpleNamespace(patch_size=14, spatial_merge_size=2)
    info_self = SimpleNamespace(get_hf_config=lambda: SimpleNamespace(vision_config=vision))
    family = family_of("llava_onevision2")
    for lo, hi in ((256 * 28 * 28, 1605632), (3136, 12845056)):
        processor = SimpleNamespace(min_pixels=lo, max_pixels=hi)
        for width, height in SIZES:
            _, tokens = namespace["_get_vision_info"](
                info_self, image_width=width, image_height=height, image_processor=processor
            )
            assert family.image_tokens(width, height, {"min_pixels": lo, "max_pixels": hi}) == tokens + 2


def test_kimi_k3_counts_as_vllm_s_own_image_processor() -> None:
    """vLLM's `KimiK25FusedVisionProcessor` (K3's image processor in vLLM, which runs here without a GPU): the pads it
    counts for each image, + the markers around them."""
    from vllm.transformers_utils.processors.kimi_k25_vision_fused import KimiK25FusedVisionProcessor

    from harness.models.families.kimi_k3 import MARKERS

    family = family_of("kimi_k3")
    for limit, side in ((16384, 512), (4096, 64)):
        settings = {"patch_size": 14, "merge_kernel_size": [2, 2], "in_patch_limit": limit}
        config = {**settings, "patch_limit_on_one_side": side, "fixed_output_tokens": None}
        config.update(temporal_merge_kernel_size=4, image_mean=[0.5] * 3, image_std=[0.5] * 3)
        processor = KimiK25FusedVisionProcessor(config)
        for width, height in [*SIZES, (8000, 1000)]:
            pads = processor.media_tokens_calculator({"type": "image", "image": Image.new("RGB", (width, height))})
            given = {"in_patch_limit": limit, "patch_limit_on_one_side": side}
            assert family.image_tokens(width, height, given) == pads + MARKERS


@pytest.mark.parametrize("name", sorted(current.PUBLISHED_SHA256))
def test_each_published_template_is_the_file_its_source_holds(name: str) -> None:
    data = (PUBLISHED / f"{name}.jinja").read_bytes()
    assert hashlib.sha256(data).hexdigest() == current.PUBLISHED_SHA256[name]


REQUEST = make_request(
    "s",
    [
        "Look: ",
        encode_image((200, 10, 10), (300, 200), "PNG"),
        " and ",
        encode_image((0, 9, 9), (90, 500), "PNG"),
        " ?",
    ],
    prefix="Answer:",
)


@pytest.mark.parametrize(
    ("alias", "make", "reference", "opens"),
    [
        ("qwen3.5-9b", current.qwen3_5, current_families.card, "<|im_start|>assistant\n<think>\n"),
        ("qwen3.6-35b-a3b", lambda: current.qwen3_5(current.QWEN3_6), current_families.card, "assistant\n<think>\n"),
        ("glm-4.6v", current.glm46v, current_families.card, "<|assistant|>\n"),
        ("gemma4-31b", current.gemma4_tokenizer, current_families.text_chat, "Answer:"),
    ],
)
def test_the_harness_renders_each_2026_alias_as_its_model_card_calls_it(alias, make, reference, opens) -> None:
    """The alias's prompt style with the published template gives the model card's construction of the same request
    (a thinking model: the generation prompt, no answer prefix; Gemma 4: MMLongBench's generic call, the prefix
    continued after the template's BOS, each image `<|image|>` in place)."""
    _, args, _ = resolve(alias, {}, [])
    processor = make()
    count = ProcessorCount(processor, None, name=alias, style=style_named(args["prompt_style"]))
    images = [ref.pil() for ref in REQUEST.images]
    ours = count.render(REQUEST)
    theirs, ids = reference(processor, user_prompt(REQUEST), images, REQUEST.assistant_prefix)
    assert ours == theirs and ours.endswith(opens)
    tokenizer = count.tokenizer
    if hasattr(processor, "image_processor"):
        assert official_wrappers._ids(processor, ours, images) == ids
    else:
        assert tokenizer(ours).input_ids == ids
        assert ours.startswith("<bos><|turn>user\n") and ours.count("<|image|>") == 2
