"""Every input rule of every `hf` alias at every length, with each benchmark's arguments, as forward passes (issue
51): what `tests/harness/models/test_forward_pass_rules.py` runs.

An alias meets a request through three things: the input policy of the task (its own rules, `Alias.rules`, then its
paper run's on that benchmark, `PaperModel.rules`: processor settings, image scaling, the last N images), the model
arguments of the benchmark (`PaperModel.args`: MileBench's `llava_llama_2` prompt style; `own_context` where the
benchmark truncates to the model's context), and the rows of the task (MMLongBench's categories at 8K-128K,
MileBench's interleaved and combined images, MMNeedle's stitched images, LoCoVQA's interleaved and composed
contexts). `SLOTS` are those rows, one task standing for each (benchmark, kind of row, length); `rule_cases` pairs
every `hf` alias of a family that runs here with every slot, resolves its policy and arguments as a run does
(`alias_policy`, `resolve`), and keeps one case per distinct (family, benchmark, input policy, model arguments): the
same processor settings and prompt style, sent by aliases of one checkpoint shape (InternVL3 1B-38B, Ovis2 1B-34B,
Gemma 3 4B-27B) or at lengths and on kinds of row that share a policy (MMLongBench's 8K-32K defaults; Idefics2's
unsplit images on VH, MM-NIAH and ICL at 64K and 128K, and -chatty's on VRAG), are one forward pass. The longest
row of the group stands for it, of the kind that holds the most images (`SLOTS` lists a benchmark's kinds in that
order); each case names what it stands for (`covers`).

The rows are fixture builds (`build_fixtures`): MMLongBench's fixture source at every length (a few small images a
row), MileBench's fixture source, MMNeedle's synthetic source (the 512-px stitched images of m10_n2 and the 1,024-px
one of m1_n4: the 2,048-px n8 images make Qwen's dynamic resolution tens of thousands of tokens, minutes on a CPU,
for no other setting) and LoCoVQA's synthetic source (nine contexts, interleaved and composed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.api import Request
from harness.config.task_index import TaskIndex
from harness.inputs.input_policy import InputPolicy, apply_policy
from harness.models.aliases import ALIASES, alias_policy, resolve, task_benchmarks
from harness.running.task.task import Task
from tests.support.forward_families import FAMILIES, ForwardFamily

LENGTHS = ("8k", "16k", "32k", "64k", "128k")
# MMLongBench's kinds of row (the official scripts' task names) and the task that stands for each, those whose
# fixture rows hold the most images first (16, 13, 8, 8, 7, 6 and 1 at 128K).
MMLONGBENCH_KINDS = {
    "icl": "icl_food101",
    "vh": "niah_vh_single",
    "mm_niah_image": "niah_mmniah_ret_image",
    "mm_niah_text": "niah_mmniah_ret_text",
    "docqa": "docvqa_slidevqa",
    "summ": "summ_govreport",
    "vrag": "vrag_infoseek",
}
# Model arguments a tiny checkpoint stands in for, or that shape no token: the rest reach the backend.
NOT_PASSED = {
    "pretrained": "the family's tiny checkpoint stands in for the alias's",
    "dtype": "the tiny model runs in float32 on the CPU; a dtype changes no token",
}


@dataclass(frozen=True)
class Slot:
    """A kind of row of a benchmark at one length, and the task whose first fixture row stands for it."""

    benchmark: str  # as its declaration names it, lower-cased (what a paper table's `run_by` is keyed by)
    kind: str
    length: str  # "" where the benchmark has no lengths
    task: str
    dataset_config: str = ""  # where the task's name does not give it

    @property
    def config(self) -> str:
        prefix = self.benchmark.replace("-", "_") + "_"
        return self.dataset_config or self.task.removeprefix(prefix).removesuffix("_pos")


SLOTS: tuple[Slot, ...] = (
    *(
        Slot("mmlongbench", kind, length, f"mmlongbench_{task}_{length}")
        for kind, task in MMLONGBENCH_KINDS.items()
        for length in LENGTHS
    ),
    Slot("milebench", "interleaved", "", "milebench_image_needle"),
    Slot("milebench", "combined", "", "milebench_image_needle_combined"),
    Slot("mmneedle", "m10", "", "mmneedle_m10_n2_k1_pos"),
    Slot("mmneedle", "m1", "", "mmneedle_m1_n4_k1_pos"),
    Slot("locovqa", "interleaved", "", "locovqa_okvqa_int_9"),
    Slot("locovqa", "composed", "", "locovqa_okvqa_cmp_9"),
    Slot("mm-niah", "image needle", "", "mm_niah_retrieval_image_val"),
    Slot("mmlongbench-doc", "pages", "", "mmlongbench_doc", "test"),
)


@dataclass(frozen=True)
class RuleCase:
    """One forward pass: a family's tiny model sent the first row of `slot`'s task under `policy`, with `args`."""

    family: str
    slot: Slot  # the longest of the slots it stands for
    policy: InputPolicy
    args: tuple[tuple[str, str], ...]  # the resolved model arguments the backend is given
    covers: tuple[tuple[str, str], ...]  # every (alias, task) it stands for

    @property
    def id(self) -> str:
        settings = self.policy.describe()
        shown = [f"{k}={v}" for k, v in sorted(settings.pop("processor_kwargs", {}).items())]
        shown += [f"{k}={v}" for k, v in sorted(settings.items())]
        shown += [f"{k}={v}" for k, v in self.args if k in ("prompt_style", "no_context_limit", "max_grid_tiles")]
        row = "@".join(filter(None, (self.slot.kind, self.slot.length)))
        return "/".join((self.family, self.slot.benchmark, row, ",".join(shown)))

    @property
    def stands_for(self) -> str:
        """The aliases, kinds of row and lengths it stands for, in words."""
        aliases = sorted({alias for alias, _ in self.covers})
        slots = [slot for slot in SLOTS if any(task == slot.task for _, task in self.covers)]
        kinds = sorted({slot.kind for slot in slots})
        lengths = sorted({slot.length for slot in slots if slot.length}, key=_length)
        return f"{', '.join(aliases)} on {self.slot.benchmark}'s {', '.join(kinds)} {'+'.join(lengths)}".strip()


def _length(length: str) -> int:
    return LENGTHS.index(length) if length in LENGTHS else -1


def hf_aliases(family: ForwardFamily) -> tuple[str, ...]:
    """The family's `hf` aliases (a row also names its placeholders for models without an alias yet)."""
    return tuple(name for name in family.aliases if name in ALIASES and ALIASES[name].backend == "hf")


