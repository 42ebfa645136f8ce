"""The official per-length settings table, checked against a transcription of the commands themselves.

MMLongBench's `scripts/run_eval.sh` and `scripts/run_api.sh` (26197d2) run each model as a series of
`eval_task_manager.py` commands, each over a `--task_list` and a `--length_list`, some with flags; a later command
over the same task and length is the rerun that produced the paper's cell (the scripts' own comments: "we turn off
image_splitting at longer context ..."). Below, each model's commands are transcribed as data, each wrapper's reading
of the flags is restated (`vlm_model/*.py`), and every alias's input policy is compared with what the commands give,
for every MMLongBench task at every length: a setting applies exactly where a command applied it.
"""

from __future__ import annotations

from typing import Any

import pytest

from builders.mmlongbench.leaves import LEAVES
from harness.inputs.input_policy import InputPolicy
from harness.models.aliases import ALIASES, alias_policy
from tasks.mmlongbench.paper_models import PAPER_MODELS

ALL = ("vrag", "vh", "mm_niah_text", "mm_niah_image", "icl", "summ", "docqa")
NAT = ("vrag", "vh", "mm_niah_text", "mm_niah_image", "icl")
DOC = ("summ", "docqa")
EVERY = (8, 16, 32, 64, 128)
SHORT = (8, 16, 32)
LONG = (64, 128)

Command = tuple[tuple[str, ...], tuple[int, ...], dict[str, Any]]
URL = {"image_file_root": "url"}  # the authors' Hub image collection, not a local folder


def _reduced(keep: int) -> list[Command]:
    """The InternVL/Phi/Ovis2 pattern: defaults at 8K-32K, reduced natural images at 64K/128K."""
    return [(ALL, SHORT, {}), (NAT, LONG, {"image_resize": 0.5, "max_image_num": keep}), (DOC, LONG, {})]


COMMANDS: dict[str, list[Command]] = {
    "HuggingFaceM4/idefics2-8b": [
        (ALL, EVERY, {}),
        (ALL, (32,), {}),
        (("vh", "mm_niah_text", "mm_niah_image", "icl"), LONG, {"do_image_splitting": False}),
        (DOC, LONG, {}),
    ],
    "HuggingFaceM4/idefics2-8b-chatty": [
        (ALL, EVERY, {}),
        (ALL, (32,), {}),
        (NAT, LONG, {"do_image_splitting": False}),
        (DOC, LONG, {}),
    ],
    "TIGER-Lab/Mantis-8B-Idefics2": [(ALL, EVERY, {}), (("docqa", "vh", "icl"), (128,), {})],
    "HuggingFaceM4/Idefics3-8B-Llama3": [
        (ALL, SHORT, {}),
        (("vh", "icl"), (32,), {}),
        (NAT, LONG, {"do_image_splitting": False}),
        (DOC, LONG, {"image_resize": 0.5}),
    ],
    "microsoft/Phi-3.5-vision-instruct": [(ALL, EVERY, {}), (("icl",), (32,), {}), *_reduced(400)[1:]],
    "microsoft/Phi-3-vision-128k-instruct": [*_reduced(400), (("icl",), (32,), {})],
    "microsoft/Phi-4-multimodal-instruct": _reduced(300),
    "OpenGVLab/InternVL3-1B": [(ALL, EVERY, {})],
    "OpenGVLab/InternVL3-2B": _reduced(400),
    "OpenGVLab/InternVL3-8B": _reduced(400),
    "OpenGVLab/InternVL3-14B": _reduced(400),
    "OpenGVLab/InternVL3-38B": _reduced(400),
    "OpenGVLab/InternVL2_5-1B": [(ALL, EVERY, {})],
    "OpenGVLab/InternVL2_5-2B": _reduced(400),
    "OpenGVLab/InternVL2_5-4B": [(ALL, EVERY, {})],
    "OpenGVLab/InternVL2_5-8B": _reduced(400),
    "OpenGVLab/InternVL2_5-26B": _reduced(400),
    "OpenGVLab/InternVL2-1B": [(ALL, EVERY, {})],
    "OpenGVLab/InternVL2-2B": _reduced(400),
    "OpenGVLab/InternVL2-4B": _reduced(400),
    "OpenGVLab/InternVL2-8B": _reduced(400),
    "mistral-community/pixtral-12b": [(ALL, SHORT, {}), (ALL, LONG, {"image_resize": 0.5})],
    **{f"AIDC-AI/Ovis2-{size}": _reduced(400) for size in ("1B", "2B", "4B", "8B", "16B", "34B")},
    **{
        f"google/gemma-3-{size}-it": [(ALL, EVERY, {}), (("vh", "icl"), (128,), {"max_image_num": 400})]
        for size in ("4b", "12b", "27b")
    },
    **{
        model: [(ALL, SHORT, {}), (NAT, LONG, {"max_image_num": 400, "max_image_size": 384}), (DOC, LONG, {})]
        for model in (
            "gemini-2.0-flash-001",
            "gemini-2.0-flash-thinking-exp-01-21",
            "gemini-2.5-flash-preview-04-17",
            "gemini-2.5-pro-preview-03-25",
        )
    },
    # run_api.sh:121-150: every command with `--image_file_root` the authors' Hub URL.
    "gpt-4o-2024-11-20": [(ALL, SHORT, URL), (NAT, LONG, {**URL, "image_detail": "low"}), (DOC, LONG, URL)],
    # run_api.sh:153-193: local files at 8K/16K, the Hub URL after. The cells it never ran (ICL from 32K, VH and MM-NIAH
    # from 64K, DocVQA at 128K: `not_run`) are run as its other long commands were: the first entry.
    "claude-3-7-sonnet-20250219": [
        (ALL, EVERY, URL),
        (ALL, (8, 16), {"image_file_root": "local"}),
        (("vrag", "vh", "mm_niah_text", "mm_niah_image", "summ", "docqa"), (32,), URL),
        (("vrag", "summ", "docqa"), (64,), URL),
        (("vrag", "summ"), (128,), URL),
    ],
}


