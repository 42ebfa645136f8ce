"""`compare.json`, what `harness compare` writes, declared once: its keys and what each holds (`CompareFile`), the one
place it is written (`write_compare`) and read (`read_compare_file`, checked against the same declaration through
pydantic, `harness.schema`, so a file edited by hand or damaged is one line naming the file, the field and
what was expected). Numbers that are not finite are written as the results file writes them ("N/A", "inf").
The statistics behind each field: `harness.outputs.compare.stats` and docs/statistics.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal, NotRequired, cast

from pydantic import Field
from typing_extensions import TypedDict

from builders.core import contract
from harness import schema
from harness.errors import UserError
from harness.file_writing import write_text
from harness.outputs.results.results_file import strict_values
from harness.redact import dumps

COMPARE_JSON = "compare.json"
COMPARE_MD = "compare.md"
Number = float | str  # a number; NaN written "N/A" (not estimable), an infinity "inf" / "-inf"
Adjustment = Literal["holm", "fdr_bh"]
# A count of rows or clusters: what reads it (`harness power --pair`, `harness report --run_to_run`) takes its square
# root and multiplies floats by it, so a file's count below 0 or past what a float holds exactly is no count.
Count = Annotated[int, Field(ge=0, le=2**53)]
# compare.json is a few KB a task metric; past this it is no file `harness compare` wrote.
COMPARE_MOST = 256 * contract.MiB


class ComparedRun(TypedDict):
    folder: str  # the results folder named on the command line
    model: str  # the model as `harness report` names it
    model_names: list[str]  # the `config.model_name`s of its results files (checkpoint or alias)
    results_files: list[str]  # the results files its values came from


class ComparisonRow(TypedDict):
    """A task's or group's metric in both runs, on their paired rows: A - B with its errors and tests."""

    name: str  # the task or group
    kind: Literal["task", "group"]
    metric: str
    method: str  # how the difference's error was computed (docs/statistics.md)
    higher_is_better: bool | None
    n_a: Count  # rows scored in run A (a group: over its tasks)
    n_b: Count
    n_paired: Count  # rows in both runs with the metric's value: the rows compared
    unpaired_a: Count  # rows scored in A and not in B (`unpaired` names them)
    unpaired_b: Count
    value_a: Number  # the metric on the paired rows
    value_b: Number
    difference: Number  # value_a - value_b
    stderr: Number  # rows taken as independent
    stderr_clustered: Number  # clustered on the rows' cluster keys (CR1; the graph sum for a crossed design)
    # CR2's bias-reduced error of a partition (N/A: not measured); the row's one error is the largest of the three,
    # its interval's, p's and MDE's, which `harness power --pair` reads (absent from files before issue 107)
    stderr_cr2: NotRequired[Number]
    n_clusters: Count
    design_effect: Number
    overlap: bool  # a crossed design: the graph sum and the normal distribution
    df: float | None  # Student's t degrees of freedom of the interval and p (`comparison_df`); null: normal
    low: Number  # the interval at `level`
    high: Number
    p_value: Number  # two-sided, of the clustered difference against 0
    p_adjusted: Number  # adjusted over every row with a p (`adjust`)
    a_only: int | None  # 0/1 values (or 0/100): rows where A scored and B did not (McNemar's b); null: not 0/1
    b_only: int | None  # the reverse (McNemar's c)
    mcnemar_p: Number | None  # McNemar's exact p (rows as independent); null where it does not apply
    correlation: Number  # Pearson's correlation of A's and B's values per row
    mde: Number  # the smallest true difference detected at `alpha` with `power`: (z + z) · the row's one error
    run_to_run_stderr: Number | None  # two runs of one model: stderr_clustered / √2; null: two models
    warnings: list[str]
    # a task's metric with one number per row in both runs (absent from a group's row and from older files): what
    # `harness report --run_to_run` reads as the measured run-to-run spread (`harness.outputs.report.run_to_run`)
    changed_rows: NotRequired[Count]  # paired rows whose value differs between the runs
    mean_squared_change: NotRequired[Number]  # mean of ((A - B) / scale)² per row; N/A: no known scale


class AgreementRow(TypedDict):
    """Two judges of the same replies (a judge swapped, `harness.outputs.compare.judge_agreement`): one judge metric of a task,
    or of several tasks one pair of judges scored, on the rows both judges scored."""

    name: str  # the task, or "N tasks" for the rows of `tasks` pooled
    tasks: list[str]
    metric: str
    measurement: Literal["nominal", "ordinal", "interval", "ratio"]  # alpha's level of measurement, kappa's weights
    measurement_from: str  # the metric's `level_of_measurement:`, or its aggregation
    judge_a: str  # run A's judge: its served model (or backend) and server, as its results file records them
    judge_b: str
    same_judge: bool  # one judge in both runs: its agreement with itself
    n: int  # rows both judges scored
    judged_a_only: int  # rows A's judge scored and B's did not (no verdict, or the call failed)
    judged_b_only: int
    n_clusters: int  # the clusters the bootstrap draws
    equal: Number  # the share of rows both judges scored alike
    kappa: Number  # Cohen's kappa (statsmodels), weighted by `kappa_weights`
    kappa_weights: Literal["none", "linear", "quadratic"]
    kappa_low: Number  # its cluster-bootstrap percentile interval at `level`
    kappa_high: Number
    alpha: Number  # Krippendorff's alpha (the `krippendorff` package) at `measurement`
    alpha_low: Number
    alpha_high: Number
    value_a: Number  # the metric's mean on these rows, by A's judge
    value_b: Number
    difference: Number  # value_a - value_b: what the swap changes, paired on the rows
    difference_low: Number  # its clustered interval at `level` (Student's t, C - 1 degrees of freedom)
    difference_high: Number
    values: list[float] | None  # the values either judge gave, ascending (null: too many for a table)
    table: list[list[int]] | None  # table[i][j]: rows A's judge scored values[i] and B's values[j]


class Unpaired(TypedDict):
    """A task's rows scored in one run alone: sample id -> what the other run has of it (`absent`, or its status)."""

    a_only: dict[str, str]
    b_only: dict[str, str]


