"""MMLongBench-Doc's models: the paper's 14 LVLMs (its main table), each with the alias that runs it or why none can.

The code repo runs six of them (`run.sh`: gpt-4o, gpt-4-turbo, gemini-1.5-pro-latest through `run_api.py`; InternVL,
InternLM-XC2-4KHD and MiniCPM-Llama3-V2.5 through `run_lvlm.py`), each on the first 120 pages at 144 dpi with
max_tokens 1024 and temperature 0; the open models see the pages concatenated into 5 images (1 for MiniCPM), three
pages a row (`concat_images`), which no input rule here reproduces: their runs here show the pages one by one.
The paper's numbers are not shipped here: its table could not be read from this machine, and the paper's versions
report different question counts (1,062 in v1, 1,082 in the code repo's samples.json).
"""

from __future__ import annotations

from harness.models.paper_models import PaperModel, PaperModels

API = (
    "run_api.py re-saves each 144-dpi PNG page as a JPEG (Pillow's defaults) and sends the question, then the pages, "
    "at the API's default detail; the alias sends the stored pages as its backend encodes them"
)
CONCAT = (
    "run_lvlm.py concatenates the pages into {n} image(s) of three pages a row (`concat_images`); here each page is "
    "its own image"
)
NO_CODE = "the code repo published no run for it, and no alias here runs the checkpoint"

MODELS = (
    PaperModel(
        "GPT-4o",
        "gpt-4o (in mid-2024 the 2024-05-13 snapshot)",
        "gpt-4o-2024-05-13",
        API,
        known_as=("gpt4o",),
    ),
    PaperModel(
        "GPT-4V(ision)",
        "gpt-4-turbo (run.sh's MODEL_NAME; gpt-4-turbo-2024-04-09)",
        "gpt-4-turbo",
        API,
        known_as=("gpt4turbo", "gpt4v"),
    ),
    PaperModel("Gemini-1.5-Pro", "gemini-1.5-pro-latest", reason="no alias here serves a Gemini 1.5 snapshot"),
    PaperModel("Claude-3 Opus", "claude-3-opus-20240229", reason="the code repo published no run for it"),
    PaperModel("InternVL-Chat-V1.5", "OpenGVLab/InternVL-Chat-V1-5", reason=f"{NO_CODE} ({CONCAT.format(n=5)})"),
    PaperModel("InternLM-XC2-4KHD", "internlm/internlm-xcomposer2-4khd-7b", reason=f"{NO_CODE} ({CONCAT.format(n=5)})"),
    PaperModel("MiniCPM-Llama3-V2.5", "openbmb/MiniCPM-Llama3-V-2_5", reason=f"{NO_CODE} ({CONCAT.format(n=1)})"),
    PaperModel(
        "Idefics2",
        "HuggingFaceM4/idefics2-8b",
        "idefics2",
        "the code repo published no run for it: the checkpoint's chat template and processor defaults stand in",
        known_as=("idefics2",),
    ),
    PaperModel("DeepSeek-VL-Chat", "deepseek-ai/deepseek-vl-7b-chat", reason=NO_CODE),
    PaperModel("mPLUG-DocOwl 1.5", "mPLUG/DocOwl1.5", reason=NO_CODE),
    PaperModel("Qwen-VL-Chat", "Qwen/Qwen-VL-Chat", reason=NO_CODE),
    PaperModel("Monkey-Chat", "echo840/Monkey-Chat", reason=NO_CODE),
    PaperModel("CogVLM2-LLaMA3-Chat", "THUDM/cogvlm2-llama3-chat-19B", reason=NO_CODE),
    PaperModel("EMU2-Chat", "BAAI/Emu2-Chat", reason=NO_CODE),
)

PAPER_MODELS = PaperModels(MODELS)
