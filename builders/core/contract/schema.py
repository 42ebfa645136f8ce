"""The contract's schema: the columns every row carries, how a build stores its images, the image table's
columns, and the token rule the rows' figures follow."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal, get_args

IMAGE_PLACEHOLDER = "<image>"

# ------------------------------------------------------------------------------------------ rows

ID = "id"
IMAGES = "images"
IMAGE_SHA256 = "image_sha256"
IMAGE_SIZES = "image_sizes"
NUM_IMAGES = "num_images"
TEXT_TOKENS = "text_tokens"
IMAGE_TOKENS = "image_tokens"

ImageStorage = Literal["embedded", "shared"]
EMBEDDED: ImageStorage = "embedded"
SHARED: ImageStorage = "shared"
IMAGE_STORAGES: tuple[ImageStorage, ...] = get_args(ImageStorage)


def row_features(image_storage: str = EMBEDDED) -> dict[str, Any]:
    """The contract's columns as `datasets` features, by name (a benchmark places them among its own)."""
    from datasets import Image, List, Value

    check_image_storage(image_storage)
    features: dict[str, Any] = {ID: Value("string")}
    if image_storage == EMBEDDED:
        features[IMAGES] = List(Image())
    features.update(
        {
            IMAGE_SHA256: List(Value("string")),
            IMAGE_SIZES: List(List(Value("int32"))),
            NUM_IMAGES: Value("int32"),
            TEXT_TOKENS: Value("int32"),
            IMAGE_TOKENS: List(Value("int32")),
        }
    )
    return features


# `row_features` as `Features.to_dict()` writes it into a build's files, without importing `datasets`: what the harness
# checks a build's declared contract columns against (a test holds the two equal).
_STRING: dict[str, object] = {"dtype": "string", "_type": "Value"}
_INT32: dict[str, object] = {"dtype": "int32", "_type": "Value"}


def _listed(feature: Mapping[str, object]) -> dict[str, object]:
    return {"feature": dict(feature), "_type": "List"}


def row_feature_dicts(image_storage: str = EMBEDDED) -> dict[str, dict[str, object]]:
    """The contract's columns as `Features.to_dict()` writes `row_features(image_storage)`."""
    check_image_storage(image_storage)
    features: dict[str, dict[str, object]] = {ID: _STRING}
    if image_storage == EMBEDDED:
        features[IMAGES] = _listed({"_type": "Image"})
    features.update(
        {
            IMAGE_SHA256: _listed(_STRING),
            IMAGE_SIZES: _listed(_listed(_INT32)),
            NUM_IMAGES: _INT32,
            TEXT_TOKENS: _INT32,
            IMAGE_TOKENS: _listed(_INT32),
        }
    )
    return features


def check_features(features: Mapping[str, object], image_storage: str, where: str) -> None:
    """Raise `ValueError` naming `where` when `features` lack a contract column or type one differently."""
    expected = row_features(image_storage)
    for name, feature in expected.items():
        if name not in features:
            raise ValueError(f"{where}: the contract column {name!r} is missing (expected {feature})")
        if features[name] != feature:
            raise ValueError(f"{where}: column {name!r} is {features[name]}, the contract says {feature}")
    if image_storage == SHARED and IMAGES in features:
        raise ValueError(f"{where}: a build with shared image storage keeps images out of the rows ({IMAGES!r})")


def check_image_storage(image_storage: str) -> str:
    if image_storage not in IMAGE_STORAGES:
        raise ValueError(f"image storage must be one of {', '.join(IMAGE_STORAGES)}, got {image_storage!r}")
    return image_storage


# --------------------------------------------------------------------------- the image table

IMAGE_TABLE_CONFIG = "image_table"
IMAGE_TABLE_SPLIT = "test"


def image_table_features() -> dict[str, Any]:
    from datasets import Image, Value

    return {"sha256": Value("string"), "image": Image(), "width": Value("int32"), "height": Value("int32")}


def image_table_feature_dicts() -> dict[str, dict[str, object]]:
    """`image_table_features()` as `Features.to_dict()` writes it."""
    return {"sha256": _STRING, "image": {"_type": "Image"}, "width": _INT32, "height": _INT32}


# ------------------------------------------------------------------------------ the token rule

# Qwen2-VL's rule (MMLongBench §3.2): 14 x 14 patches merged 2 x 2, so one token per 28 x 28 block of
# the image after `smart_resize`. The id is recorded in every manifest; change it with the rule.
TOKEN_RULE = "qwen2vl-smart-resize-28px-v1"
PATCH_FACTOR = 28
MIN_PIXELS = 56 * 56
MAX_PIXELS = 28 * 28 * 16384
QWEN_DEFAULT_MAX_PIXELS = 28 * 28 * 1280  # Qwen2-VL's recommended cap: at most 1,280 tokens per image


def smart_resize(
    height: int,
    width: int,
    factor: int = PATCH_FACTOR,
    min_pixels: int = MIN_PIXELS,
    max_pixels: int = MAX_PIXELS,
) -> tuple[int, int]:
    """Qwen2-VL's resize rule: the (height, width) a processor would feed the vision tower.

    Each side is rounded to the nearest multiple of `factor` (at least `factor`); an area outside
    [min_pixels, max_pixels] is scaled into it, keeping the aspect ratio.
    """
    if height <= 0 or width <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def image_tokens(width: int, height: int, *, min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS) -> int:
    """Vision tokens of one `width` x `height` image under `TOKEN_RULE`, with the given pixel limits."""
    h_bar, w_bar = smart_resize(height, width, min_pixels=min_pixels, max_pixels=max_pixels)
    return (h_bar // PATCH_FACTOR) * (w_bar // PATCH_FACTOR)
