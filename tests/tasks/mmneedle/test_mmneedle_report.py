"""MMNeedle's section of `harness report` (`tasks/mmneedle/report.py`): the paper's table with format
validity beside existence, the paper's config order, one grid figure of cell heat maps per model (readable
at N = 8, tiny cells hatched, empty cells white) and the depth curves."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pytest
from matplotlib.collections import LineCollection

from harness.outputs.results.model_results import ModelResults, load_results
from tasks.mmneedle import figures, report

matplotlib.use("Agg")
CAPTION = "Data: test."


@pytest.fixture
def random_results(tmp_path: Path, needle_run) -> ModelResults:
    """The random baseline's results on every positive config the test build has (N = 2 at K = 1 and 5,
    N = 1 at K = 2), as `harness report` loads them."""
    run = needle_run("mmneedle_m1_n2_k1_pos,mmneedle_m1_n2_k5_pos,mmneedle_m10_n1_k2_pos", "random", tmp_path)
    assert run.code == 0, run.err
    return load_results(tmp_path)["random"]


def _panel_axes(fig) -> list:
    return [ax for ax in fig.axes if ax.images]


def _labels(ax) -> list:
    return [t for t in ax.texts if t.get_text()]


def test_a_malformed_answer_counts_as_existence_and_format_validity_says_so(
    tmp_path: Path, data_dir: Path, harness
) -> None:
    run = harness(
        "--tasks",
        "mmneedle_m1_n2_k1_pos,mmneedle_m1_n2_k1_neg",
        "--model",
        "constant",
        "--model_args",
        "answer=no idea",
        "--data_dir",
        data_dir,
        "--output_path",
        tmp_path,
    )
    assert run.code == 0, run.err
    lines = report.table(load_results(tmp_path)["constant"])
    assert "| config | n pos | existence | format valid | index | exact |" in lines[4]
    # Every row scored alike: no spread, so each 0 % or 100 % gets Wilson's interval on its 12 samples (one stitched
    # image each, statsmodels' proportion_confint(0, 12, "wilson") = [0, 24.2 %]), never "± 0.0".
    hit, miss = "100.0 [75.8, 100.0]", "0.0 [0.0, 24.2]"
    assert f"| M=1 N=2 K=1 | 12 | {hit} | {miss} | {miss} | {miss} |  |  | 12 | {miss} | {miss} |" in lines
    assert not any("± 0.0" in line for line in lines)


def test_configs_follow_the_papers_order() -> None:
    """The paper's tables: by K, then N x N, then M (1x1 M=10, 2x2 M=1, 2x2 M=10, ...)."""
    names = [
        f"mmneedle_m{m}_n{n}_k{k}_{p}"
        for k in (5, 1)
        for m, n in ((1, 8), (10, 2), (1, 2), (10, 1))
        for p in ("neg", "pos")
    ] + ["mmneedle", "mmneedle_k1"]
    assert report.headline_metrics(names) == [
        (f"mmneedle_m{m}_n{n}_k{k}_{p}", "exact_acc" if p == "pos" else "existence_acc")
        for k in (1, 5)
        for m, n in ((10, 1), (1, 2), (10, 2), (1, 8))
        for p in ("pos", "neg")
    ]
    data = ModelResults(results={name: {"exact_acc,none": 0.5} for name in names if "_m" in name})
    rows = [line.split(" | ")[0] for line in report.table(data) if line.startswith("| M=")]
    assert rows == [f"| M={m} N={n} K={k}" for k in (1, 5) for m, n in ((10, 1), (1, 2), (10, 2), (1, 8))]


