"""compare.md, and the same section inside `harness report --paired`: a comparison's groups and tasks as tables,
what each column is, the rows scored in one run only, what was not compared and why.

A score is shown on the scale report.md shows it on, so that the paired section and the report's tables beside it
read alike (issue 54): a score on a known scale (`report.row_scale`'s rule: the benchmark's `ReportHooks.scale`, 1 for
proportions and 100 for the papers' 0-100 scores; else a proportion where both values lie in [0, 1]) has its values on
0-100 with one decimal, as the report's cells, and its differences, intervals, MDE and run-to-run errors in points with
two; a count (a `sum` aggregation, such as a task's count of replies that answer nothing) and any other number stay as recorded, in a table
of their own, so that no column mixes 0-100 scores with numbers on another scale. compare.json keeps every number as
the results files record it."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from harness.outputs.compare.intervals import few_clusters, row_scale, scale_for
from harness.outputs.report.report_md import PERCENT
from harness.outputs.results.compare_file import AgreementRow, CompareFile, ComparisonRow
from harness.uncertainty.comparisons import FEW_CLUSTERS
from harness.uncertainty.power import minimum_detectable_effect

ADJUSTED = {"holm": "Holm", "fdr_bh": "Benjamini-Hochberg"}
SHOWN_IDS = 3  # sample ids shown per task among its rows in one run only (compare.json lists them all)
SHOWN_NAMES = 6  # tasks shown per reason they were not compared
SHOWN_TABLE_VALUES = 6  # a confusion table of more values is in compare.json only
RECORDED = (
    "Rows on no 0-100 scale: counts (a `sum`, such as the rows a model left unanswered) and numbers that are no "
    "proportions, their values, differences, intervals and MDE as recorded (four decimals, a whole number whole), in a "
    "table of their own so that each column of the table above holds one scale."
)


def _number(value: object, digits: int = 4, factor: float = 1.0) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return "N/A" if value is None or isinstance(value, float | str) else str(value)
    return f"{value * factor:.{digits}f}"


def _recorded(value: object, digits: int = 4) -> str:
    """A number as recorded: a whole one (a count) as a whole number, any other with `digits` decimals."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else _number(value, digits)


def _p(value: object) -> str:
    if not isinstance(value, float) or not math.isfinite(value):
        return "N/A"
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def _interval(row: ComparisonRow, digits: int = 4, factor: float = 1.0) -> str:
    """The row's interval; "no spread" where it is a point (nothing varied: no interval to show), "not estimable" where
    the row has none (`compare_intervals.without_error`), "none (C clusters)" where there are too few clusters for one
    (`compare_intervals.few_clusters`)."""
    low, high = row["low"], row["high"]
    if isinstance(low, float) and isinstance(high, float) and math.isfinite(low) and math.isfinite(high):
        if f"{low * factor:.{digits}f}" == f"{high * factor:.{digits}f}":
            return "no spread"
        return f"[{low * factor:.{digits}f}, {high * factor:.{digits}f}]"
    se = row["stderr_clustered"]
    if not (isinstance(se, float) and math.isfinite(se)) and row["warnings"]:
        return "not estimable"  # said why in compare.json's warnings: it rests on too few rows, or nothing varied
    if few_clusters(row):
        return f"none ({row['n_clusters']} clusters)"
    return "N/A"


def _mde(row: ComparisonRow, digits: int, factor: float, scale: float | None) -> str:
    """The minimum detectable effect, or "not detectable at this size" where it lies past the scale (no difference
    the scale allows could be detected at these rows)."""
    mde = row["mde"]
    if scale is not None and isinstance(mde, float) and math.isfinite(mde) and mde > scale:
        return "not detectable at this size"
    return _number(mde, digits, factor)


def _counts(row: ComparisonRow) -> str:
    return "" if row["a_only"] is None else f"{row['a_only']} / {row['b_only']}"


