"""`harness models --by_config`: every image-text-to-text `model_type` of the installed transformers, with what the
harness knows of it. Any of them runs with `--model hf` through transformers' Auto classes, the checkpoint's own
processor and chat template; what differs between them is how a prompt is counted before it is sent (`--screen_only`
and the run's over-length screen):

- exact where the type's processor tells an image's tokens from its size (transformers'
  `_get_num_multimodal_tokens`, as vLLM asks it);
- else measured: the processor is given a blank image of each size and its expansion counted
  (`harness.models.shared.hf_counting.measured`);
- only where that fails, an estimate, by the family's rule where a family module names the type
  (`harness.models.families`), else by the rows' own rule. Either way the real input ids are checked before
  `generate`.

A family module adds only what a checkpoint cannot say: an offline image-token rule, the papers' prompt styles, its
aliases. Read from transformers' own mappings, never from a list kept here.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path

from harness.models.families import families, family_of

# Recent types: the year transformers' modeling file is dated (its copyright line), where the field's new models are.
_YEAR = re.compile(r"Copyright (?:\(c\) )?(\d{4})")


@dataclass(frozen=True)
class ConfigType:
    """One image-text-to-text `model_type` and what the harness knows of it."""

    model_type: str
    model_class: str
    processor: str  # its processor class, or where the processor comes from when transformers maps none
    counts: str  # "exact", or "estimate: by ..." (see the module docstring)
    family: str  # the family module that names the type, or ""
    year: str  # the year its modeling file is dated, or ""


def _dated(model_type: str) -> str:
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    folder = Path(importlib.import_module("transformers").__file__ or "").parent / "models"
    folder = folder / model_type_to_module_name(model_type)
    for path in sorted(folder.glob("modeling_*.py")):
        with path.open(encoding="utf-8") as f:
            found = _YEAR.search(f.read(3000))
        if found:
            return found.group(1)
    return ""


def _counts(processor_class: str | None, family: str) -> tuple[str, str]:
    """(the processor in words, how a prompt with images is counted before it is sent)."""
    import transformers
    from transformers.processing_utils import ProcessorMixin

    by_rule = f"estimate: the {family} family's rule" if family else "estimate: the rows' own rule (no family module)"
    if processor_class is None:
        return "the checkpoint's own (transformers maps none)", f"exact or measured where it loads, else {by_rule}"
    try:
        cls = getattr(transformers, processor_class)
    except Exception as err:  # a processor whose module needs what is not installed
        return processor_class, f"{by_rule} (the processor does not load here: {type(err).__name__}: {err})"
    own = {name for klass in cls.__mro__ if klass is not ProcessorMixin for name in vars(klass)}
    if "_get_num_multimodal_tokens" in own:
        return processor_class, "exact"
    return processor_class, f"measured (a blank image of each size), else {by_rule}"


def config_types(name: str | None = None) -> list[ConfigType]:
    """Every image-text-to-text `model_type` of the installed transformers (those holding `name`, where given)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES

    out = []
    for model_type, model_class in sorted(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.items()):
        if name and name not in model_type:
            continue
        variant = family_of(model_type, (model_class,))
        family = next((f.name for f in families() if variant in f.variants), "") if variant else ""
        processor, counts = _counts(PROCESSOR_MAPPING_NAMES.get(model_type), family)
        out.append(ConfigType(model_type, model_class, processor, counts, family, _dated(model_type)))
    return out


def by_config_listing(name: str | None = None) -> str:
    """The table `harness models --by_config` prints, and a line of totals."""
    import transformers

    rows = config_types(name)
    head = ("model_type", "dated", "family module", "processor", "counted before sending")
    table = [head] + [(t.model_type, t.year or "-", t.family or "-", t.processor, t.counts) for t in rows]
    widths = [max(len(row[i]) for row in table) + 2 for i in range(len(head) - 1)]
    lines = ["".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + row[-1] for row in table]
    exact = sum(t.counts == "exact" for t in rows)
    named = sum(bool(t.family) for t in rows)
    lines.append(
        f"\n{len(rows)} image-text-to-text model types in transformers {transformers.__version__}: --model hf loads "
        f"each with the Auto classes, the checkpoint's processor and its chat template, no family module needed "
        f"(docs/models.md: those run end to end here); {exact} counted exactly by the processor's own size count, "
        f"the rest measured through the processor, all checked on the real input ids; {named} named by a family "
        "module."
    )
    return "\n".join(lines)
