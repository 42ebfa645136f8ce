"""`harness compare` (issue 48, item 6) on real runs of two baselines through the `harness` command: MMNeedle's
synthetic build (0/1 metrics, a needle ratio) and MMLongBench's fixture (clusters of 3 and 6 depth rows per source
id, a task's own aggregation, a group over two lengths that ask the same ids). McNemar's counts and p are
statsmodels' exact test on the journals' rows; the clustered paired interval is statsmodels' cluster-robust OLS of
the per-row difference on an intercept (a group's: on its tasks' dummies, through its rule's weights); a row in one
run only is named; `harness report --paired` embeds the comparison; two runs of one model give the run-to-run error."""

from __future__ import annotations

import itertools
import json
import math
import re
import shutil
import statistics
import typing
from pathlib import Path

import numpy as np
import pytest
import statsmodels.api as sm
from statsmodels.stats.contingency_tables import mcnemar

from builders.mmlongbench.build import build_mmlongbench
from harness.outputs.compare.intervals import row_scale
from harness.outputs.compare.paired_runs import discordant, paired_rows, paired_task, pick_runs
from harness.outputs.results.compare_file import CompareFile, ComparisonRow, compare_file_problem, read_compare_file
from harness.run.cli import main
from harness.uncertainty.comparisons import paired_difference
from tests.support.earlier_runs import written_before_issue_99

VH = ["niah_vh_single_8k", "niah_vh_single_16k", "niah_vh_multi_8k"]
SINGLE_8K, SINGLE_16K, MULTI_8K = (f"mmlongbench_{c}" for c in VH)
NEEDLE = ["mmneedle_m1_n2_k1_pos", "mmneedle_m1_n2_k1_neg", "mmneedle_m10_n1_k2_pos", "mmneedle_m1_n2_k5_pos"]


def _run(*argv: object) -> None:
    assert main([str(a) for a in argv] + ["--no_progress"]) == 0


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    """`out/`: random and constant on MMNeedle and on MMLongBench's VH sets (a group over two lengths); `seed1/`:
    random again with another seed, on fewer MMNeedle rows; `groups/`: the group's folder."""
    root = tmp_path_factory.mktemp("compare")
    vh_dir = root / "vh_data"
    build_mmlongbench(source="fixture", out_dir=vh_dir, configs=VH)
    groups = root / "groups"
    groups.mkdir()
    (groups / "vh_single_lengths.yaml").write_text(
        f"group: vh_single_lengths\ntask: [{SINGLE_8K}, {SINGLE_16K}]\n"
        "aggregate_metric_list:\n  - metric: vh_acc\n    aggregation: strict_mean\n"
    )
    out = root / "out"
    vh = ["--tasks", f"vh_single_lengths,{MULTI_8K}", "--include_path", groups, "--data_dir", vh_dir]
    needle = ["--tasks", ",".join(NEEDLE), "--data_dir", data_dir]
    for model in (["--model", "random"], ["--model", "constant", "--model_args", "answer=Yes"]):
        _run(*vh, *model, "--output_path", out)
    for model in (["--model", "random"], ["--model", "constant", "--model_args", "answer=-1"]):
        _run(*needle, *model, "--output_path", out)
    _run(*needle, "--model", "random", "--seed", "1", "--limit", "8", "--output_path", root / "seed1")
    return root


def _compare(runs: Path, *argv: object, out: Path) -> dict:
    assert main(["compare", *[str(a) for a in argv], "--out", str(out)]) == 0
    return json.loads((out / "compare.json").read_text())


@pytest.fixture(scope="module")
def compared(runs: Path) -> dict:
    out = runs / "compared"
    argv = [runs / "out", "--models", "random", "constant", "--include_path", runs / "groups"]
    assert main(["compare", *map(str, argv), "--out", str(out)]) == 0
    return json.loads((out / "compare.json").read_text())


def _row(compared: dict, name: str, metric: str) -> dict:
    (row,) = [r for r in compared["rows"] if r["name"] == name and r["metric"] == metric]
    return row


def _journal(runs: Path, model: str, task: str) -> dict[str, dict]:
    lines = (runs / "out" / model / f"journal_{task}.jsonl").read_text().splitlines()[1:]
    return {r["sample_id"]: r for r in map(json.loads, lines)}


