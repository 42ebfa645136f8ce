"""docs/models.md's table: a line for each image-text-to-text type of the installed transformers, written from what the
type's tiny checkpoint (`tests.support.checkpoint_factory`) measures (issue 89, item 4), so that a line says no more
than was measured: whether the checkpoint builds and runs, and how far the `hf` backend's count before sending (the
`--screen_only` stand-in's, the run's screen) is from the input ids its run sends, for one image of a size and shape
the count's load-time probe does not use (`hf_expansion.PROBE_SIZE`) and for three images of three sizes.

tests/harness/models/test_any_checkpoint.py measures each type again and fails where its line differs; `make
models-table` (`python -m tests.support.models_table [TYPE ...]`) writes the lines, of every type or of those named.
"""

from __future__ import annotations

import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.api import TOO_MANY_IMAGES, Request
from tests.support.checkpoint_factory import RUNS, CannotBuild, build, dated, image_text_types, published_refusal
from tests.support.forward_pass import CHECKPOINT_ARGS, ForwardPass, checkpoint_backend, checkpoint_pass
from tests.support.model_requests import encode_image, make_request

PAGE = Path(__file__).resolve().parents[2] / "docs" / "models.md"
# One image wider than 3:1, of a size the probe does not use; three images of three sizes and shapes
ONE = ((517, 133),)
SEVERAL = ((517, 133), (64, 48), (131, 389))
# Types that build but whose run fails here, each on the toy tasks named, with the error the samples record (the test
# checks that it still does); the day one runs, the test fails and the line is written again.
FAILS_HERE = {
    # the hf backend gives the processor each prompt's images as a list, which GOT-OCR2 takes for a multi-page scan
    "got_ocr2": (
        "toy_colors toy_pairs",
        "ValueError: Nested images are only supported with `multi_page` set to `True`.",
    ),
    # Florence-2's and Kosmos-2.5's processors put one image's tokens before each prompt, whatever its images: the hf
    # backend sends toy_pairs' two images in one prompt to these one-image models, which has more features than tokens
    "florence2": ("toy_pairs", "ValueError: Image features and image tokens do not match, tokens: 50, features: 100"),
    "kosmos-2.5": (
        "toy_pairs",
        "RuntimeError: shape mismatch: value tensor of shape [4096, 64] cannot be broadcast to indexing result of "
        "shape [2048, 64]",
    ),
}


@dataclass(frozen=True)
class Measured:
    """One request of images of `sizes`: the screen's count of it, and the run's (its count, the input ids sent)."""

    sizes: tuple[tuple[int, int], ...]
    screened: int  # the `--screen_only` stand-in's count
    screened_exact: bool  # whether the screen says that count is exact
    run: ForwardPass

    @property
    def off(self) -> str:
        """The count against the input ids sent (the model may fail on them after), in the table's words."""
        if self.run.error and self.run.error.startswith(TOO_MANY_IMAGES):
            return TOO_MANY_IMAGES  # more than the one image a prompt its model takes (BLIP-2's), refused
        if not self.run.prompt_tokens:
            return "not sent (its processor fails)"
        off = self.screened - self.run.prompt_tokens
        return "exact" if off == 0 else f"{abs(off)} {'over' if off > 0 else 'under'}"


def request(sizes: tuple[tuple[int, int], ...]) -> Request:
    """A prompt of images of `sizes` between words (its doc id its own: the count keeps a document's count)."""
    parts: list[str | bytes] = ["Look: "]
    for k, size in enumerate(sizes):
        parts += [encode_image((40 * k, 200, 30), size, "PNG"), f" and {k} "]
    return make_request("measured", [*parts, "what?"], doc_id=len(sizes))


def measure(folder: Path) -> tuple[str, list[Measured]]:
    """How the checkpoint's count counts an image (its processor's size count, a blank image of its size measured, or
    an estimate), and the one-image and three-image requests as screened and as run."""
    from harness.models.backends.hf import screen_model

    count = checkpoint_backend(folder).count
    how = "its size count" if count.counts_images else "measured" if count.measures_images else "an estimate"
    how = "the tokens ahead of its text" if count.ahead else how
    screen = screen_model({"pretrained": str(folder), **CHECKPOINT_ARGS})
    measured = []
    for sizes in (ONE, SEVERAL):
        sent = request(sizes)
        measured.append(
            Measured(sizes, screen.prompt_tokens(sent), screen.exact(sent), checkpoint_pass(folder, sent, caught=True))
        )
    return how, measured


