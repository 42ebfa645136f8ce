"""Every figure `harness report` draws is written twice: the PNG the markdown links and an SVG beside it whose
text (captions, labels, legends) stays text, the same bytes for the same results."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from harness.outputs.results.model_results import load_results
from tests.support.report_runs import evaluate, svg_texts


@pytest.mark.slow  # a run and a report drawing every figure
def test_each_png_has_an_svg_beside_it_with_its_caption_as_text(tmp_path: Path, data_dir: Path, harness) -> None:
    out = tmp_path / "results"
    evaluate(harness, out, data_dir, "random", tasks="mmneedle_m10_n1_k2_pos,mmneedle_m1_n2_k1_pos")
    assert harness("report", out).code == 0
    pngs = sorted(out.glob("*.png"))
    assert [p.name for p in pngs] == ["mmneedle_cells_random.png", "mmneedle_depth_random.png"]
    caption = load_results(out)["random"].provenance_line()
    first = {}
    for png in pngs:
        with Image.open(png) as image:
            assert image.format == "PNG"
        svg = png.with_suffix(".svg")
        texts = " ".join(svg_texts(svg))
        assert caption.split(",")[0] in texts and "NOT comparable" in texts, texts  # the data caption, as text
        first[svg] = svg.read_bytes()
    again = tmp_path / "again"  # another folder: into the same one, unchanged figures are not drawn again
    assert harness("report", out, "--out", again).code == 0
    assert {svg: (again / svg.name).read_bytes() for svg in first} == first  # the same results, the same vector bytes
