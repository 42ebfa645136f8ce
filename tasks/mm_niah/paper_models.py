"""MM-NIAH's models (the paper's Tables 2-8), each with the alias that runs it or the reason none can; `known_as` are
the fragments (lower case, letters and digits only) of the checkpoint and API names by which the report knows a run
of one, the most specific first. The paper's Human row is a reference in `paper_results.csv`, not a model."""

from __future__ import annotations

from harness.models.facts.paper_models import PaperModel, PaperModels

# The official scripts (eval_internvl.py at 2fd03dd; eval_llava.py, eval_idefics2.py and eval_emu2.py in the repo's
# history) send the input greedily (one beam), 16 new tokens (32 for counting): the tasks' generation settings.
OWN_TEMPLATE = (
    "MM-NIAH's own eval script for it (in the repo's history, gone at 2fd03dd) is not reproduced: the checkpoint's "
    "chat template and processor defaults stand in"
)
NO_ALIAS = "no alias here runs this checkpoint (an alias is a model-layer addition: docs/ADDING_A_MODEL_FAMILY.md)"
OWN_CODE = "its own model code only: neither transformers' image-text-to-text classes nor vLLM load it"
RETIRED = "the provider has retired the snapshot the paper ran"

MODELS = (
    PaperModel("Emu2-Chat", "BAAI/Emu2-Chat", reason=OWN_CODE, known_as=("emu2chat", "emu2")),
    PaperModel("VILA-13B", "Efficient-Large-Model/VILA-13b", reason=OWN_CODE, known_as=("vila13b",)),
    PaperModel("IDEFICS2", "HuggingFaceM4/idefics2-8b", "idefics2", OWN_TEMPLATE, known_as=("idefics28b", "idefics2")),
    PaperModel(
        "LLaVA-1.6-13B",
        "liuhaotian/llava-v1.6-vicuna-13b",
        "llava-1.6-13b",
        OWN_TEMPLATE + "; the alias loads the transformers conversion, llava-hf/llava-v1.6-vicuna-13b-hf",
        known_as=("llavav16vicuna13b", "llava1613b"),
    ),
    PaperModel("LLaVA-1.6-34B", "liuhaotian/llava-v1.6-34b", reason=NO_ALIAS, known_as=("llavav1634b", "llava1634b")),
    PaperModel(
        "InternVL-1.5",
        "OpenGVLab/InternVL-Chat-V1-5 (eval_internvl.py: each image one 448 x 448 tile, dynamic_image_size False)",
        reason=NO_ALIAS,
        known_as=("internvlchatv15", "internvl15"),
    ),
    PaperModel(
        "InternVL-1.5-RAG",
        "OpenGVLab/InternVL-Chat-V1-5 on the segments InternVL-14B-224px retrieves (prepare_rag.py)",
        reason="a retrieval stage (prepare_rag.py) before the model, which this benchmark's tasks do not run",
    ),
    PaperModel("Gemini-1.5", "gemini-1.5-pro (May 2024)", reason=RETIRED, known_as=("gemini15",)),
    PaperModel(
        "GPT-4V",
        "gpt-4-vision-preview (text-needle tasks only: the paper's N/A on image needles)",
        reason=RETIRED,
        known_as=("gpt4vision", "gpt4v"),
    ),
)

PAPER_MODELS = PaperModels(MODELS)
