#!/usr/bin/env python
"""Write a tiny, randomly initialised Qwen2.5-VL checkpoint, offline: the real Qwen2.5-VL processor
(Qwen's image processor with its default pixel limits, 14-px patches, 2x2 merge) and model classes,
with a byte-level BPE tokenizer trained in memory and a Qwen-style chat template.

Its answers are noise; what it is for is running the `hf` and `vllm` backends' real code paths on a machine that
cannot download a checkpoint: the processor's image expansion and token counting, multi-image batches,
left padding and generation on a GPU (`scripts/gpu_check.sh tiny-qwen`), or on vLLM's CPU build (its attention heads
are 64 wide, a size the CPU attention takes).

    python scripts/make_tiny_qwen.py OUT_DIR [--context 139264]

Needs torch and transformers. With torchvision it writes Qwen's whole processor (which insists on its video
processor, which needs torchvision); without, the processor's parts (tokenizer, chat template, the image
processor's config), which the `hf` backend loads with `--model_args processor=image_only`.
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

# The tokens Qwen2.5-VL's processor and chat template use.
SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
# Qwen2.5-VL's layout: a default system turn, images as <|vision_start|><|image_pad|><|vision_end|>.
CHAT_TEMPLATE = (
    "{% if messages[0]['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _corpus():
    words = (
        "Given the images answer the question with a single word yes no Answer image needle haystack "
        "which option is correct A B C D the secret number is"
    )
    for i in range(300):
        yield f"{words} {i} {i * 7 % 100}.\n"


def build_tiny_qwen(out_dir: Path, context: int = 139264, seed: int = 0) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        PreTrainedTokenizerFast,
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
    )

    torch.manual_seed(seed)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        _corpus(),
        trainer=trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=SPECIALS,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>", model_max_length=context
    )
    tokenizer.add_special_tokens({"additional_special_tokens": SPECIALS[1:]})
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in SPECIALS}

    config = Qwen2_5_VLConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            # one head of 64 dims: vLLM's CPU attention takes no 16-dim head (`Unsupported CPU attention
            # configuration: head_dim=16`); the rotary sections cover its 32 frequencies, as Qwen's 64 of 128
            num_attention_heads=1,
            num_key_value_heads=1,
            max_position_embeddings=context,
            rope_scaling={"type": "mrope", "mrope_section": [8, 12, 12]},
            bos_token_id=None,
            eos_token_id=ids["<|im_end|>"],
            pad_token_id=ids["<|endoftext|>"],
        ),
        vision_config=dict(
            depth=2,
            hidden_size=32,
            intermediate_size=64,
            num_heads=2,
            out_hidden_size=64,
            patch_size=14,
            spatial_merge_size=2,
            temporal_patch_size=2,
            window_size=112,
            fullatt_block_indexes=[1],
        ),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        bos_token_id=None,
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
    )
    model = Qwen2_5_VLForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    if importlib.util.find_spec("torchvision"):
        from transformers import Qwen2_5_VLProcessor, Qwen2VLImageProcessor, Qwen2VLVideoProcessor

        Qwen2_5_VLProcessor(
            image_processor=Qwen2VLImageProcessor(),
            tokenizer=tokenizer,
            video_processor=Qwen2VLVideoProcessor(),
            chat_template=CHAT_TEMPLATE,
        ).save_pretrained(out_dir)
    else:  # the same parts, as Qwen2_5_VLProcessor would have written them but for its video processor
        from transformers import Qwen2VLImageProcessorPil

        tokenizer.chat_template = CHAT_TEMPLATE
        tokenizer.save_pretrained(out_dir)
        Qwen2VLImageProcessorPil().save_pretrained(out_dir)  # saved as Qwen2VLImageProcessor, its default backend
    return out_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--context", type=int, default=139264, help="max_position_embeddings (default: 139264)")
    args = parser.parse_args()
    print(build_tiny_qwen(args.out_dir, args.context))


if __name__ == "__main__":
    main()