@pytest.mark.parametrize(
    ("task", "metric"), [("mmneedle_m1_n2_k1_pos", "exact_acc"), ("mmneedle_m1_n2_k1_neg", "existence_acc"),
                         (SINGLE_8K, "vh_acc"), (MULTI_8K, "vh_acc")]
)  # fmt: skip
def test_mcnemar_is_statsmodels_exact_test_on_the_journals(runs: Path, compared: dict, task: str, metric: str) -> None:
    a, b = _journal(runs, "random", task), _journal(runs, "constant", task)
    pairs = [(a[s]["metrics"][metric], b[s]["metrics"][metric]) for s in a]
    right = 100 if task.startswith("mmlongbench") else 1  # MMLongBench's scores are percentages
    table = [[sum(x == right and y == right for x, y in pairs), sum(x == right and y == 0 for x, y in pairs)],
             [sum(x == 0 and y == right for x, y in pairs), sum(x == 0 and y == 0 for x, y in pairs)]]  # fmt: skip
    row = _row(compared, task, metric)
    assert (row["a_only"], row["b_only"]) == (table[0][1], table[1][0])
    assert table[0][1] + table[1][0] > 0  # the baselines disagree somewhere: the test has something to count
    assert row["mcnemar_p"] == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-12)
    # the viewer's rows: the same discordant rows, each way
    run_a, run_b = pick_runs([runs / "out"], ["random", "constant"])
    rows = paired_rows(paired_task(run_a, run_b, task), metric)
    assert (len(discordant(rows, "a")), len(discordant(rows, "b"))) == (row["a_only"], row["b_only"])


def test_the_clustered_paired_interval_is_statsmodels_cluster_robust_ols_of_the_difference(
    runs: Path, compared: dict
) -> None:
    a, b = _journal(runs, "random", SINGLE_8K), _journal(runs, "constant", SINGLE_8K)
    ids = sorted(a)
    d = np.array([a[s]["metrics"]["vh_acc"] - b[s]["metrics"]["vh_acc"] for s in ids])
    clusters = [a[s]["cluster"][0] for s in ids]
    assert len(set(clusters)) == 3 and len(ids) == 18  # three source ids, six depth rows each
    fit = sm.OLS(d, np.ones(len(d))).fit(
        cov_type="cluster", cov_kwds={"groups": np.unique(clusters, return_inverse=True)[1]}
    )
    row = _row(compared, SINGLE_8K, "vh_acc")
    assert row["difference"] == pytest.approx(d.mean())
    assert row["stderr_clustered"] == pytest.approx(fit.bse[0], rel=1e-10)
    # three clusters are too few for t with at most C - 1 = 2 degrees of freedom (its interval runs far past ±100
    # points): no interval, and p from the exact test that flips the sign of each source id's total difference
    assert row["low"] == row["high"] == "N/A" and 1 <= row["df"] <= 2 and row["n_clusters"] == 3
    assert any("3 clusters, fewer than 10: no interval" in w for w in row["warnings"])
    totals = [sum(d[i] for i, c in enumerate(clusters) if c == cluster) for cluster in sorted(set(clusters))]
    flips = [
        abs(sum(s * t for s, t in zip(signs, totals, strict=True))) for signs in itertools.product((1, -1), repeat=3)
    ]
    assert row["p_value"] == pytest.approx(sum(f >= abs(sum(totals)) - 1e-9 for f in flips) / 8)
    phase_one = paired_difference(
        [a[s]["metrics"]["vh_acc"] for s in ids], [b[s]["metrics"]["vh_acc"] for s in ids], [[c] for c in clusters]
    )
    assert row["stderr"] == pytest.approx(phase_one.stderr)
    assert row["correlation"] == pytest.approx(phase_one.correlation, nan_ok=True)


def test_a_group_s_paired_error_counts_an_item_its_members_share_once(runs: Path, compared: dict) -> None:
    stacked, tasks, clusters = [], [], []
    for j, task in enumerate((SINGLE_8K, SINGLE_16K)):
        a, b = _journal(runs, "random", task), _journal(runs, "constant", task)
        for s in sorted(a):
            stacked.append(a[s]["metrics"]["vh_acc"] - b[s]["metrics"]["vh_acc"])
            tasks.append(j)
            clusters.append(a[s]["cluster"][0])
    dummies = np.eye(2)[tasks]
    groups = np.unique(clusters, return_inverse=True)[1]
    assert groups.max() + 1 == 3  # the 16K rows ask the 8K rows' three ids
    fit = sm.OLS(np.array(stacked), dummies).fit(
        cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False}
    )
    weights = np.array([0.5, 0.5])  # strict_mean of the two lengths
    se = math.sqrt(3 / 2 * weights @ fit.cov_params() @ weights)  # CR1's C/(C - 1), as a task's
    row = _row(compared, "vh_single_lengths", "vh_acc")
    assert row["kind"] == "group" and row["n_paired"] == 36
    assert row["difference"] == pytest.approx(weights @ fit.params)
    assert row["stderr_clustered"] == pytest.approx(se, rel=1e-6)
    tasks_alone = [_row(compared, t, "vh_acc")["stderr_clustered"] for t in (SINGLE_8K, SINGLE_16K)]
    assert row["stderr_clustered"] > math.sqrt(sum(s * s for s in tasks_alone)) / 2 * 1.05  # not independent


