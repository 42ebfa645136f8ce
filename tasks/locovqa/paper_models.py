"""LoCoVQA's nine models (Table 1; Appendix A), each with the alias that runs it, or the reason none can; `known_as`
are the fragments (lower case, letters and digits only) of the checkpoint and API names by which its report knows a
run of one (`report.PAPER_MODELS`'s).

The paper names models, not checkpoints: the ones below are those its Appendix A describes (the seed spec's
[EXTERNAL, verify] list). It ran the single-image models (Moondream2, LLaVA-1.5, LLaVA-1.6, PaliGemma) on the
composed (`_cmp`) tasks only and the multi-image ones on both settings (Section 4, "Interleaved image support"); the
`↓sample` models rescale the composite themselves, as their processors do here. Which tasks a model runs is the
command's choice (the `_cmp` groups for a single-image model): no input rule of the harness changes that.
"""

from __future__ import annotations

from harness.models.paper_models import PaperModel, PaperModels

OWN_CODE = "its own model code only: neither transformers' image-text-to-text classes nor vLLM load it"
MLLAVA = (
    "its several-image prompts are built by Mantis's own MLlavaProcessor (the mantis package), which neither "
    "transformers nor vLLM provides"
)
PALIGEMMA = (
    "the paper does not name its PaliGemma-3B variant (pt or mix, 224/448/896 px), and no family module here declares "
    "PaliGemma's prompt (its image tokens before the text, no chat template)"
)
RETIRED = "the provider has retired the model the paper ran (the snapshot is not named)"

MODELS = (
    PaperModel("Moondream2-1.6B", "vikhyatk/moondream2", reason=OWN_CODE, known_as=("moondream2",)),
    PaperModel("LLaVA-1.5-7B", "llava-hf/llava-1.5-7b-hf", "llava-1.5-7b", known_as=("llava15", "llavav15")),
    PaperModel(
        "LLaVA-1.6-7B",
        "llava-hf/llava-v1.6-mistral-7b-hf",
        "llava-1.6-mistral-7b",
        known_as=("llava16", "llavav16", "llavanext"),
    ),
    PaperModel("PaliGemma-3B", "google/paligemma-3b (variant not named)", reason=PALIGEMMA, known_as=("paligemma",)),
    PaperModel("Mantis-Bakllava-7B", "TIGER-Lab/Mantis-bakllava-7b", reason=MLLAVA, known_as=("mantisbakllava",)),
    PaperModel(
        "Mantis-Idefics2-8B",
        "TIGER-Lab/Mantis-8B-Idefics2",
        "mantis-idefics2",
        known_as=("mantis8bidefics2", "mantisidefics2"),
    ),
    PaperModel(
        "Gemini 1.0 Pro Vision", "gemini-1.0-pro-vision", reason=RETIRED, known_as=("gemini10", "geminiprovision")
    ),
    PaperModel("GPT-4 Vision", "gpt-4-vision-preview", reason=RETIRED, known_as=("gpt4v", "gpt4vision")),
    PaperModel("Gemini 1.5 Flash", "gemini-1.5-flash", reason=RETIRED, known_as=("gemini15",)),
)

PAPER_MODELS = PaperModels(MODELS)
