"""MMNeedle's 13 models (Tables 2-5), each with the alias that runs it, or the reason none can; `known_as` are the
fragments (lower case, letters and digits only) of the checkpoint and API names by which its report knows a run of
one, the most specific first."""

from __future__ import annotations

from harness.models.facts.paper_models import PaperModel, PaperModels

NO_WRAPPER = (
    "MMNeedle published no wrapper for its open models (only a Fuyu template): the checkpoint's own chat template "
    "and processor defaults stand in"
)
OWN_CODE = "its own model code only: neither transformers' image-text-to-text classes nor vLLM load it"
RETIRED = "the provider has retired the snapshot the paper ran"
NO_PROMPT = (
    "a single-image model with no chat template, and MMNeedle published no wrapper for it (only a Fuyu template that "
    "says it does not run), so there is no official prompt to reproduce"
)

# needle.py:54-62 (and :258-259): google.generativeai (0.8.4, its requirements.txt) with `images + [instruction]`, each
# image `Image.open(path)` of its stitched JPEG, which that SDK sends inline as the file's own bytes and MIME type
# (`types/content_types.py:97-123`, `_pil_to_blob`'s `file_blob`), then the instruction; GenerationConfig
# candidate_count 1, stop_sequences ['x'], max_output_tokens 300 (the task's max_gen_toks), and no temperature.
NEEDLE_GEMINI = {
    "images": "inline",
    "image_format": "original",
    "candidate_count": "1",
    "stop_sequences": "x",
    "send_temperature": "false",
}
NEEDLE_GEMINI_STREAM = (
    "needle.py streamed the answer (:streamGenerateContent), the gemini backend asks it whole (:generateContent) with "
    "the same request body"
)

MODELS = (
    PaperModel("IDEFICS2-8B", "HuggingFaceM4/idefics2-8b", "idefics2", NO_WRAPPER, known_as=("idefics28b",)),
    PaperModel(
        "LLaVA-Llama-3",
        "lmms-lab/llama3-llava-next-8b",
        "llava-next-llama3",
        NO_WRAPPER,
        known_as=("llavallama3", "llama3llavanext"),
    ),
    PaperModel(
        "GPT-4o",
        "gpt-4o through Azure OpenAI (api-version 2024-05-01-preview: the May-2024 gpt-4o-2024-05-13)",
        "gpt-4o-2024-05-13",
        "OpenAI's own API serves the same snapshot, not the authors' Azure deployment",
        # needle.py:105-147 (its Azure path, the one the paper ran; the OpenAI one :67-104 alike): each image file's
        # bytes at detail high, then the instruction, max_tokens 300 and nothing else (no temperature: the API's
        # default; `max_tokens`, which `auto` would turn into max_completion_tokens at api.openai.com)
        {"image_detail": "high", "send_temperature": "false", "token_param": "max_tokens"},
        known_as=("gpt4o",),
    ),
    PaperModel(
        "Claude 3 Opus",
        "claude-3-opus-20240229 through Anthropic's SDK",
        "claude-3-opus",
        # needle.py:149-181: Anthropic's SDK, the images as base64 blocks then the instruction, max_tokens 300 (the
        # task's max_gen_toks) and nothing else: no temperature
        args={"send_temperature": "false"},
        known_as=("claude3opus",),
    ),
    PaperModel(
        "Gemini Pro 1.0",
        "gemini-1.0-pro-vision-latest",
        departs=NEEDLE_GEMINI_STREAM,
        reason=RETIRED,
        args=NEEDLE_GEMINI,
        backend="gemini",
        known_as=("gemini10", "geminiprovision"),
    ),
    PaperModel(
        "Gemini Pro 1.5",
        "gemini-1.5-pro-latest",
        departs=NEEDLE_GEMINI_STREAM,
        reason=RETIRED,
        args=NEEDLE_GEMINI,
        backend="gemini",
        known_as=("gemini15",),
    ),
    PaperModel(
        "GPT-4V",
        "gpt-4-vision-preview (Azure api-version 2024-03-01-preview)",
        reason=RETIRED,
        known_as=("gpt4vision", "gpt4turbo", "gpt4v"),
    ),
    PaperModel("CogVLM-17B", "THUDM/cogvlm-chat-hf", reason=OWN_CODE, known_as=("cogvlmchat", "cogvlm17b")),
    PaperModel("CogVLM2-Llama-3", "THUDM/cogvlm2-llama3-chat-19B", reason=OWN_CODE, known_as=("cogvlm2llama3",)),
    PaperModel("Fuyu-8B", "adept/fuyu-8b", reason=NO_PROMPT, known_as=("fuyu8b",)),
    PaperModel("mPLUG-Owl-v2", "MAGAer13/mplug-owl2-llama2-7b", reason=OWN_CODE, known_as=("mplugowl2", "mplugowlv2")),
    PaperModel(
        "InstructBLIP-Vicuna-13B",
        "Salesforce/instructblip-vicuna-13b",
        reason=NO_PROMPT,
        known_as=("instructblipvicuna13b",),
    ),
    PaperModel(
        "InstructBLIP-Flan-T5-XXL",
        "Salesforce/instructblip-flan-t5-xxl",
        reason=NO_PROMPT,
        known_as=("instructblipflant5xxl",),
    ),
)

PAPER_MODELS = PaperModels(MODELS)