def test_sums_of_ratios_and_a_task_s_own_aggregation_get_their_errors(compared: dict) -> None:
    needles = _row(compared, "mmneedle_m10_n1_k2_pos", "individual_exact_acc")
    assert needles["method"].startswith("ratio_of_sums") and needles["a_only"] is None
    folded = _row(compared, SINGLE_8K, "score")  # VH accuracy folded at 50: the task's own function
    assert folded["method"].startswith("cluster bootstrap") and folded["n_clusters"] == 3
    assert math.isfinite(folded["stderr_clustered"])
    # three clusters: no interval, and no p (a bootstrap of the task's own function has no exact few-cluster test)
    assert folded["p_value"] == folded["low"] == "N/A" and any("no p" in w for w in folded["warnings"])
    assert compared["tests"] == sum(isinstance(r["p_value"], float) for r in compared["rows"])
    p = [r["p_value"] for r in compared["rows"] if isinstance(r["p_value"], float)]
    holm = [r["p_adjusted"] for r in compared["rows"] if isinstance(r["p_value"], float)]
    assert all(h >= q - 1e-12 for h, q in zip(holm, p, strict=True)) and max(holm) <= 1.0


def test_no_interval_lies_outside_its_scale_nor_collapses_to_a_point(runs: Path, compared: dict) -> None:
    """Issue 63, item 3: random against a constant answer (MMNeedle's constant is wrong on nearly every row, so its
    proportions sit at the end of the scale): every interval of compare.json lies within ±its scale, and compare.md
    prints none past ±100 points and none of width 0."""
    shown = 0
    for row in compared["rows"]:
        scale = row_scale(row)
        if scale is not None and isinstance(row["low"], float):
            assert -scale <= row["low"] <= row["high"] <= scale, (row["name"], row["metric"])
            shown += 1
    assert shown >= 4
    binary = _row(compared, "mmneedle_m1_n2_k1_pos", "exact_acc")
    assert "Newcombe" in binary["method"] and binary["low"] < binary["difference"] < binary["high"]
    markdown = (runs / "compared" / "compare.md").read_text()
    for low, high in re.findall(r"\[(-?[0-9.]+), (-?[0-9.]+)\]", markdown):
        assert -100 <= float(low) < float(high) <= 100


def test_a_row_in_one_run_only_is_named_never_dropped(runs: Path) -> None:
    found = _compare(runs, runs / "out", runs / "seed1", "--models", "random", "random", out=runs / "cmp_seed")
    task = "mmneedle_m1_n2_k1_pos"
    full = _journal(runs, "random", task)
    kept = {
        json.loads(line)["sample_id"]
        for line in (runs / "seed1/random" / f"journal_{task}.jsonl").read_text().splitlines()[1:]
    }
    assert len(kept) == 8 < len(full)
    assert found["unpaired"][task] == {"a_only": dict.fromkeys(sorted(set(full) - kept), "absent"), "b_only": {}}
    row = _row(found, task, "exact_acc")
    assert (row["n_a"], row["n_b"], row["n_paired"], row["unpaired_a"]) == (len(full), 8, 8, len(full) - 8)
    markdown = (runs / "cmp_seed" / "compare.md").read_text()
    assert f"| `{task}` | {len(full) - 8} | 0 |" in markdown
    # two runs of one model: their differences are the run-to-run spread
    assert found["same_model"] is True
    assert row["run_to_run_stderr"] == pytest.approx(row["stderr_clustered"] / math.sqrt(2))
    # the tasks only run A ran are named too
    assert {(n["name"], n["reason"]) for n in found["not_compared"]} >= {(SINGLE_8K, "only run A ran it")}
    assert read_compare_file(runs / "cmp_seed" / "compare.json")["rows"][0]["name"] == found["rows"][0]["name"]


def test_report_paired_embeds_the_comparison(runs: Path, compared: dict, capsys: pytest.CaptureFixture[str]) -> None:
    out = runs / "report"
    argv = ["report", str(runs / "out"), "--paired", "--models", "random", "constant", "--no_figures"]
    assert main([*argv, "--include_path", str(runs / "groups"), "--out", str(out)]) == 0
    report = (out / "report.md").read_text()
    assert "## Paired comparison: random − constant" in report
    table = [line for line in (out / "compare.md").read_text().splitlines() if line.startswith("| `")]
    assert len(table) == len(compared["rows"]) and all(line in report for line in table)
    assert report.index("## Paired comparison") < report.index("## Provenance")
    assert json.loads((out / "compare.json").read_text())["rows"] == compared["rows"]
    assert main(["report", str(runs / "out"), "--models", "random", "constant"]) == 2  # without --paired
    assert "add --paired" in capsys.readouterr().err


