"""A tiny random checkpoint of a family that answers one scripted text, whatever it is asked: a stand-in for a thinking
model in end-to-end runs (`tests/harness/models/test_thinking_aliases.py`). The family's real processor class and
published template around a tiny tokenizer, its config class shrunk (`tests.support.forward_families`), and a
`generation_config.json` whose `sequence_bias` makes greedy decoding write the script token by token: each prefix of
the script biases its next token above any shorter prefix's, so the random weights never decide. It is saved with
`save_pretrained` and loaded by the `hf` backend as a user's checkpoint is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.forward_families import ForwardFamily
from tests.support.forward_pass import _record_own_arguments, _root


def scripted_checkpoint(family: ForwardFamily, script: str, processor: Any = None) -> Path:
    """A folder with `family`'s tiny model (its `processor`, or the family's) that answers `script`, then its EOS."""
    import torch
    from transformers import AutoModelForImageTextToText

    assert family.make_processor is not None and family.make_config is not None
    processor = processor if processor is not None else family.make_processor()
    tokenizer = processor.tokenizer
    torch.manual_seed(0)
    model = AutoModelForImageTextToText.from_config(family.make_config(tokenizer)).eval()
    ids = [*tokenizer(script, add_special_tokens=False).input_ids, tokenizer.eos_token_id]
    assert tokenizer.decode(ids, skip_special_tokens=True) == script, "the script does not survive decoding"
    config = model.generation_config
    config.sequence_bias = [[ids[: k + 1], 20.0 + 10.0 * k] for k in range(len(ids))]
    config.bos_token_id, config.eos_token_id, config.pad_token_id = (
        tokenizer.bos_token_id,
        tokenizer.eos_token_id,
        tokenizer.pad_token_id,
    )
    folder = _root() / f"scripted-{family.name}-{len(list(_root().iterdir()))}"  # removed when the process ends
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    if family.model_args.get("processor") == "image_only":
        _record_own_arguments(processor, folder)
    return folder
