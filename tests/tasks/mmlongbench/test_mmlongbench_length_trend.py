"""MMLongBench's length trend within ids (issue 48, item 8), on a fixture build through a real `random` run at 8K and
16K: the same ids (every depth row of each) at both lengths, so 16K - 8K is paired on the very rows and its error is
clustered on the id. At two lengths the within-id slope per doubling is that same difference; its interval is the
t(ids - 1) interval of the ids' mean differences (the CR1 error of a mean with equal cluster sizes)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from builders.mmlongbench.build import build_mmlongbench
from harness.outputs.results.estimates import estimate_of
from harness.outputs.results.model_results import load_results
from tasks.mmlongbench import report
from tasks.mmlongbench.length_figure import length_figure
from tasks.mmlongbench.length_trend import dataset_rows, from_base, within_id_slope
from tasks.mmlongbench.scores import ROWS

CONFIGS = ["niah_vh_single_8k", "niah_vh_single_16k"]
TASKS = [f"mmlongbench_{c}" for c in CONFIGS]


@pytest.fixture(scope="module")
def vh_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mmlb_trend")
    build_mmlongbench(source="fixture", out_dir=root, configs=CONFIGS)
    return root


def _row_scores(journal: Path) -> dict[str, float]:
    records = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    return {r["sample_id"]: r["metrics"]["score"] for r in records if r.get("type") == "sample"}


def test_the_trend_is_paired_on_the_rows_and_clustered_on_the_id(harness, vh_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = harness("--tasks", ",".join(TASKS), "--model", "random", "--data_dir", vh_dir, "--output_path", out)
    assert run.code == 0, run.err
    data = load_results(out)["random"]
    by_length = dataset_rows(data, "vh_single", ["8k", "16k"])
    assert sorted(by_length) == ["16k", "8k"] and all(len(rows) == 18 for rows in by_length.values())

    # the difference by hand from the journals: each row at 16K less the same row at 8K, averaged per id (6 rows each)
    early, late = (_row_scores(out / "random" / f"journal_{task}.jsonl") for task in TASKS)
    assert sorted(early) == sorted(late)
    per_id: dict[str, list[float]] = {}
    for sample_id, value in late.items():
        per_id.setdefault(sample_id.split("#")[0], []).append(value - early[sample_id])
    means = np.array([np.mean(v) for v in per_id.values()])
    assert len(means) == 3
    estimate, stderr = float(means.mean()), float(means.std(ddof=1) / math.sqrt(len(means)))
    # t's degrees of freedom: the clusters the variance rests on, less one (`comparison_df`, issue 88), the clusters
    # counted from each id's squared share of the difference, G* = (sum T_c^2)^2 / sum T_c^4, at most the 3 ids
    shares = (means - means.mean()) ** 2
    rests_on = min(float(shares.sum() ** 2 / np.dot(shares, shares)), 3.0) if shares.sum() > 0 else 3.0
    half = stats.t.ppf(0.975, max(rests_on - 1, 1.0)) * stderr

    difference = from_base(by_length)["16k"]
    slope = within_id_slope(by_length)
    assert slope is not None and slope.clusters == difference.clusters == 3
    for effect in (difference, slope):
        assert effect.estimate == pytest.approx(estimate)
        assert effect.stderr == pytest.approx(stderr)
        assert (effect.low, effect.high) == pytest.approx((estimate - half, estimate + half))

    lines = report.section("random", data, tmp_path)
    trend = lines[lines.index("### MMLongBench length trend, within ids") :]
    assert "| | ids | per doubling | 16k - 8k |" in trend
    row = next(line for line in trend if line.startswith("| vh_single |"))
    shown = "(no spread)" if stderr == 0 else f"[{estimate - half:+.1f}, {estimate + half:+.1f}]"
    assert row == f"| vh_single | 3 | {estimate:+.1f} {shown} | {estimate:+.1f} {shown} |"


def test_without_its_journals_the_trend_says_so(harness, vh_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = harness("--tasks", ",".join(TASKS), "--model", "random", "--data_dir", vh_dir, "--output_path", out)
    assert run.code == 0, run.err
    for journal in (out / "random").glob("journal_*.jsonl"):
        journal.unlink()
    lines = report.section("random", load_results(out)["random"], tmp_path)
    assert "No dataset's journals (`journal_<task>.jsonl`) are beside its results at two lengths." in lines


def test_the_length_figure_draws_each_points_interval_as_a_band(harness, vh_dir: Path, tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection

    out = tmp_path / "out"
    run = harness("--tasks", ",".join(TASKS), "--model", "random", "--data_dir", vh_dir, "--output_path", out)
    assert run.code == 0, run.err
    data = load_results(out)["random"]
    # VH-Single's two lengths drawn as if they were NIAH's points, each with its Wilson interval on the effective n
    found = {n: estimate_of(data, f"mmlongbench_niah_vh_single_{n}", "score", 100) for n in ("8k", "16k")}
    scores = {("NIAH", n): e.value for n, e in found.items()}
    intervals = {("NIAH", n): e.interval() for n, e in found.items()}
    assert all(bounds is not None and bounds[0] < bounds[1] for bounds in intervals.values())
    fig = length_figure({"random": scores}, {}, "a caption.", {"random": intervals})
    try:
        axis = fig.axes[ROWS.index("NIAH")]
        (band,) = [c for c in axis.collections if isinstance(c, PolyCollection)]
        ys = band.get_paths()[0].vertices[:, 1]
        assert (ys.min(), ys.max()) == pytest.approx(
            (min(b[0] for b in intervals.values() if b), max(b[1] for b in intervals.values() if b))
        )
        assert not [c for a in fig.axes if a is not axis for c in a.collections if isinstance(c, PolyCollection)]
        assert "Bands: our 95 % intervals." in fig.get_suptitle()
    finally:
        plt.close(fig)