def model_args(alias: str, task: str) -> tuple[tuple[str, str], ...]:
    """The alias's model arguments on a run of `task` (its benchmark's paper arguments and context over its own),
    less those the tiny checkpoint stands in for (`NOT_PASSED`)."""
    _, args, _ = resolve(alias, {}, task_benchmarks([task]))
    return tuple(sorted((k, v) for k, v in args.items() if k not in NOT_PASSED))


def rule_cases() -> list[RuleCase]:
    """One case per distinct (family, benchmark, input policy, model arguments) over every `hf` alias of a family
    that runs here and every slot; the longest slot of the group, of the kind listed first, stands for it."""
    groups: dict[tuple[object, ...], list[tuple[str, Slot]]] = {}
    for family in FAMILIES:
        if not family.runs:
            continue
        for alias in hf_aliases(family):
            for slot in SLOTS:
                policy, args = alias_policy(alias, slot.task), model_args(alias, slot.task)
                groups.setdefault((family.name, slot.benchmark, policy, args), []).append((alias, slot))
    cases = []
    for (family_name, _, policy, args), members in groups.items():
        slot = max((slot for _, slot in members), key=lambda s: (_length(s.length), -SLOTS.index(s)))
        cases.append(RuleCase(family_name, slot, policy, args, tuple((a, s.task) for a, s in members)))
    return cases


def build_fixtures(root: Path) -> Path:
    """Every slot's rows, built by the real builders from their offline sources into `root` (a `--data_dir`)."""
    from builders.locovqa.build import build_locovqa
    from builders.milebench.build import build_milebench
    from builders.mm_niah.build import build_mm_niah
    from builders.mmlongbench.build import build_mmlongbench
    from builders.mmlongbench_doc.build import build_mmlongbench_doc
    from builders.mmneedle import build_mmneedle

    def configs(benchmark: str) -> list[str]:
        return sorted({slot.config for slot in SLOTS if slot.benchmark == benchmark})

    build_mmlongbench(source="fixture", out_dir=root, configs=configs("mmlongbench"))
    build_milebench(source="fixture", out_dir=root, configs=configs("milebench"))
    build_mmneedle(source="synthetic", out_dir=root, configs=configs("mmneedle"), limit=1, seed=0, num_proc=1)
    build_locovqa(source=["synthetic"], out_dir=root, configs=configs("locovqa"), limit=1)
    build_mm_niah(source="fixture", out_dir=root, configs=configs("mm-niah"))
    build_mmlongbench_doc(source="fixture", out_dir=root, configs=configs("mmlongbench-doc"))
    return root


def alias_request(alias: str, task_name: str, data: Path) -> tuple[Request, dict[str, str]]:
    """The first row of a task as the runner sends it to an alias: the alias's input policy applied; with the
    alias's `--model_args` for that task."""
    return policy_request(alias_policy(alias, task_name), task_name, data), dict(model_args(alias, task_name))


def policy_request(policy: InputPolicy, task_name: str, data: Path) -> Request:
    """The first row of a task as the runner builds it, with `policy` applied (the row read once per task)."""
    key = (task_name, str(data))
    if key not in _FIRST_ROWS:
        if not _INDEX:
            _INDEX.append(TaskIndex())
        task = Task(_INDEX[0].tasks[task_name])
        task.load(data, 1)
        doc_id, doc = next(task.iter_docs())
        _FIRST_ROWS[key] = task.build_request(doc_id, doc, task.generation_settings({}))
    return apply_policy(_FIRST_ROWS[key], policy)


_INDEX: list[TaskIndex] = []
_FIRST_ROWS: dict[tuple[str, str], Request] = {}
