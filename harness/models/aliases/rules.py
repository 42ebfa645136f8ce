"""Where an official run script applied a setting: MMLongBench's tasks by category and length, as
`scripts/run_eval.sh` and `scripts/run_api.sh` (26197d2) split their commands by `--task_list` and `--length_list`.

A script's task names map to the harness's task globs (`vh` and `mm_niah_*` are both NIAH here); a setting is a
`TaskRule` over the globs of the tasks and lengths its command named, and nowhere else.
"""

from __future__ import annotations

from typing import Any

from harness.inputs.input_policy import InputPolicy, TaskRule

# The official scripts' task names (configs/<task>_all.yaml) -> the harness's task globs.
SCRIPT_TASKS = {
    "vrag": "mmlongbench_vrag_*",
    "vh": "mmlongbench_niah_vh_*",
    "mm_niah_text": "mmlongbench_niah_mmniah_*_text",
    "mm_niah_image": "mmlongbench_niah_mmniah_*_image",
    "icl": "mmlongbench_icl_*",
    "summ": "mmlongbench_summ_*",
    "docqa": "mmlongbench_docvqa_*",
}
# The natural-image tasks, where the scripts reduce image tokens at 64K/128K, and the text-rich ones.
NATURAL = ("vrag", "vh", "mm_niah_text", "mm_niah_image", "icl")
DOCUMENTS = ("summ", "docqa")
LENGTHS = ("8k", "16k", "32k", "64k", "128k")
LONG = ("64k", "128k")


def tasks(names: tuple[str, ...] | list[str], lengths: tuple[str, ...] = LENGTHS) -> tuple[str, ...]:
    """The globs of the script tasks `names` at `lengths` (a script's `--task_list` x `--length_list`)."""
    return tuple(f"{SCRIPT_TASKS[name]}_{length}" for name in names for length in lengths)


def rule(globs: tuple[str, ...], why: str, **policy: Any) -> TaskRule:  # policy: InputPolicy.of's keywords
    return TaskRule(globs, InputPolicy.of(**policy), why)


def every_length(why: str, **policy: Any) -> TaskRule:
    """A run script's setting for every MMLongBench task at every length (the ablations and the lengths past 128K,
    which the official code never ran, included)."""
    return rule(("mmlongbench_*",), why, **policy)


def wrapper(why: str, **policy: Any) -> TaskRule:
    """A wrapper's own setting (InternVL's 4 tiles, Ovis2's max_partition): every task of every benchmark, the model's
    one official wrapper being MMLongBench's."""
    return rule(("*",), why, **policy)