def _table(rows: Sequence[ComparisonRow], compared: CompareFile, tasks: bool) -> list[str]:
    adjusted = ADJUSTED[compared["adjust"]]
    head = ["task" if tasks else "group", "metric", "rows", "A", "B", "A − B", f"{compared['level']:.0%} interval"]
    head += ["A only / B only", "McNemar p", "r"] if tasks else []
    head += ["p", f"p ({adjusted})", "deff", "MDE"] + (["run to run"] if compared["same_model"] else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        # on report.md's 0-100 scale (its own rule, `compare_intervals.row_scale`) with one decimal, as its cells, and
        # points with two; a count, or numbers that are no proportions, as recorded
        scale = row_scale(row)
        value, points, scaled = (4, 4, 1.0) if scale is None else (1, 2, PERCENT / scale)
        shown = _recorded if scale is None else functools.partial(_number, factor=scaled)
        cells = [f"`{row['name']}`", row["metric"], str(row["n_paired"]), shown(row["value_a"], value)]
        cells += [shown(row["value_b"], value), shown(row["difference"], points)]
        cells.append(_interval(row, points, scaled))
        if tasks:
            cells += [_counts(row), _p(row["mcnemar_p"]), _number(row["correlation"], 2)]
        cells += [_p(row["p_value"]), _p(row["p_adjusted"]), _number(row["design_effect"], 2)]
        cells.append(_mde(row, points, scaled, scale))
        if compared["same_model"]:
            cells.append(_number(row["run_to_run_stderr"], points, scaled))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _runs(compared: CompareFile) -> list[str]:
    a, b = compared["a"], compared["b"]
    lines = [f"A: **{a['model']}** in `{a['folder']}`; B: **{b['model']}** in `{b['folder']}`."]
    if compared["same_model"]:
        lines[0] += (
            f" Both runs are of one model (`{', '.join(a['model_names'])}`): their differences are the run-to-run "
            "spread (seeds, backends). *run to run* is the standard error of one run's score on these rows from that "
            "spread alone, the paired difference's clustered error / √2 (two independent runs' difference has twice "
            "one run's variance)."
        )
        if any(not row["same_judge"] for row in compared.get("agreement") or []):
            lines[0] += (
                " Where a judged task has the same replies in both runs, its judge metrics differ by the judges alone "
                "(*Judge agreement*, below)."
            )
    return lines


def explanation(compared: CompareFile) -> list[str]:
    level = f"{compared['level']:.0%}"
    adjusted = ADJUSTED[compared["adjust"]]
    z = minimum_detectable_effect(1, 1.0, alpha=compared["alpha"], power=compared["power"])  # the MDE per unit error
    return [
        f"Rows are paired on sample ids: each metric is recomputed in both runs on the rows both scored, and A − B is "
        f"their difference. The {level} interval and p are clustered on the tasks' cluster keys (rows that share an "
        "item count once; a group's members through its rule), Student's t with C − 1 degrees of freedom (C "
        "clusters; the normal for a crossed design); a task's own aggregation gets a cluster bootstrap. A 0/1 "
        "metric's interval is Newcombe's hybrid score interval on the clustered effective n, and every interval stays "
        f"inside its scale; with fewer than {FEW_CLUSTERS} clusters there is no interval (*none*) and p is the exact "
        "cluster sign-flip test's; *no spread*: nothing varied, so no interval; *not estimable*: a metric resting on "
        "fewer than two rows, or whose bootstrap replicates do not vary, has no error, no interval and no p "
        "(compare.json's `warnings` say which). A 0/1 metric's *p* is its interval inverted (p < 0.05 exactly where "
        "the 95 % interval leaves 0 out); *MDE* past the scale reads *not detectable at this size*. *p* is "
        f"two-sided, *p ({adjusted})* adjusted over the {compared['tests']} p values of this comparison. *A only / B "
        "only*: for a 0/1 metric (0/100 on a percentage scale), the rows where A scored and B did not (for an "
        "accuracy: A right, B wrong), and the reverse (McNemar's b and c); *McNemar p*: its exact test, rows taken as "
        "independent (too small where rows share items: the design effect *deff* says "
        "how much they do). *r*: the per-row correlation of A's and B's values. *MDE*: the smallest true difference "
        f"this comparison detects at α = {compared['alpha']} with {compared['power']:.0%} power, "
        f"{z:.2f} × the clustered error. Scores on report.md's scale, 0-100 (proportions as "
        "percentages, the papers' 0-100 scores as they are; A − B, its interval and the MDE in points); counts and "
        "other numbers as recorded (compare.json holds every number as recorded). "
        "The formulas: docs/statistics.md, *Comparing two runs*.",
    ]


def _unpaired(compared: CompareFile) -> list[str]:
    if not compared["unpaired"]:
        return ["Every row scored in one run was scored in the other."]
    lines = [
        "A row scored in one run and not in the other is left out of its task's rows and named here (every id is in "
        "compare.json, `unpaired`), with what the other run has of it.",
        "",
        "| task | scored in A only | scored in B only | e.g. |",
        "|---|---|---|---|",
    ]
    for task, rows in compared["unpaired"].items():
        examples = [f"{s} (B: {v})" for s, v in list(rows["a_only"].items())[:SHOWN_IDS]]
        examples += [f"{s} (A: {v})" for s, v in list(rows["b_only"].items())[:SHOWN_IDS]]
        lines.append(f"| `{task}` | {len(rows['a_only'])} | {len(rows['b_only'])} | {', '.join(examples)} |")
    return lines


def _few(names: Sequence[str]) -> str:
    """The first `SHOWN_NAMES` names, and how many more (compare.json lists them all)."""
    more = f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else ""
    return ", ".join(f"`{n}`" for n in names[:SHOWN_NAMES]) + more


def _not_compared(compared: CompareFile) -> list[str]:
    """One line per reason: the tasks and groups it holds for (the first few named; compare.json lists them all)."""
    by_reason: dict[tuple[str, str], list[str]] = {}
    for item in compared["not_compared"]:
        by_reason.setdefault((item["kind"], item["reason"]), []).append(item["name"])
    lines = []
    for (kind, reason), names in by_reason.items():
        lines.append(f"- {len(names)} {kind}{'s' if len(names) > 1 else ''} ({_few(names)}): {reason}")
    return lines


def _swap_lines(rows: Sequence[AgreementRow]) -> list[str]:
    """One line per pair of judges: which tasks share their replies and were scored by which judge in each run."""
    by_judges: dict[tuple[str, str, bool], list[str]] = {}
    for row in rows:
        if len(row["tasks"]) == 1:
            tasks = by_judges.setdefault((row["judge_a"], row["judge_b"], row["same_judge"]), [])
            tasks += [t for t in row["tasks"] if t not in tasks]
    lines = []
    for (judge_a, judge_b, same), tasks in by_judges.items():
        judged = (
            f"judged by {judge_a} in both runs: its agreement with itself"
            if same
            else f"judged by {judge_a} in A and by {judge_b} in B: the judge metrics' A − B is what the swap changes"
        )
        lines.append(
            f"- **Same replies, another judge**: {_few(tasks)}: every paired row has the same reply in A and B, {judged}."
        )
    return lines


def _merged(rows: Sequence[AgreementRow]) -> list[tuple[list[str], AgreementRow]]:
    """The rows, a task's metrics with the same values on the same rows (`doc_qa_llm` and `score`) shown as one."""
    merged: dict[str, tuple[list[str], AgreementRow]] = {}
    for row in rows:
        same = repr({k: v for k, v in row.items() if k != "metric"})
        merged.setdefault(same, ([], row))[0].append(row["metric"])
    return list(merged.values())


def _bounds(low: object, high: object, digits: int, factor: float = 1.0) -> str:
    if isinstance(low, float) and isinstance(high, float) and math.isfinite(low) and math.isfinite(high):
        return f"[{low * factor:.{digits}f}, {high * factor:.{digits}f}]"
    return "N/A"


def _confusion(metrics: list[str], row: AgreementRow) -> list[str]:
    values, table = row["values"], row["table"]
    if values is None or table is None or len(values) > SHOWN_TABLE_VALUES:
        return []
    names = [f"{v:g}" for v in values]
    lines = [f"`{row['name']}`, {', '.join(metrics)} (rows: A's judge; columns: B's judge)", ""]
    lines += ["| A \\ B | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 1)]
    lines += [f"| {name} | " + " | ".join(map(str, counts)) + " |" for name, counts in zip(names, table, strict=True)]
    return [*lines, ""]


def _agreement(compared: CompareFile, part: str) -> list[str]:
    rows = compared.get("agreement") or []
    if not rows:
        return []
    level = f"{compared['level']:.0%}"
    lines = [f"{part} Judge agreement", "", *_swap_lines(rows), ""]
    lines.append(
        "κ: Cohen's kappa, weighted for the metric's level of measurement (none for nominal, linear in rank for "
        "ordinal, quadratic in value for interval and ratio); α: Krippendorff's alpha at that level (the metric's "
        "`level_of_measurement:`, else interval for a `mean`). 1 is the same score on every row, 0 no more agreement "
        "than chance, below 0 systematic disagreement. Their intervals: the percentiles of "
        f"{compared['bootstrap_iters']} cluster-bootstrap draws (whole items drawn). *alike*: the rows scored alike; "
        "*A only / B only*: rows one judge scored and the other did not. A − B: the paired difference of the metric's "
        "mean on the rows both judges scored, clustered. A row of *N tasks* pools the tasks one pair of judges scored. "
        "How to read them: docs/statistics.md, *A judge's agreement*."
    )
    merged = _merged(rows)
    scaled = [(m, r, scale_for(r["tasks"][0], "task", (r["value_a"], r["value_b"]))) for m, r in merged]
    if any(scale is not None for *_, scale in scaled):
        lines += ["", *_agreement_table([m for m in scaled if m[2] is not None], level)]
    if any(scale is None for *_, scale in scaled):  # one scale a column: no 0-100 scale, a table of its own
        lines += ["", f"{part} Judge agreement: other numbers, as recorded", ""]
        lines += _agreement_table([m for m in scaled if m[2] is None], level)
    tables: list[str] = []
    for metrics, row in merged:
        if len(row["tasks"]) > 1 or not any(set(row["tasks"]) < set(r["tasks"]) for r in rows):
            tables += _confusion(metrics, row)
    return [*lines, "", *tables]


def _agreement_table(rows: Sequence[tuple[list[str], AgreementRow, float | None]], level: str) -> list[str]:
    """Agreement rows (their metrics, the row, its scale) as a table: A and B on report.md's 0-100 scale where the
    metric has one, with one decimal as its cells, A − B in points with two; else as recorded."""
    head = ["task", "metric", "level", "rows", "A only / B only", "alike", "κ", f"κ {level}", "α", f"α {level}"]
    head += ["A", "B", "A − B", f"{level} interval"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for metrics, row, scale in rows:
        factor, digits = (1.0, 4) if scale is None else (PERCENT / scale, 2)
        shown = _recorded if scale is None else functools.partial(_number, digits=1, factor=factor)
        cells = [f"`{row['name']}`", ", ".join(metrics), row["measurement"], str(row["n"])]
        cells += [f"{row['judged_a_only']} / {row['judged_b_only']}", _number(row["equal"], 2)]
        cells += [_number(row["kappa"], 3), _bounds(row["kappa_low"], row["kappa_high"], 3)]
        cells += [_number(row["alpha"], 3), _bounds(row["alpha_low"], row["alpha_high"], 3)]
        cells += [shown(row["value_a"]), shown(row["value_b"])]
        cells += [_number(row["difference"], digits, factor)]
        cells.append(_bounds(row["difference_low"], row["difference_high"], digits, factor))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def comparison_lines(compared: CompareFile, depth: int = 1) -> list[str]:
    """compare.md's lines; `depth` is its title's heading level (2 inside a report)."""
    title, part = "#" * depth, "#" * (depth + 1)
    lines = [f"{title} Paired comparison: {compared['a']['model']} − {compared['b']['model']}", ""]
    lines += [*_runs(compared), "", *explanation(compared), ""]
    for kind, title in (("group", "Groups"), ("task", "Tasks")):
        rows = [r for r in compared["rows"] if r["kind"] == kind]
        scored = [r for r in rows if row_scale(r) is not None]  # one scale a column: 0-100 here, as recorded below
        recorded = [r for r in rows if row_scale(r) is None]
        if scored:
            lines += [f"{part} {title}", "", *_table(scored, compared, kind == "task"), ""]
        if recorded:
            lines += [f"{part} {title}: counts and other numbers, as recorded", "", RECORDED, ""]
            lines += [*_table(recorded, compared, kind == "task"), ""]
    lines += _agreement(compared, part)
    lines += [f"{part} Rows in one run only", "", *_unpaired(compared), ""]
    if compared["not_compared"]:
        lines += [f"{part} Not compared", "", *_not_compared(compared), ""]
    if compared["warnings"]:
        lines += [f"{part} Warnings", "", *[f"- {warning}" for warning in compared["warnings"]], ""]
    return lines
