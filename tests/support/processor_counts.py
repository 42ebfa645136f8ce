"""What a vision-language processor makes of an image, for the tests that hold a family's image-token rule to its
processor: the image tokens it writes for one image, and the spread of sizes and shapes the rules are checked over."""

from __future__ import annotations

from typing import Any

from PIL import Image

# square, landscape, portrait, very wide, very tall, larger than any cap, smaller than one patch
SIZES = [(256, 256), (1000, 700), (640, 480), (480, 640), (1920, 300), (300, 1920), (50, 800), (3000, 2000), (20, 30)]


def expanded(processor: Any, image_token: str, width: int, height: int, **settings: Any) -> int:
    """The image tokens the processor writes into the text for one image of this size."""
    image = Image.new("RGB", (width, height), (90, 30, 200))
    inputs = processor(text=[f"a {image_token} b"], images=[image], return_tensors="pt", **settings)
    return inputs["input_ids"][0].tolist().count(processor.tokenizer.convert_tokens_to_ids(image_token))