def _crops(flags: dict[str, Any]) -> int:
    """InternVL, Phi-3 and Phi-4's wrappers: `num_crops = max(int(4 * image_resize ** 2), 1)`, else 4."""
    resize = flags.get("image_resize")
    return max(int(4 * resize * resize), 1) if resize else 4


def wrapper_policy(ran: str, backend: str, flags: dict[str, Any]) -> InputPolicy:
    """What the model's official wrapper does with a command's flags, as an input policy."""
    keep = flags.get("max_image_num")
    if "InternVL" in ran:
        tiles = {"crop_to_patches": True, "max_patches": _crops(flags)}
        return InputPolicy.of(keep, None, tiles if backend == "hf" else {"max_dynamic_patch": _crops(flags)})
    if "Phi-4" in ran:
        return InputPolicy.of(keep, None, {"dynamic_hd": _crops(flags)})
    if "Phi-3" in ran:
        return InputPolicy.of(keep, None, {"num_crops": _crops(flags)})
    if "Ovis2" in ran:
        return InputPolicy.of(keep, flags.get("image_resize"), {"crop_to_patches": True, "max_patches": 4})
    if "idefics" in ran.lower():
        kwargs: dict[str, Any] = {"do_resize": False} if "Idefics3" in ran else {}
        if "do_image_splitting" in flags:
            kwargs["do_image_splitting"] = flags["do_image_splitting"]
        return InputPolicy.of(keep, flags.get("image_resize"), kwargs)
    if ran.startswith(
        ("gpt-4o", "claude-")
    ):  # openai_model.py: a local file goes as an RGB PNG (:117-124), a URL as is
        png = {"image_format": "png"} if flags.get("image_file_root") == "local" else {}
        return InputPolicy.of(processor_kwargs={"image_detail": flags.get("image_detail", "auto"), **png})
    if ran.startswith("gemini"):
        return InputPolicy.of(keep, None, None, flags.get("max_image_size"))
    return InputPolicy.of(keep, flags.get("image_resize"))  # Pixtral, Gemma 3, Mantis (the processor's defaults)


def script_task(leaf: str) -> str:
    """The run script's name for the task a leaf belongs to."""
    if leaf.startswith("niah_mmniah_"):
        return "mm_niah_text" if leaf.endswith("_text") else "mm_niah_image"
    return {"vrag": "vrag", "niah": "vh", "icl": "icl", "summ": "summ", "docvqa": "docqa"}[leaf.split("_")[0]]


def official_flags(commands: list[Command], task: str, length: int) -> dict[str, Any]:
    """The flags of the last command over this task and length: the run that produced the paper's cell."""
    covering = [flags for tasks, lengths, flags in commands if task in tasks and length in lengths]
    assert covering, f"no official command ran {task} at {length}K"
    return covering[-1]


MMLB_ALIASES = sorted(model.alias for model in PAPER_MODELS.models if model.alias)


@pytest.mark.parametrize("name", MMLB_ALIASES)
def test_each_setting_applies_exactly_where_an_official_command_applied_it(name: str) -> None:
    alias = ALIASES[name]
    run = PAPER_MODELS.run_by(name)
    assert run is not None
    commands = COMMANDS.get(run.ran, [(ALL, EVERY, {})])  # a model run with every default (Qwen)
    for leaf in LEAVES:
        for length in EVERY:
            task = f"mmlongbench_{leaf.name}_{length}k"
            expected = wrapper_policy(run.ran, alias.backend, official_flags(commands, script_task(leaf.name), length))
            assert alias_policy(name, task) == expected, (task, expected.describe())


def test_the_transcription_covers_every_model_the_scripts_flag() -> None:
    ran = {model.ran for model in PAPER_MODELS.models if model.alias}
    assert set(COMMANDS) <= ran
    unflagged = {r for r in ran - set(COMMANDS)}
    assert all(r.startswith("Qwen/") for r in unflagged), unflagged
