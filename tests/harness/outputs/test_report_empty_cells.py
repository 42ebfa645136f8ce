"""Every cell of report.md's tables at the top with no number says why (issue 76, item 2): an empty one is a task the
model did not run (the legend says so), "—" one whose run holds no value for the row's metric and "N/A" one that
holds no number, each reason listed under the table with the rows it holds for; a metric only the task's judge
writes, in a run without a judge, is said to be that."""

from __future__ import annotations

from harness.outputs.report.report_md import NOT_RUN, cross_model_table, summary
from harness.outputs.results.model_results import ModelResults

JUDGED = {"configs": {"judged": {"judge": {"metrics": ["acc"]}}}}


def _models() -> dict[str, ModelResults]:
    """`b` ran everything; `a` ran `judged` without its judge (no acc), `open` with no number, not `alone`."""
    a = ModelResults(
        results={"judged": {"unextracted_acc,none": 0.1}, "open": {"acc,none": "N/A"}},
        groups={"both": {"acc,none": 0.25, "acc_stderr,none": 0.1}},
        sources={"judged": JUDGED},
    )
    b = ModelResults(
        results={
            "judged": {"acc,none": 0.5, "acc_stderr,none": 0.1},
            "open": {"acc,none": 0.25, "acc_stderr,none": 0.1},
            "alone": {"acc,none": 0.75, "acc_stderr,none": 0.1},
        },
        groups={"both": {"acc,none": 0.5, "acc_stderr,none": 0.1}},
    )
    return {"b": b, "a": a}  # columns by name: a, then b


def _cells(lines: list[str]) -> dict[str, list[str]]:
    """Each row's cells of the two models, by task or group."""
    return {
        cells[0].strip(): cells[-2:]
        for cells in ([c.strip() for c in line.strip().strip("|").split("|")] for line in lines)
        if len(cells) > 2 and not set(cells[0]) <= set("-")
    }


def test_each_cell_without_a_number_says_why() -> None:
    lines = cross_model_table(_models())
    cells = _cells(lines)
    assert cells["alone"][0] == "" and NOT_RUN in lines[2]  # a did not run it: empty, and the legend says so
    assert cells["judged"][0] == "—" and cells["open"][0] == "N/A"  # were "" and "N/A", neither said why
    why = [line for line in lines if line.startswith("- *")]
    assert any(
        line.startswith("- *—*: a metric only the task's judge writes") and "`judged` acc" in line for line in why
    )
    assert any(line.startswith("- *N/A*:") and "`open` acc" in line for line in why)


def test_the_summary_says_what_an_empty_cell_is() -> None:
    models = _models()
    models["a"].groups.pop("both")
    lines = summary(models)
    assert _cells(lines)["both · acc"][0] == "" and NOT_RUN in lines[2]
