"""LoCoVQA's nine models (Table 1; Appendix A), as its paper ran them: each with the alias that runs it, or the reason
none can, which settings it ran, the name its result tables print, and the fragments (`known_as`: lower case, letters
and digits only) of the checkpoint and API names by which its report knows a run of one. One declaration: the report's
model names (`report.PAPER_MODELS`) are derived from it.

The paper names models, not checkpoints: the ones below are those its Appendix A describes (the seed spec's
[EXTERNAL, verify] list). Table 1 sorts them into single-image and multi-image models, and Section 4 ("Interleaved
image support") says which settings each ran: "For multi-image models, we evaluate both the composed (cmp) &
interleaved (int) settings. For single-image models, we only test the composed (cmp) setting." A single-image model's
interleaved tasks are declared `not_run`: the report shows the paper's N/A there, and a run of them with its alias is
told it departs from the paper (`harness.models.aliases.left_out`), not refused: the model's processor takes several
images, and running it there is an experiment of its own, which the results record as such. Tables 2-3 print Mantis
(interleaved) only, one series for both Mantis variants.

Table 1's ↓sample column: the models that "rescale input images in the single-image setting rather than take as many
ViT inputs as necessary". Each alias's processor does so with the composite, as it does with any image: LLaVA-1.5's
CLIP processor to one 336-px view (576 tokens), LLaVA-1.6's AnyRes to the best of its five grids of 336-px tiles plus
the whole image (at most 2,928 tokens), Mantis-Idefics2's to at most 980 px a side, unsplit, 64 tokens; no input rule
of the harness is needed (`tests/tasks/locovqa/test_locovqa_paper_models.py` checks that the tokens stop growing with
the grid).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.models.facts.paper_models import NotRun, PaperModel, PaperModels

MOONDREAM2 = (
    "its own remote code only (vikhyatk/moondream2 through AutoModelForCausalLM with trust_remote_code, answered by "
    "its own query methods, no chat template; transformers 5.20.2 has no Moondream model); vLLM 0.33 registers the "
    "architecture name HfMoondream, which Moondream2's 2025 revisions share with Moondream 3, as Moondream 3 alone "
    "(vllm/model_executor/models/registry.py:549: moondream3.Moondream3ForCausalLM, a mixture-of-experts decoder "
    "read from a moondream3 config), not Moondream2's Phi-1.5 decoder; the paper names no revision"
)
MLLAVA = (
    "its several-image prompts are built by Mantis's own MLlavaProcessor (the mantis package), which neither "
    "transformers nor vLLM provides"
)
PALIGEMMA = (
    "the paper names no PaliGemma-3B checkpoint (pt or mix; 224, 448 or 896 px: 256, 1,024 or 4,096 image tokens) "
    "nor its prompt (a mix checkpoint expects a task prefix such as 'answer en'); transformers 5.20.2 loads each "
    "(PaliGemmaForConditionalGeneration), but none publishes a chat template, which the hf backend renders with: an "
    "alias would guess the checkpoint, the prompt and a template"
)
RETIRED = "the provider has retired the model the paper ran (the snapshot is not named)"
SINGLE_IMAGE = (
    NotRun(
        ("locovqa_*_int_*",),
        "a single-image model: the paper ran the composed (cmp) setting only (Section 4, 'Interleaved image support')",
    ),
)


@dataclass(frozen=True)
class TableOneModel:
    """One row of Table 1, with how the paper ran it."""

    model: PaperModel
    results_name: str  # as Tables 2-3 and the figures print it (`paper_r2.csv`'s `model`)
    single_image: bool  # Table 1's "Single-Image Input VLMs": the composed setting only
    downsamples: bool  # Table 1's ↓sample


def _row(
    name: str,
    ran: str,
    results_name: str,
    *,
    single_image: bool,
    downsamples: bool,
    known_as: tuple[str, ...],
    alias: str | None = None,
    reason: str = "",
) -> TableOneModel:
    not_run = SINGLE_IMAGE if single_image else ()
    model = PaperModel(name, ran, alias, reason=reason, known_as=known_as, not_run=not_run)
    return TableOneModel(model, results_name, single_image, downsamples)


TABLE_1 = (
    _row(
        "Moondream2-1.6B",
        "vikhyatk/moondream2",
        "Moondream2",
        single_image=True,
        downsamples=True,
        known_as=("moondream2",),
        reason=MOONDREAM2,
    ),
    _row(
        "LLaVA-1.5-7B",
        "llava-hf/llava-1.5-7b-hf",
        "LLaVA-1.5",
        single_image=True,
        downsamples=True,
        known_as=("llava15", "llavav15"),
        alias="llava-1.5-7b",
    ),
    _row(
        "LLaVA-1.6-7B",
        "llava-hf/llava-v1.6-mistral-7b-hf",
        "LLaVA-1.6",
        single_image=True,
        downsamples=True,
        known_as=("llava16", "llavav16", "llavanext"),
        alias="llava-1.6-mistral-7b",
    ),
    _row(
        "PaliGemma-3B",
        "google/paligemma-3b (variant not named)",
        "PaliGemma",
        single_image=True,
        downsamples=False,
        known_as=("paligemma",),
        reason=PALIGEMMA,
    ),
    _row(
        "Mantis-Bakllava-7B",
        "TIGER-Lab/Mantis-bakllava-7b",
        "Mantis",
        single_image=False,
        downsamples=True,
        known_as=("mantisbakllava",),
        reason=MLLAVA,
    ),
    _row(
        "Mantis-Idefics2-8B",
        "TIGER-Lab/Mantis-8B-Idefics2",
        "Mantis",
        single_image=False,
        downsamples=True,
        known_as=("mantis8bidefics2", "mantisidefics2"),
        alias="mantis-idefics2",
    ),
    _row(
        "Gemini 1.0 Pro Vision",
        "gemini-1.0-pro-vision",
        "Gemini 1.0",
        single_image=False,
        downsamples=False,
        known_as=("gemini10", "geminiprovision"),
        reason=RETIRED,
    ),
    # gpt-4-turbo (2024-04-09) is GPT-4 Turbo with vision, the snapshot that replaced gpt-4-vision-preview
    _row(
        "GPT-4 Vision",
        "gpt-4-vision-preview",
        "GPT-4V",
        single_image=False,
        downsamples=False,
        known_as=("gpt4v", "gpt4vision", "gpt4turbo"),
        reason=RETIRED,
    ),
    _row(
        "Gemini 1.5 Flash",
        "gemini-1.5-flash",
        "Gemini 1.5",
        single_image=False,
        downsamples=False,
        known_as=("gemini15",),
        reason=RETIRED,
    ),
)

MODELS = tuple(row.model for row in TABLE_1)
PAPER_MODELS = PaperModels(MODELS)
