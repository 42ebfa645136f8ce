"""The papers' models that have no alias, each with the reason: a checkpoint or API that no backend here can run
(its own code outside transformers' image-text-to-text classes and vLLM, or a snapshot its provider has retired)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NoAlias:
    benchmark: str
    name: str  # as the paper's tables name it
    ran: str  # the checkpoint or API snapshot the paper ran, where it says
    reason: str


OWN_CODE = "its own model code only: neither transformers' image-text-to-text classes nor vLLM load it"
VIDEO = f"a video model with {OWN_CODE}"
RETIRED = "the provider has retired the snapshot the paper ran"
NO_WRAPPER = (
    "a single-image model with no chat template, and MMNeedle published no wrapper for it (only a Fuyu template that "
    "says it does not run), so there is no official prompt to reproduce"
)

WITHOUT_ALIAS: tuple[NoAlias, ...] = (
    NoAlias("mmlongbench", "NVILA-Lite-2B", "Efficient-Large-Model/NVILA-Lite-2B-hf-preview", OWN_CODE),
    NoAlias("mmlongbench", "NVILA-Lite-8B", "Efficient-Large-Model/NVILA-Lite-8B-hf-preview", OWN_CODE),
    NoAlias("milebench", "Gemini 1.0", "gemini-1.0-pro-vision-001", RETIRED),
    NoAlias("milebench", "Gemini 1.5", "gemini-1.5-pro-latest (April 2024)", RETIRED),
    NoAlias("milebench", "ALLaVA-Longer", "FreedomIntelligence/ALLaVA-3B-Longer", OWN_CODE),
    NoAlias("milebench", "Yi-VL", "01-ai/Yi-VL-6B", OWN_CODE),
    NoAlias("milebench", "Cheetor", "Cheetor 7B (DCDmllm/Cheetah)", OWN_CODE),
    NoAlias(
        "milebench",
        "Qwen-VL-Chat",
        "Qwen/Qwen-VL-Chat",
        "its own model code (QWenLMHeadModel): no transformers image-text-to-text class, and vLLM dropped it in 0.23",
    ),
    NoAlias("milebench", "MiniGPT-v2", "MiniGPT-v2 7B", OWN_CODE),
    NoAlias("milebench", "VILA", "Efficient-Large-Model/VILA-7b", OWN_CODE),
    NoAlias("milebench", "Open flamingo", "openflamingo/OpenFlamingo-9B", OWN_CODE),
    NoAlias("milebench", "Video-LLaMA-2", "DAMO-NLP-SG/Video-LLaMA-2 7B", VIDEO),
    NoAlias("milebench", "Valley", "Valley 7B", VIDEO),
    NoAlias("milebench", "VideoChat2", "VideoChat2 7B", VIDEO),
    NoAlias("milebench", "LLaMA-VID", "LLaMA-VID 7B", VIDEO),
    NoAlias("milebench", "LWM*", "LargeWorldModel LWM 7B", f"{OWN_CODE} (a JAX model)"),
    NoAlias("mmneedle", "Gemini Pro 1.0", "gemini-1.0-pro-vision-latest", RETIRED),
    NoAlias("mmneedle", "Gemini Pro 1.5", "gemini-1.5-pro-latest", RETIRED),
    NoAlias("mmneedle", "GPT-4V", "gpt-4-vision-preview (Azure api-version 2024-03-01-preview)", RETIRED),
    NoAlias("mmneedle", "CogVLM-17B", "THUDM/cogvlm-chat-hf", OWN_CODE),
    NoAlias("mmneedle", "CogVLM2-Llama-3", "THUDM/cogvlm2-llama3-chat-19B", OWN_CODE),
    NoAlias("mmneedle", "Fuyu-8B", "adept/fuyu-8b", NO_WRAPPER),
    NoAlias("mmneedle", "mPLUG-Owl-v2", "MAGAer13/mplug-owl2-llama2-7b", OWN_CODE),
    NoAlias("mmneedle", "InstructBLIP-Vicuna-13B", "Salesforce/instructblip-vicuna-13b", NO_WRAPPER),
    NoAlias("mmneedle", "InstructBLIP-Flan-T5-XXL", "Salesforce/instructblip-flan-t5-xxl", NO_WRAPPER),
)
