"""A tiny LLaVA checkpoint made offline in seconds, for the harness tests and the bench scripts.

A byte-level BPE tokenizer trained in memory, a CLIP image processor at 28x28 (4 image tokens per image), a
LlavaProcessor with a small chat template, and a 2-layer CLIP + 2-layer Llama model, seeded, saved with
`save_pretrained` so the harness loads it as it would a user's checkpoint (the recipe NOTES.md records as working
offline). A module of its own, not a fixture: the bench scripts import it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support import tiny_vlm_configs

SPECIALS = ["<pad>", "<s>", "</s>", "<image>"]
# Text parts verbatim, image parts as the literal <image> token (expanded by the processor).
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: "
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<image>{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def _corpus():
    words = "Given images indexed subimage caption row column index Respond answer user assistant -1"
    for i in range(200):
        yield f"{words} {i % 10 + 1}, {(i * 3) % 10 + 1}, {(i * 7) % 10 + 1}; -1\n"


def tiny_tokenizer(extra_special: tuple[str, ...] = ("<image>",), text_tokenizer: Any = None):
    """A byte-level BPE tokenizer trained in memory on a few prompt words, with `extra_special` tokens;
    `text_tokenizer` (a `tokenizers.Tokenizer`) replaces the trained BPE."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        _corpus(),
        trainer=trainers.BpeTrainer(
            vocab_size=300,
            special_tokens=SPECIALS,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    chosen = bpe if text_tokenizer is None else text_tokenizer
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=chosen, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    tokenizer.add_special_tokens({"additional_special_tokens": list(extra_special)})
    return tokenizer


def build_tiny_llava(out_dir: Path, image_size: int = 28, text_tokenizer: Any = None) -> Path:
    """`image_size` 336 gives LLaVA-1.5's shape: 576 tokens per image, whatever the image; `text_tokenizer` (a
    `tokenizers.Tokenizer`) replaces the byte-level BPE trained here."""
    import torch
    from transformers import CLIPImageProcessor, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    torch.manual_seed(0)
    tokenizer = tiny_tokenizer(text_tokenizer=text_tokenizer)
    image_token_id = tokenizer.convert_tokens_to_ids("<image>")

    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(
            size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}
        ),
        tokenizer=tokenizer,
        patch_size=14,
        vision_feature_select_strategy="default",
        chat_template=CHAT_TEMPLATE,
        image_token="<image>",
        num_additional_image_tokens=1,
    )
    # The tiny widths of every family's tiny config (tests/support/tiny_vlm_configs.py), two layers deep.
    config = LlavaConfig(
        vision_config=tiny_vlm_configs.vit("clip_vision_model", image_size, 14, num_hidden_layers=2),
        text_config=tiny_vlm_configs.text(tokenizer, "llama", num_hidden_layers=2, max_position_embeddings=4096),
        image_token_id=image_token_id,
        vision_feature_select_strategy="default",
    )
    model = LlavaForConditionalGeneration(config).eval()
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        setattr(model.generation_config, key, getattr(tokenizer, key))
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)
    return out_dir
