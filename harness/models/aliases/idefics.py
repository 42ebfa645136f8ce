"""Idefics2 (and its chatty and Mantis fine-tunes) and Idefics3, as MMLongBench's `vlm_model/idefics.py` runs them.
Image splitting is the processor's default (on for Idefics2 and Idefics3, off for Mantis); Idefics3's wrapper loads
its processor with `do_resize=False` at every length. Where `run_eval.sh` turns splitting off or halves pages is
MMLongBench's (`tasks/mmlongbench/paper_models.py`)."""

from __future__ import annotations

from harness.models.aliases.alias import Alias
from harness.models.aliases.common import hf, wrapper

IDEFICS3_RULES = (
    wrapper(
        "official Idefics3 wrapper: processor do_resize=False (no upscaling to 1456 px)",
        processor_kwargs={"do_resize": False},
    ),
)

ALIASES: dict[str, Alias] = {
    "idefics2": hf("HuggingFaceM4/idefics2-8b", "Idefics2 8B", 8192, prompt_style="idefics"),
    "idefics2-chatty": hf("HuggingFaceM4/idefics2-8b-chatty", "Idefics2 8B chatty", 8192, prompt_style="idefics"),
    "mantis-idefics2": hf(
        "TIGER-Lab/Mantis-8B-Idefics2",
        "Mantis 8B on Idefics2 (its processor does not split images)",
        8192,
        prompt_style="idefics",
    ),
    "idefics3": hf("HuggingFaceM4/Idefics3-8B-Llama3", "Idefics3 8B", 10240, IDEFICS3_RULES, prompt_style="idefics"),
}
