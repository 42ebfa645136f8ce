"""MMLongBench-Doc's models: the paper's 14 LVLMs (its main table), each with the alias that runs it or why none can.

The code repo runs six of them (`run.sh`: gpt-4o, gpt-4-turbo, gemini-1.5-pro-latest through `run_api.py`; InternVL,
InternLM-XC2-4KHD and MiniCPM-Llama3-V2.5 through `run_lvlm.py`), each on the first 120 pages at 144 dpi with
max_tokens 1024 and temperature 0; the open models see the pages concatenated into 5 images (1 for MiniCPM), three
pages a row (`concat_images`), which no input rule here reproduces: their runs here show the pages one by one.
The paper's Table 3 (its LVLM rows) is `paper_results.csv`, read by `load_paper_results` for the report's verdicts.
Its source is the table image the authors post on the project page (mayubo2333/mayubo2333.github.io,
`MMLongBench-Doc/static/images/eval_result.png`): `source` names the commit. `bd9f4ee` (2024-10-12, "update eval
result") is the one table posted after the release moved to its 1,082 questions (MMLongBench-Doc@88b5f09,
2024-07-15): the camera-ready's, which adds seven LVLMs (not declared here) and drops Monkey-Chat and EMU2-Chat.
Those two come from the table of `d4b5f3b` (2024-07-10, the 1,091-question set the page then stated), whose rows for
the other twelve are the same numbers as `bd9f4ee`'s. The table's rows are not one run on one question set:
several open models' rows are arXiv v1's (1,062 questions) unchanged, and Gemini-1.5-Pro's and EMU2-Chat's overall
does not follow from their single-page, cross-page and unanswerable cells on the 1,082 questions' counts (the test
says which).
"""

from __future__ import annotations

import csv
from pathlib import Path

from harness.models.facts.paper_models import PaperModel, PaperModels

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

# Table 3's columns (the CSV's, lower case) -> our metric: its evidence sources and evidence pages, ACC and F1.
PAPER_COLUMNS = {
    "txt": "acc_text",
    "lay": "acc_layout",
    "cha": "acc_chart",
    "tab": "acc_table",
    "fig": "acc_figure",
    "sin": "acc_single_page",
    "mul": "acc_cross_page",
    "una": "acc_unanswerable",
    "acc": "acc",
    "f1": "f1",
}


def load_paper_results() -> dict[str, dict[str, float]]:
    """Paper model -> Table 3's column (`PAPER_COLUMNS`' keys) -> its % (`paper_results.csv`)."""
    with open(Path(__file__).with_name("paper_results.csv"), encoding="utf-8") as handle:
        return {
            row["model"]: {column: float(row[column]) for column in PAPER_COLUMNS} for row in csv.DictReader(handle)
        }