def test_compare_md_shows_scores_on_the_reports_0_100_scale_and_counts_as_recorded(runs: Path, compared: dict) -> None:
    """compare.md beside report.md (issue 54): a proportion of MMNeedle (recorded 0-1) and a score of MMLongBench
    (recorded 0-100) both read on 0-100, A and B as the report's cells (one decimal), A − B and its interval in points;
    compare.json keeps the numbers as recorded."""
    markdown = (runs / "compared" / "compare.md").read_text()
    rows = {
        (cells[0].strip("`"), cells[1]): cells
        for cells in ([c.strip() for c in line.strip("|").split("|")] for line in markdown.splitlines())
        if cells[0].startswith("`")
    }
    for task, metric, factor in (("mmneedle_m1_n2_k1_pos", "exact_acc", 100), (SINGLE_8K, "vh_acc", 1)):
        row, shown = _row(compared, task, metric), rows[(task, metric)]
        assert shown[3:6] == [
            f"{row['value_a'] * factor:.1f}",
            f"{row['value_b'] * factor:.1f}",
            f"{row['difference'] * factor:.2f}",
        ]
        if row["n_clusters"] < 10:  # MMLongBench's fixture: three source ids, too few for an interval
            assert shown[6] == f"none ({row['n_clusters']} clusters)"
        else:
            assert shown[6] == f"[{row['low'] * factor:.2f}, {row['high'] * factor:.2f}]"
    assert 0 <= _row(compared, "mmneedle_m1_n2_k1_pos", "exact_acc")["value_a"] <= 1  # compare.json: as recorded
    assert "Scores on report.md's scale, 0-100" in markdown and "Values as recorded" not in markdown


def test_each_column_of_the_paired_tables_holds_one_scale(compared: dict) -> None:
    """A count (a `sum`, as non-responses) sat in the 0-100 column as 3.0000 beside 15.0 (issue 76, item 5): rows on
    no 0-100 scale are a table of their own, in compare.md and in `harness report --paired`'s section alike."""
    from harness.outputs.compare.compare_md import comparison_lines

    counted = dict(_row(compared, "mmneedle_m1_n2_k1_pos", "exact_acc"), metric="non_response", value_a=3.0)
    counted.update(value_b=1.0, difference=2.0, method="sum by its influence function, differenced per row")
    lines = comparison_lines(typing.cast(CompareFile, dict(compared, rows=[*compared["rows"], counted])), depth=2)
    tables: dict[str, list[list[str]]] = {}
    title = ""
    for line in lines:
        if line.startswith("### "):
            title = line[4:]
        elif line.startswith("| `"):
            tables.setdefault(title, []).append([c.strip() for c in line.strip("|").split("|")])
    assert [row[1] for row in tables["Tasks: counts and other numbers, as recorded"]] == ["non_response"]
    assert tables["Tasks: counts and other numbers, as recorded"][0][3:6] == [
        "3",
        "1",
        "2",
    ]  # a count as a whole number
    for name in (t for t in tables if "as recorded" not in t):  # A and B on 0-100 with one decimal, every row
        assert all(re.fullmatch(r"-?\d+\.\d|N/A", value) for row in tables[name] for value in row[3:5]), name
    assert "Tasks" in tables


def test_runs_on_other_data_or_task_versions_are_not_paired(runs: Path, tmp_path: Path) -> None:
    copy = tmp_path / "other"
    shutil.copytree(runs / "seed1", copy)
    journal = copy / "random" / "journal_mmneedle_m1_n2_k1_pos.jsonl"
    header, *records = journal.read_text().splitlines()
    parts = json.loads(header)
    parts["parts"]["task"]["dataset"] = "0" * 64
    journal.write_text("\n".join([json.dumps(parts), *records]) + "\n")
    found = _compare(runs, runs / "out", copy, "--models", "random", "random", out=tmp_path / "cmp")
    (refused,) = [n for n in found["not_compared"] if n["name"] == "mmneedle_m1_n2_k1_pos"]
    assert refused["reason"].startswith("the runs differ in data")
    assert "mmneedle_m1_n2_k1_pos" not in {r["name"] for r in found["rows"]}


def test_a_run_from_before_the_files_hash_pairs_with_one_after_on_the_same_build(
    runs: Path, data_dir: Path, tmp_path: Path
) -> None:
    """Issue 106, item 14: a run from before issue 99 recorded its data as the build manifest's content hash, one
    after as the hash of the files it read: on the same build they were "the runs differ in data". Its results file
    records the files that run read (`verified_files`, hashed from their bytes), which show it is the same data; where
    it records none, the task is not paired, and the reason says so."""
    task = "mmneedle_m1_n2_k1_pos"
    before = tmp_path / "before"
    shutil.copytree(runs / "seed1", before)
    written_before_issue_99(before / "random", task, data_dir / "mmneedle", "m1_n2_k1")
    found = _compare(runs, runs / "out", before, "--models", "random", "random", out=tmp_path / "cmp")
    assert task not in {n["name"] for n in found["not_compared"]}, found["not_compared"]
    assert _row(found, task, "exact_acc")["n_paired"] == 8  # seed1 ran --limit 8
    for path in (before / "random").glob("results_*.json"):
        results = json.loads(path.read_text())
        del results["datasets"][task]["verified_files"]
        path.write_text(json.dumps(results))
    found = _compare(runs, runs / "out", before, "--models", "random", "random", out=tmp_path / "unshown")
    (refused,) = [n for n in found["not_compared"] if n["name"] == task]
    assert refused["reason"].startswith("the runs differ in data (the files read): 'files:"), refused
    assert (
        "(B: the build manifest's content hash, the form before issue 99, with no files read recorded"
        in refused["reason"]
    )