def counted(how: str, measured: list[Measured]) -> str:
    """The table's last column: how the count counts, and how far it is from what the run sends."""
    one, several = measured
    return f"{how}; 1 image: {one.off}; {len(several.sizes)} images: {several.off}"


def ran(model_type: str, folder: Path, measured: list[Measured]) -> str:
    """The table's "on this machine" for a type that builds: the toy tasks' failure the test expects of it, its
    published checkpoints' refusal, a measured request's failure, or "runs end to end"."""
    if model_type in FAILS_HERE:
        task, error = FAILS_HERE[model_type]
        return f"builds; its run fails on {' and '.join(task.split())}: {error}"
    failed = next((m for m in measured if m.run.error and m.off != TOO_MANY_IMAGES), None)
    if failed is not None:
        sizes = ", ".join(f"{w} x {h}" for w, h in failed.sizes)
        return f"runs the toy tasks; fails on images of {sizes}: {failed.run.error}"
    return published_refusal(model_type, folder) or RUNS


def row(model_type: str, result: str, counted: str = "-") -> str:
    """A type's line of the table."""
    return f"| {model_type} | {dated(model_type) or '-'} | {result.replace('|', '&#124;')} | {counted} |"


def line(model_type: str, folder: Path) -> str:
    """The type's line, its tiny checkpoint built in `folder` and measured."""
    try:
        build(model_type, folder)
    except CannotBuild as err:
        return row(model_type, str(err))
    how, measured = measure(folder)
    return row(model_type, ran(model_type, folder, measured), counted(how, measured))


def table(text: str) -> dict[str, str]:
    """The page's table: model_type -> its line."""
    return {found.group(1): found.group(0) for found in re.finditer(r"^\| (\S+) \| .*\|$", text, flags=re.M)}


def summary(lines: list[str]) -> str:
    """The sentence above the table: how many types run end to end, of all and of those dated 2025-2026."""
    import torch
    import torchvision
    import transformers

    cells = [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines]
    runs = [c for c in cells if c[2] == RUNS]
    recent = [c for c in cells if c[1] in ("2025", "2026")]
    recent_runs = [c for c in runs if c[1] in ("2025", "2026")]
    return (
        f"**{len(runs)} of {len(cells)}** image-text-to-text types run end to end here ({len(recent_runs)} of the "
        f"{len(recent)} that transformers {transformers.__version__} dates 2025-2026), with the CPU, torch "
        f"{torch.__version__.split('+')[0]} and torchvision {torchvision.__version__.split('+')[0]}."
    )


def write(lines: dict[str, str], page: Path = PAGE) -> None:
    """The page with these types' lines (the others kept) in the order of `image_text_types`, and its summary."""
    text = page.read_text(encoding="utf-8")
    kept = table(text)
    kept.pop("model_type", None)
    every = [lines.get(t) or kept[t] for t in image_text_types()]
    text = re.sub(r"^\| (?!model_type |---)\S+ \| .*\|\n", "", text, flags=re.M)
    header = re.search(r"^\|---.*\|\n", text, flags=re.M)
    assert header is not None, f"{page}: no table"
    text = text[: header.end()] + "".join(f"{line}\n" for line in every) + text[header.end() :]
    text = re.sub(r"^\*\*\d+ of \d+\*\* image-text-to-text types .*$", summary(every), text, flags=re.M)
    page.write_text(text, encoding="utf-8")


def main(types: list[str]) -> None:
    lines = {}
    for model_type in types or image_text_types():
        with tempfile.TemporaryDirectory() as tmp:
            lines[model_type] = line(model_type, Path(tmp) / model_type)
            print(lines[model_type], flush=True)
    write(lines)


if __name__ == "__main__":
    main(sys.argv[1:])
