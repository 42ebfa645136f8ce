"""Idefics2 (and its chatty and Mantis fine-tunes) and Idefics3, as MMLongBench's `vlm_model/idefics.py` and
`run_eval.sh` run them. Image splitting is the processor's default (on for Idefics2 and Idefics3, off for Mantis) and
is turned off only where a command passes `--do_image_splitting False`: the natural-image tasks at 64K/128K, except
VRAG for idefics2-8b (its command lists vh, mm_niah and icl only). Idefics3's wrapper loads its processor with
`do_resize=False` at every length; at 64K/128K its documents (summ, docqa) are resized to half each side
(`--image_resize 0.5`, LANCZOS) and its natural images are not split."""

from __future__ import annotations

from harness.models.aliases.alias import Alias
from harness.models.aliases.common import hf, milebench, mmlb, mmneedle
from harness.models.aliases.rules import DOCUMENTS, LONG, NATURAL, rule, tasks, wrapper

NO_SPLIT = {"do_image_splitting": False}
IDEFICS2_RULES = (
    rule(
        tasks(("vh", "mm_niah_text", "mm_niah_image", "icl"), LONG),
        "run_eval.sh: --do_image_splitting False on vh, mm_niah and icl at 64K/128K (VRAG keeps the default)",
        processor_kwargs=NO_SPLIT,
    ),
)
CHATTY_RULES = (
    rule(
        tasks(NATURAL, LONG),
        "run_eval.sh: --do_image_splitting False on natural images at 64K/128K",
        processor_kwargs=NO_SPLIT,
    ),
)
IDEFICS3_RULES = (
    wrapper(
        "official Idefics3 wrapper: processor do_resize=False (no upscaling to 1456 px)",
        processor_kwargs={"do_resize": False},
    ),
    rule(
        tasks(NATURAL, LONG),
        "run_eval.sh: --do_image_splitting False on natural images at 64K/128K",
        processor_kwargs=NO_SPLIT,
    ),
    rule(tasks(DOCUMENTS, LONG), "run_eval.sh: --image_resize 0.5 on summ and docqa at 64K/128K", image_scale=0.5),
)
NO_NEEDLE_WRAPPER = (
    "MMNeedle published no wrapper for its open models (only a Fuyu template): the checkpoint's own chat template "
    "and processor defaults stand in"
)

ALIASES: dict[str, Alias] = {
    "idefics2": hf(
        "HuggingFaceM4/idefics2-8b",
        "Idefics2 8B",
        8192,
        mmlb("Idefics2-8B", "HuggingFaceM4/idefics2-8b"),
        mmneedle("IDEFICS2-8B", "HuggingFaceM4/idefics2-8b", NO_NEEDLE_WRAPPER),
        rules=IDEFICS2_RULES,
        prompt_style="idefics",
    ),
    "idefics2-chatty": hf(
        "HuggingFaceM4/idefics2-8b-chatty",
        "Idefics2 8B chatty",
        8192,
        mmlb("Idefics2-8B-C", "HuggingFaceM4/idefics2-8b-chatty"),
        rules=CHATTY_RULES,
        prompt_style="idefics",
    ),
    "mantis-idefics2": hf(
        "TIGER-Lab/Mantis-8B-Idefics2",
        "Mantis 8B on Idefics2 (its processor does not split images)",
        8192,
        mmlb("Mantis-Idefics2", "TIGER-Lab/Mantis-8B-Idefics2"),
        milebench(
            "Mantis",
            "a 7B Mantis (checkpoint not named)",
            "the paper names no checkpoint for its 7B Mantis (App. C.1 is missing): the Idefics2-based 8B stands in",
        ),
        prompt_style="idefics",
    ),
    "idefics3": hf(
        "HuggingFaceM4/Idefics3-8B-Llama3",
        "Idefics3 8B",
        10240,
        mmlb("Idefics3-8B", "HuggingFaceM4/Idefics3-8B-Llama3"),
        rules=IDEFICS3_RULES,
        prompt_style="idefics",
    ),
}
