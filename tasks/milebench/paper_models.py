"""MileBench's 22 models (Table 2), each with the alias that runs it, or the reason none can: the paper's App. C.1,
with the checkpoints, is not public, so `ran` is what its text names; `known_as` are the API and Hub names by which
its report knows a run of one (the usual Hub ports of the open models). MileBench's own rule truncates an input from
the left to the model's context (`truncation.py`): every alias runs here with its own context (`own_context`)."""

from __future__ import annotations

from harness.models.facts.paper_models import PaperModel, PaperModels

NO_API_CODE = "MileBench's API code is not published: one user turn, images in place, greedy, 512 tokens"
# LLaVA-1.5's own `process_images` pads each image to a square (image_aspect_ratio "pad"); llava-hf's processor may
# center-crop instead (its preprocessor_config decides; LLaVA-1.6's AnyRes is the same on both sides).
PADDING = (
    "the llava-hf conversion of the same weights, whose image processor may center-crop where LLaVA's own pads each "
    "image to a square"
)
OWN_CODE = "its own model code only: neither transformers' image-text-to-text classes nor vLLM load it"
VIDEO = f"a video model with {OWN_CODE}"
RETIRED = "the provider has retired the snapshot the paper ran"
# MileBench's LLaVA worker (`workers/model_workers.py`) builds `conv_templates["llava_llama_2"]`, <image> inline.
LLAVA_WORKER = {"prompt_style": "llava_llama_2"}


def _llava(version: str, size: str, alias: str, original: str, *known_as: str) -> PaperModel:
    departs = PADDING if version == "1.5" else ""
    return PaperModel(f"LLaVA-{version}-{size}", original, alias, departs, LLAVA_WORKER, known_as=known_as)


MODELS = (
    PaperModel(
        "Mantis",
        "a 7B Mantis (checkpoint not named)",
        "mantis-idefics2",
        "the paper names no checkpoint for its 7B Mantis (App. C.1 is missing): the Idefics2-based 8B stands in",
        known_as=("mantis-bakllava-7b", "mantis-8b-siglip-llama3"),
    ),
    _llava("1.5", "7B", "llava-1.5-7b", "liuhaotian/llava-v1.5-7b", "llava-v1.5-7b"),
    _llava("1.5", "13B", "llava-1.5-13b", "liuhaotian/llava-v1.5-13b", "llava-v1.5-13b"),
    _llava(
        "1.6",
        "7B",
        "llava-1.6-7b",
        "liuhaotian/llava-v1.6-vicuna-7b",
        "llava-v1.6-vicuna-7b-hf",
        "llava-v1.6-vicuna-7b",
    ),
    _llava(
        "1.6",
        "13B",
        "llava-1.6-13b",
        "liuhaotian/llava-v1.6-vicuna-13b",
        "llava-v1.6-vicuna-13b-hf",
        "llava-v1.6-vicuna-13b",
    ),
    PaperModel(
        "GPT-4o",
        "gpt-4o-2024-05-13",
        "gpt-4o-2024-05-13",
        NO_API_CODE,
        {"image_detail": "auto", "send_temperature": "true"},
        known_as=("gpt-4o-2024-05-13",),
    ),
    PaperModel(
        "GPT-4V",
        "gpt-4-turbo-2024-04-09",
        "gpt-4-turbo",
        NO_API_CODE,
        known_as=("gpt-4-turbo-2024-04-09", "gpt-4-vision-preview"),
    ),
    PaperModel(
        "Claude 3 Opus",
        "claude-3-opus-20240229",
        "claude-3-opus",
        NO_API_CODE,
        {"send_temperature": "true"},
        known_as=("claude-3-opus-20240229",),
    ),
    PaperModel("Gemini 1.0", "gemini-1.0-pro-vision-001", reason=RETIRED, known_as=("gemini-1.0-pro-vision-001",)),
    PaperModel("Gemini 1.5", "gemini-1.5-pro-latest (April 2024)", reason=RETIRED, known_as=("gemini-1.5-pro-latest",)),
    PaperModel("ALLaVA-Longer", "FreedomIntelligence/ALLaVA-3B-Longer", reason=OWN_CODE),
    PaperModel("Yi-VL", "01-ai/Yi-VL-6B", reason=OWN_CODE, known_as=("yi-vl-6b",)),
    PaperModel("Cheetor", "Cheetor 7B (DCDmllm/Cheetah)", reason=OWN_CODE),
    PaperModel(
        "Qwen-VL-Chat",
        "Qwen/Qwen-VL-Chat",
        reason="its own model code (QWenLMHeadModel): no transformers image-text-to-text class, and vLLM dropped it "
        "in 0.23",
    ),
    PaperModel("MiniGPT-v2", "MiniGPT-v2 7B", reason=OWN_CODE),
    PaperModel("VILA", "Efficient-Large-Model/VILA-7b", reason=OWN_CODE, known_as=("vila-7b",)),
    PaperModel(
        "Open flamingo", "openflamingo/OpenFlamingo-9B", reason=OWN_CODE, known_as=("openflamingo-9b-vitl-mpt7b",)
    ),
    PaperModel("Video-LLaMA-2", "DAMO-NLP-SG/Video-LLaMA-2 7B", reason=VIDEO),
    PaperModel("Valley", "Valley 7B", reason=VIDEO),
    PaperModel("VideoChat2", "VideoChat2 7B", reason=VIDEO),
    PaperModel("LLaMA-VID", "LLaMA-VID 7B", reason=VIDEO),
    PaperModel("LWM*", "LargeWorldModel LWM 7B", reason=f"{OWN_CODE} (a JAX model)", known_as=("lwm-text-chat-1m",)),
)

PAPER_MODELS = PaperModels(MODELS, own_context=True)
