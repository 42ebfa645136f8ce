"""`harness report` draws its figures once per distinct content, in worker processes, and not again when they have
not changed; the bytes are those of drawing in process. `--no_figures` writes the text alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.outputs.report.figure_batch import MANIFEST, figure, figure_batch
from harness.outputs.report.report_md import write_report
from tests.support.results_runs import harness_run


def square(colour: str) -> object:
    """A small figure (module level: a worker process unpickles it by name)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1, 1))
    ax.add_patch(plt.Rectangle((0, 0), 1, 1, color=colour))
    return fig


def broken(colour: str) -> object:
    raise ValueError(f"no {colour}")


def _figures(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.suffix in (".png", ".svg")}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("figure_batch_results")
    return harness_run(out, data_dir, "mmneedle_m10_n1_k2_pos,mmneedle_m1_n2_k1_pos", "random")


@pytest.mark.slow  # three reports drawing every figure
def test_workers_draw_the_bytes_drawn_in_process_and_an_unchanged_figure_is_kept(results: Path, tmp_path: Path) -> None:
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    write_report(results, serial, workers=1)
    write_report(results, parallel, workers=2)
    drawn = _figures(serial)
    assert sorted(drawn) == [
        "mmneedle_cells_random.png",
        "mmneedle_cells_random.svg",
        "mmneedle_depth_random.png",
        "mmneedle_depth_random.svg",
    ]
    assert _figures(parallel) == drawn
    text = (serial / "report.md").read_text()
    assert (parallel / "report.md").read_text().replace(str(parallel), str(serial)) == text

    # A second report into the same folder keeps the figures it would draw the same (not rewritten) ...
    stamps = {p.name: p.stat().st_mtime_ns for p in serial.iterdir() if p.suffix in (".png", ".svg")}
    (serial / "mmneedle_depth_random.png").write_bytes(b"edited by hand")
    write_report(results, serial, workers=2)
    assert _figures(serial) == drawn and (serial / "report.md").read_text() == text
    kept = {p.name: p.stat().st_mtime_ns for p in serial.iterdir() if p.suffix in (".png", ".svg")}
    # ... and redraws one whose bytes are no longer those it wrote.
    assert {name for name in stamps if kept[name] != stamps[name]} == {
        "mmneedle_depth_random.png",
        "mmneedle_depth_random.svg",
    }


def test_no_figures_writes_the_text_alone(results: Path, tmp_path: Path) -> None:
    from harness.run.cli import main

    assert main(["report", str(results), "--out", str(tmp_path), "--no_figures"]) == 0
    text = (tmp_path / "report.md").read_text()
    assert "No figures: written with `--no_figures`." in text and "![" not in text
    assert "### MMNeedle, as the paper reports it" in text
    assert not list(tmp_path.glob("*.png")) and not list(tmp_path.glob("*.svg"))


@pytest.mark.parametrize("workers", [1, 2])
def test_the_same_content_is_drawn_once_and_a_broken_figure_loses_only_itself(tmp_path: Path, workers: int) -> None:
    with figure_batch(tmp_path, workers=workers) as batch:
        assert figure(tmp_path / "a.png", square, "red")
        assert figure(tmp_path / "b.png", square, "red")  # same content: copied
        assert figure(tmp_path / "c.png", square, "blue")
        assert figure(tmp_path / "d.png", broken, "green")
    failures, counts = batch.finish()
    assert counts == {"drawn": 2, "reused": 0, "copied": 1}
    assert failures == ["figure d.png could not be drawn: ValueError: no green"]
    files = _figures(tmp_path)
    assert sorted(files) == ["a.png", "a.svg", "b.png", "b.svg", "c.png", "c.svg"]
    assert files["a.png"] == files["b.png"] != files["c.png"] and files["a.svg"] == files["b.svg"]
    assert (tmp_path / MANIFEST).is_file()

    with figure_batch(tmp_path, workers=workers) as again:
        figure(tmp_path / "a.png", square, "red")
        figure(tmp_path / "c.png", square, "green")  # new content under an old name: drawn
    assert again.finish() == ([], {"drawn": 1, "reused": 1, "copied": 0})
    assert _figures(tmp_path)["a.png"] == files["a.png"] and _figures(tmp_path)["c.png"] != files["c.png"]


def test_without_figures_a_section_is_told_to_leave_its_link_out(tmp_path: Path) -> None:
    with figure_batch(tmp_path, draw=False) as batch:
        assert not figure(tmp_path / "a.png", square, "red")
    assert batch.finish() == ([], {"drawn": 0, "reused": 0, "copied": 0})
    assert not list(tmp_path.iterdir())