def _one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_bad_input_is_one_line(runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(runs / "out")
    assert "no such folder" in _one_line_error(capsys, ["compare", str(tmp_path / "nowhere"), "--models", "a", "b"])
    assert "--models A B" in _one_line_error(capsys, ["compare", out])
    assert "no model named 'gpt'" in _one_line_error(capsys, ["compare", out, "--models", "random", "gpt"])
    # every name typed is checked where it is read, naming the nearest (issue 89): a metric compare suggested nothing
    # for, power blamed the task for, and report ignored
    pair = ["--models", "random", "constant", "--include_path", str(runs / "groups")]
    typed = {
        ("compare", out, *pair[:2], "constnt"): "no model named 'constnt'; did you mean: constant?",
        ("compare", out, *pair, "--tasks", "mmneedle_m1_n2_k1_pso"): "did you mean: mmneedle_m1_n2_k1_pos",
        ("compare", out, *pair, "--metrics", "exact_accc"): "--metrics exact_accc: unknown metric 'exact_accc'; "
        "did you mean: exact_acc, ",
        ("power", out, "--model", "random", "--tasks", "mmneedle_m1_n2_k1_pos", "--metrics", "exact_accc", *pair[3:]): (
            "--metrics exact_accc: unknown metric 'exact_accc'; did you mean: exact_acc, "
        ),
        ("report", out, "--metrics", "exact_accc"): "--metrics: for a comparison of two runs; add --paired",
        ("report", out, "--paired", *pair, "--metrics", "exact_accc"): "did you mean: exact_acc, ",
    }
    for argv, said in typed.items():
        assert said in _one_line_error(capsys, list(argv)), argv
    assert "2 models" in _one_line_error(capsys, ["compare", out, str(runs / "seed1")])
    assert "one run" in _one_line_error(capsys, ["compare", out, "--models", "random", "random"])
    assert "one or two" in _one_line_error(capsys, ["compare", out, out, out])
    assert "between 0 and 1" in _one_line_error(
        capsys, ["compare", out, "--models", "random", "constant", "--level", "2"]
    )
    groups = ["--include_path", str(runs / "groups")]
    nothing = _one_line_error(
        capsys, ["compare", out, "--models", "random", "constant", "--tasks", "milebench_*", *groups]
    )
    assert nothing.startswith("harness: error: nothing to compare") and "matches --tasks milebench_*" in nothing
    damaged = tmp_path / "compare.json"
    damaged.write_text(json.dumps({"format": "mmlongeval-compare/1", "rows": 3}))
    with pytest.raises(Exception, match="not a compare.json") as raised:
        read_compare_file(damaged)
    assert len(str(raised.value).splitlines()) == 1
    # a run whose journal is gone: its tasks named, not compared
    gone = tmp_path / "gone"
    shutil.copytree(runs / "seed1", gone)
    (gone / "random" / "journal_mmneedle_m1_n2_k1_pos.jsonl").unlink()
    found = _compare(runs, out, gone, "--models", "random", "random", out=tmp_path / "cmp")
    assert any(n["name"] == "mmneedle_m1_n2_k1_pos" and "no journal" in n["reason"] for n in found["not_compared"])


def test_a_task_folder_a_results_file_records_is_never_read(runs: Path, tmp_path: Path, capsys) -> None:
    copy = tmp_path / "out"
    shutil.copytree(runs / "out", copy)
    found = _compare(runs, copy, "--models", "random", "constant", out=tmp_path / "cmp")  # no --include_path
    err = capsys.readouterr().err
    assert "not read: the task folders the results files record" in err and str(runs / "groups") in err
    (group,) = [n for n in found["not_compared"] if n["name"] == "vh_single_lengths"]
    assert "not in the installed task folders" in group["reason"]
    assert not any(r["name"] == "vh_single_lengths" for r in found["rows"])


def test_compare_json_is_written_as_declared(runs: Path, compared: dict) -> None:
    assert compare_file_problem(compared) is None
    assert set(compared) == set(typing.get_type_hints(CompareFile))
    hints = typing.get_type_hints(ComparisonRow, include_extras=True)
    every = set(hints)
    required = {key for key, hint in hints.items() if typing.get_origin(hint) is not typing.NotRequired}
    assert all(required <= set(row) <= every for row in compared["rows"])
    assert every - required == {"changed_rows", "mean_squared_change", "stderr_cr2"}  # absent from older files
    assert all("stderr_cr2" in row for row in compared["rows"])  # written on every row since issue 107
    assert all("changed_rows" in row for row in compared["rows"] if row["a_only"] is not None)  # 0/1 rows
    damaged = json.loads((runs / "compared" / "compare.json").read_text())
    damaged["rows"][0]["n_paired"] = "many"
    assert compare_file_problem(damaged) == "`rows[0].n_paired` must be an integer, got a string"


def test_two_seeds_of_one_model_on_milebench_levels_have_no_error_where_none_exists(tmp_path: Path) -> None:
    """Issue 63, item 4: MileBench's level metrics rest on the rows of one image-count level, here one row or none
    per subset; a bootstrap cannot vary there, so such a row has no error and no p (said in its warnings, "no error"
    in compare.md), and two runs of one model give no Holm-significant row."""
    from builders.milebench.build import build_milebench

    build_milebench(source="fixture", out_dir=tmp_path / "data", configs=["clevr_change", "action_localization"])
    tasks = "milebench_clevr_change,milebench_action_localization"
    for seed in ("0", "1"):
        _run("--tasks", tasks, "--model", "random", "--seed", seed, "--data_dir", tmp_path / "data",
             "--output_path", tmp_path / f"seed{seed}")  # fmt: skip
    found = _compare(tmp_path, tmp_path / "seed0", tmp_path / "seed1", out=tmp_path / "cmp")
    lone = _row(found, "milebench_clevr_change", "score_medium")
    present = [
        r for r in _journal_rows(tmp_path / "seed0" / "random" / "journal_milebench_clevr_change.jsonl")
        if r["metrics"].get("score_medium") is not None
    ]  # fmt: skip
    assert len(present) == 1 and lone["stderr_clustered"] == lone["p_value"] == lone["low"] == "N/A"
    assert any("no error and no p: it rests on 1 row" in w for w in lone["warnings"])
    assert all(not isinstance(r["p_adjusted"], float) or r["p_adjusted"] >= 0.05 for r in found["rows"])
    markdown = (tmp_path / "cmp" / "compare.md").read_text()
    (line,) = [x for x in markdown.splitlines() if x.startswith("| `milebench_clevr_change` | score_medium |")]
    assert "| not estimable |" in line


def _journal_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def test_two_runs_of_one_model_measure_the_run_to_run_spread_report_reads(
    runs: Path, compared: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    """compare.json records each task metric's changed rows and mean squared change (issue 63, item 1); `harness
    report --run_to_run` reads them from two runs of one model and refuses a comparison of two models in one line."""
    found = _compare(runs, runs / "out", runs / "seed1", "--models", "random", "random", out=runs / "cmp_r2r")
    task = "mmneedle_m1_n2_k1_pos"
    row = _row(found, task, "exact_acc")
    a = _journal(runs, "random", task)
    b = {r["sample_id"]: r for r in _journal_rows(runs / "seed1" / "random" / f"journal_{task}.jsonl")}
    pairs = [(a[s]["metrics"]["exact_acc"], b[s]["metrics"]["exact_acc"]) for s in b]
    assert row["changed_rows"] == sum(x != y for x, y in pairs) == row["a_only"] + row["b_only"]
    assert row["mean_squared_change"] == pytest.approx(row["changed_rows"] / row["n_paired"])
    out = runs / "report_r2r"
    argv = ["report", str(runs / "out"), "--no_figures", "--out", str(out)]
    assert main([*argv, "--run_to_run", str(runs / "cmp_r2r")]) == 0
    assert main([*argv, "--run_to_run", str(runs / "compared" / "compare.json")]) == 2
    assert "not two runs of one model: no run-to-run spread to measure" in capsys.readouterr().err
    # --paired over two runs of one model measures it too, and the report is written
    paired = ["report", str(runs / "out"), str(runs / "seed1"), "--paired", "--models", "random", "random"]
    assert main([*paired, "--no_figures", "--out", str(runs / "report_pair_r2r")]) == 0
    assert (runs / "report_pair_r2r" / "report.md").exists()


def test_power_plans_a_paired_comparison_from_a_finished_pair(
    runs: Path, compared: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    """`harness power --pair` (issue 63, item 4): the paired difference's own sd and design effect, as compare.json
    measured them, and the header says so."""
    capsys.readouterr()
    assert main(["power", "--pair", str(runs / "compared"), "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert planned["source"] == "pair" and planned["correlation"] is None
    row = next(r for r in planned["rows"] if r["task"] == "mmneedle_m1_n2_k1_pos" and r["metric"] == "exact_acc")
    found = _row(compared, "mmneedle_m1_n2_k1_pos", "exact_acc")
    assert row["comparison_sd"] == pytest.approx(found["stderr"] * math.sqrt(found["n_paired"]) * 100)
    assert main(["power", "--pair", str(runs / "compared")]) == 0
    assert "measured from a finished pair" in capsys.readouterr().out
    assert main(["power", str(runs / "out"), "--pair", str(runs / "compared")]) == 2
    assert "drop RESULTS" in capsys.readouterr().err


def test_power_pair_and_compare_give_one_mde_for_each_pair(
    runs: Path, compared: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    """`harness power --pair` and `harness compare` agree on the MDE of every row (issue 76, item 3): both z times
    the difference's clustered error, its small-sample factor included (three clusters here) and a design effect
    under 1 taken as 1 by both (issue 88: `comparison_error`; issue 76 had both keep it as measured)."""
    from harness.outputs.power.analysis import PowerOptions, from_pair
    from harness.uncertainty.variance import ClusteredError

    capsys.readouterr()
    assert main(["power", "--pair", str(runs / "compared"), "--json"]) == 0
    planned = {(r["task"], r["metric"]): r for r in json.loads(capsys.readouterr().out)["rows"]}
    checked = 0
    for row in (r for r in compared["rows"] if r["kind"] == "task"):
        scale = row_scale(row)
        points = 100 / scale if scale else 1.0
        mde = planned[(row["name"], row["metric"])]["mde"]
        if isinstance(row["mde"], float):
            assert mde == pytest.approx(row["mde"] * points, rel=1e-12), row["name"]
            checked += 1
        else:
            assert mde == "N/A", (row["name"], row["metric"])
    assert checked >= 10
    shrunk = ClusteredError(0.1, 0.08, 40, 20, 0.64)  # a design effect of 0.64, estimated: the plain error stands
    row = from_pair("b", "t", "acc", shrunk, 0.5, PowerOptions(), 1)
    assert row["mde"] == pytest.approx(2.8016 * 10.0, rel=1e-4) and row["design_effect"] == 0.64
    from harness.outputs.power.command import _aligned

    wide = from_pair("b", "t", "acc", ClusteredError(0.5, 0.5, 4, 4, 1.0), 0.5, PowerOptions(), 1)
    assert "not detectable at this size" in _aligned([wide])[1]  # 140 points on 0-100, as compare.md says it


def test_power_pair_reads_the_error_compare_uses_where_cr2_exceeds_cr1(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two seeds of the random baseline on MMLongBench's VH rows (issue 107, item 5), the second at `--limit 14`: the
    paired rows are ids of 6, 6 and 2 rows, where CR2's error exceeds CR1's and the plain one. Compare's interval and
    MDE rest on CR2 (`clustered_se`), and power --pair reads the same error back from compare.json: its MDE is
    compare's on every row (before, power took CR1's: on MMNeedle's m10_n1_k2_pos 3 of 7 rows differed by up to
    2.4 %)."""
    limited = runs / "vh_seed1"
    _run("--tasks", SINGLE_8K, "--model", "random", "--seed", "1", "--limit", "14", "--data_dir", runs / "vh_data",
         "--output_path", limited)  # fmt: skip
    out = runs / "two_seeds"
    compared = _compare(runs, runs / "out", limited, "--models", "random", "random", out=out)
    capsys.readouterr()
    assert main(["power", "--pair", str(out), "--json"]) == 0
    planned = {(r["task"], r["metric"]): r for r in json.loads(capsys.readouterr().out)["rows"]}
    rows = [r for r in compared["rows"] if r["kind"] == "task" and isinstance(r["mde"], float)]
    errors = [(r["stderr_cr2"], r["stderr_clustered"], r["stderr"]) for r in rows]
    assert any(isinstance(cr2, float) and cr2 > 1.05 * max(cr1, plain) for cr2, cr1, plain in errors)
    for row in rows:
        scale = row_scale(row)
        assert planned[(row["name"], row["metric"])]["mde"] == pytest.approx(
            row["mde"] * (100 / scale if scale else 1.0), rel=1e-12
        ), (row["name"], row["metric"])


def test_two_folders_are_read_never_written_into_unasked(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`harness compare A B` without --out writes nothing into A's folder (one may come from elsewhere) and says
    how to write the files (issue 77)."""
    before = sorted(p.name for p in (runs / "out").iterdir())
    assert main(["compare", str(runs / "out"), str(runs / "seed1"), "--models", "random", "random"]) == 0
    assert "nothing written (two folders: --out DIR writes compare.json and compare.md)" in capsys.readouterr().err
    assert sorted(p.name for p in (runs / "out").iterdir()) == before


def test_each_rows_interval_and_p_are_one_decision(compared: dict) -> None:
    """p < 0.05 exactly where the row's 95 % interval leaves 0 out (issue 76, item 3): a 0/1 row's p is its Newcombe
    interval inverted, any other row's interval and p the same clustered t."""
    rows = [r for r in compared["rows"] if isinstance(r["p_value"], float) and isinstance(r["low"], float)]
    assert any("Newcombe" in r["method"] for r in rows)
    for row in rows:
        assert (row["p_value"] < 0.05) == (not row["low"] <= 0.0 <= row["high"]), row
    # 20 rows, A right alone on 4: the clustered t says p 0.042, Newcombe's interval holds 0 (the issue's kind of row)
    from harness.outputs.compare.intervals import settle
    from harness.uncertainty.comparisons import two_sided_p

    a, b = [1.0] * 5 + [0.0] * 15, [1.0] + [0.0] * 19
    se = statistics.stdev(x - y for x, y in zip(a, b, strict=True)) / math.sqrt(20)
    row: dict = {"name": "t", "kind": "task", "metric": "acc", "method": "paired mean", "value_a": 0.25}
    row.update(value_b=0.05, stderr=se, stderr_clustered=se, n_clusters=20, overlap=False, warnings=[])
    row.update(low=0.0, high=0.0, p_value=two_sided_p(0.2, se, 19), run_to_run_stderr=None)
    assert row["p_value"] < 0.05
    settle(row, 0.95, (a, b), [[k] for k in range(20)], right=1.0)
    assert row["low"] < 0.0 < row["high"] and row["p_value"] > 0.05 and "inverted" in row["method"]


def test_an_mde_past_the_scale_is_not_detectable_at_this_size() -> None:
    """An MDE larger than any difference the scale allows reads as such, not as 114-280 points (issue 76, item 3)."""
    from harness.outputs.compare.compare_md import _mde

    row: dict = {"mde": 1.4}
    assert _mde(row, 2, 100.0, 1.0) == "not detectable at this size"
    assert _mde({"mde": 0.25}, 2, 100.0, 1.0) == "25.00" and _mde(row, 4, 1.0, None) == "1.4000"


def test_a_design_effect_under_one_does_not_narrow_a_comparison() -> None:
    """Issue 88: two seeds of the random baseline, paired, gave a group row `-8.33 [-14.33, -2.34] p 0.0085` at a
    design effect of 0.34 estimated from few clusters; the interval and p now rest on the plain error where the
    clustered one is smaller (`comparison_error`), the design effect still recorded as measured."""
    from harness.outputs.compare.stats import CompareOptions, _row
    from harness.uncertainty.comparisons import interval, two_sided_p
    from harness.uncertainty.variance import ClusteredError

    plain = 0.05
    shrunk = ClusteredError(plain, plain * math.sqrt(0.34), 60, 12, 0.34)
    row = _row("mmlongbench_niah_8k", "group", "score", "group rule", (0.40, 0.4833), shrunk, CompareOptions())
    assert row["p_value"] == pytest.approx(two_sided_p(-0.0833, plain, 11)) and row["p_value"] > 0.05
    assert (row["low"], row["high"]) == pytest.approx(interval(-0.0833, plain, 0.95, 11))
    assert row["design_effect"] == 0.34 and row["stderr_clustered"] == pytest.approx(plain * math.sqrt(0.34))
    grown = ClusteredError(plain, 2 * plain, 60, 12, 4.0)  # above 1: the clustered error, as before
    assert _row("g", "group", "score", "r", (0.4, 0.5), grown, CompareOptions())["p_value"] == pytest.approx(
        two_sided_p(-0.1, 2 * plain, 11)
    )


def test_a_difference_a_few_clusters_carry_gets_their_degrees_of_freedom() -> None:
    """Issue 88: two runs of one model that differ on 5 rows of 90 (30 items of 3 rows), all one way, got p 0.03 on
    t_29; no exact test can say less than 2 · 0.5^5 = .0625 of them (McNemar's, or the sign flip of the 5 items that
    differ). The t's degrees of freedom are the clusters the variance rests on (`comparison_df`: Satterthwaite's
    (Σ T_c²)² / Σ T_c⁴ of the centred cluster totals, 7.1 here, less one), so p > .05, with the interval that p
    inverts; a sixth row the same way (exact p .031) is found; clusters that add alike keep C - 1."""
    from harness.outputs.compare.stats import CompareOptions, _row
    from harness.uncertainty.comparisons import comparison_df, interval, paired_difference, two_sided_p
    from harness.uncertainty.variance import mean_error

    keys = [[f"item{i // 3}"] for i in range(90)]
    a, b = np.zeros(90), np.zeros(90)
    a[[0, 3, 6, 9, 12]] = 1.0  # one row of each of five items
    error = mean_error(a - b, keys)
    totals = (a - a.mean()).reshape(30, 3).sum(axis=1) ** 2
    assert error.effective_clusters == pytest.approx(totals.sum() ** 2 / (totals**2).sum())
    df = comparison_df(30, False, error.effective_clusters)
    assert df == pytest.approx(error.effective_clusters - 1) and 6 < df < 7
    se = max(error.stderr, error.stderr_clustered)  # `comparison_error`
    assert two_sided_p(5 / 90, se, 29) < 0.05  # the t_29 it had
    row = _row("g", "group", "score", "group rule", (5 / 90, 0.0), error, CompareOptions())
    assert row["df"] == pytest.approx(df) and row["p_value"] > 0.05
    assert (row["low"], row["high"]) == pytest.approx(interval(5 / 90, se, 0.95, df)) and row["low"] < 0
    assert paired_difference(a, b, keys).p_value > 0.05
    a[15] = 1.0
    assert _row("g", "group", "score", "r", (6 / 90, 0.0), mean_error(a - b, keys), CompareOptions())["p_value"] < 0.05
    alike = mean_error(np.tile([1.0, -1.0, 0.0], 30) + np.repeat(np.arange(30) % 2, 3), keys)
    assert alike.effective_clusters == pytest.approx(30.0) and comparison_df(30, False, alike.effective_clusters) == 29