class NotCompared(TypedDict):
    name: str
    kind: Literal["task", "group"]
    reason: str


class CompareFile(TypedDict):
    format: Literal["mmlongeval-compare/1"]
    a: ComparedRun
    b: ComparedRun
    same_model: bool  # both runs name one model: the differences are the run-to-run spread
    level: float  # of the intervals
    alpha: float  # of the minimum detectable effect
    power: float
    adjust: Adjustment
    tests: int  # the p values adjusted together
    bootstrap_iters: int  # draws of the cluster bootstrap (a task's own aggregation)
    rows: list[ComparisonRow]
    unpaired: dict[str, Unpaired]  # task -> its rows in one run alone (tasks with none are left out)
    not_compared: list[NotCompared]
    warnings: list[str]
    agreement: NotRequired[list[AgreementRow]]  # a judge swapped: the tasks whose replies are the same in both runs


def compare_file_problem(data: object) -> str | None:
    """What keeps `data` (a parsed compare.json) from being a `CompareFile`, or None."""
    if not isinstance(data, dict):
        return f"expected a JSON object, got {contract.kind_of(data)}"
    return schema.must_be(data, CompareFile)


def write_compare(compared: CompareFile, markdown: str, out_dir: Path) -> tuple[Path, Path]:
    """compare.json (strict JSON) and compare.md in `out_dir`, each written whole and never through a link."""
    data = dumps(strict_values(compared), indent=2, ensure_ascii=False)
    return write_text(out_dir / COMPARE_JSON, data), write_text(out_dir / COMPARE_MD, markdown)


def read_compare_file(path: Path) -> CompareFile:
    """A compare.json, parsed and checked, or a `UserError` naming the file and what was expected."""
    try:
        # Without blocking (a FIFO planted as compare.json), a regular file only, within its bound.
        data = contract.loads_json(contract.read_regular(path, COMPARE_MOST, "a compare.json").decode("utf-8"))
    except OSError as err:
        raise UserError(f"{path}: unreadable ({err.strerror or err})") from None
    except (UnicodeDecodeError, json.JSONDecodeError, contract.TooManyDigits, RecursionError) as err:
        raise UserError(f"{path}: not a compare.json: {str(err).splitlines()[0] if str(err) else err}") from None
    problem = compare_file_problem(data)
    if problem is not None:
        raise UserError(f"{path}: not a compare.json: {problem}")
    return cast(CompareFile, data)