def test_one_grid_figure_holds_every_config_with_n_above_1(random_results: ModelResults) -> None:
    panels = report.cell_panels(random_results)
    assert [(p.m, p.n, p.k) for p in panels] == [(1, 2, 1), (1, 2, 5)]  # N = 1 has a single cell: no panel
    fig = figures.cell_grid_figure("random", panels, CAPTION)
    axes = _panel_axes(fig)
    assert [ax.get_title().splitlines()[0] for ax in axes] == ["M=1, N=2, K=1", "M=1, N=2, K=5"]
    for ax, one in zip(axes, panels, strict=True):
        cells = random_results.breakdowns[f"mmneedle_m{one.m}_n{one.n}_k{one.k}_pos"]["exact_acc_by_cell"]
        shown = ax.images[0].get_array()
        for r in range(one.n):
            for c in range(one.n):
                cell = cells.get(f"{r + 1},{c + 1}")
                if cell is None:
                    assert np.ma.getmaskarray(shown)[r, c]
                else:
                    assert shown[r, c] == pytest.approx(cell["mean"])
        tiny = [key for key, cell in cells.items() if cell["n"] < figures.TINY_CELL]
        assert len(ax.collections) == len(tiny)  # one set of hatch strokes per tiny cell
        assert sorted(t.get_text() for t in _labels(ax)) == sorted(
            f"{100 * cell['mean']:.0f}\nn={cell['n']}" for cell in cells.values()
        )
        assert ax.images[0].cmap.name.startswith(figures.COLOUR_MAP)
    assert CAPTION in fig._supxlabel.get_text() and "Hatched corners: n < 5" in fig._supxlabel.get_text()


def test_n8_cells_stay_readable_and_empty_cells_stay_white() -> None:
    cells = {
        f"{r},{c}": {"mean": (r * c) % 5 / 4, "n": (r + c) % 7} for r in range(1, 9) for c in range(1, 9) if (r + c) % 7
    }  # n from 1 to 6, so some cells tiny and some not; cells with n = 0 absent
    one = figures.panel(10, 8, 1, cells)
    fig = figures.cell_grid_figure("model", [one, figures.panel(1, 2, 2, {"1,1": {"mean": 1.0, "n": 9}})], CAPTION)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = next(ax for ax in _panel_axes(fig) if ax.get_title().startswith("M=10, N=8"))
    labels = _labels(ax)
    assert len(labels) == len(cells) and all("n=" not in t.get_text() for t in labels)  # n only where it fits
    for text in labels:
        x, y = text.get_position()
        corner, opposite = ax.transData.transform([(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)])
        box = text.get_window_extent(renderer)
        assert text.get_fontsize() >= 6
        assert min(corner[0], opposite[0]) < box.x0 and box.x1 < max(corner[0], opposite[0])
        assert min(corner[1], opposite[1]) < box.y0 and box.y1 < max(corner[1], opposite[1])
    hatched = {
        (round(y), round(x + 0.5))
        for collection in ax.collections
        if isinstance(collection, LineCollection)
        for x, y in collection.get_segments()[0][:1]
    }
    assert hatched == {(r - 1, c - 1) for r in range(1, 9) for c in range(1, 9) if 0 < (r + c) % 7 < figures.TINY_CELL}
    image = ax.images[0]
    assert tuple(image.cmap.get_bad()) == (1.0, 1.0, 1.0, 1.0)
    assert {(r, c) for r in range(8) for c in range(8) if np.ma.getmaskarray(image.get_array())[r, c]} == {
        (r - 1, c - 1) for r in range(1, 9) for c in range(1, 9) if (r + c) % 7 == 0
    }
    # The grid keeps the paper's order and says where a config did not run.
    assert [t.get_text() for ax in fig.axes if not ax.images for t in ax.texts] == [
        "M=1, N=2, K=1\nnot run",
        "M=10, N=8, K=2\nnot run",
    ]


def test_depth_curves_one_panel_per_k_in_the_papers_order() -> None:
    flat = {str(m): {"mean": 0.0, "n": 3, "stderr": 0.0} for m in range(1, 11)}
    breakdowns = {f"mmneedle_m10_n{n}_k{k}_pos": {"exact_acc_by_depth": flat} for n in (8, 1, 4) for k in (2, 1)}
    breakdowns["mmneedle_m1_n2_k1_pos"] = {"exact_acc_by_depth": {"1": {"mean": 1.0, "n": 3, "stderr": 0.0}}}
    fig = figures.depth_figure("model", report.depth_series(breakdowns), CAPTION)
    panels = [ax for ax in fig.axes if ax.lines]
    assert [ax.get_title() for ax in panels] == ["K=1", "K=2"]
    for ax in panels:
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert legend == ["M=10, N=1", "M=10, N=4", "M=10, N=8"]  # M = 1 has one image: no depth
        curves = [container.lines[0] for container in ax.containers]
        assert [curve.get_color() for curve in curves] == figures.LINE_COLOURS[:3]
        assert [curve.get_marker() for curve in curves] == figures.MARKERS[:3]
        # Curves that coincide are drawn side by side, not on top of each other.
        assert len({curve.get_xdata()[0] for curve in curves}) == 3
