"""What a benchmark gives `harness view`, declared: the `ViewHooks` of its declaration
(`harness.config.benchmark.BenchmarkDeclaration.view`, which its tasks' YAML names; each benchmark writes it in its
`view_hooks.py`): the sample table's axes, the breakdowns whose cells open their samples, the marks on a prompt's
images, each task's place on the axes across tasks and the grids a group's page draws of them, the page a row of its
report opens, the names of a list-valued metric's fields, the metric that scores a row where the headline metric's rows
hold no score of their own, and the gold in the form a reply gives it.

    BenchmarkDeclaration("Toy", view=ViewHooks(sample_axes=SAMPLE_AXES, task_axes=task_axes, viewer_row=viewer_row))

A declaration without `view` has no viewer hooks: the sample table shows the image count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from harness.config.benchmark import BenchmarkDeclaration, field_of

Marks = list[dict[str, object]]  # each {"kind": "gold" | "guess", "image", "row", "col", "n", "legend"?}


class SampleAxes(Protocol):
    """The sample table's axes of `task` (label -> a value per document) from the build's columns that
    `ViewHooks.sample_axes` names."""

    def __call__(self, task: str, columns: dict[str, list[object]], /) -> Mapping[str, list[object]]: ...


class SampleMarks(Protocol):
    """The cells (or whole images) to outline on a document's images, from the document and the model's answer."""

    def __call__(self, doc: dict[str, object], response: object, /) -> Marks: ...


class SiblingMarks(Protocol):
    """`SampleMarks` that also read the documents `ViewHooks.sample_siblings` relates to this one."""

    def __call__(self, doc: dict[str, object], response: object, siblings: list[dict[str, object]], /) -> Marks: ...


class TaskAxes(Protocol):
    """A task's values on the axes across tasks (a group's page filters and grids), from its name."""

    def __call__(self, task: str, /) -> dict[str, str]: ...


class GoldShown(Protocol):
    """The gold answer as the page shows it, from the document and the gold's text as the journal holds it: in the
    form a reply gives it (an option's letter where the data holds its index); None: as the journal holds it."""

    def __call__(self, doc: dict[str, object], gold: str, /) -> str | None: ...


class ViewerRow(Protocol):
    """The page (task or group, {axis: value}) a row of the benchmark's own report tables opens, or None."""

    def __call__(self, header: list[str], cells: list[str], /) -> tuple[str, dict[str, str]] | None: ...


@dataclass(frozen=True)
class ViewHooks:
    """A benchmark's hooks for `harness view` (`BenchmarkDeclaration.view`); each hook is optional."""

    sample_axes: Sequence[tuple[str, str]] = ()  # (label, build column); without: ("images", "num_images")
    sample_axes_of: SampleAxes | None = None  # without: each declared column as it is
    sample_cells: Mapping[str, str] = field(default_factory=dict)  # results breakdown -> the sample axis it indexes
    sample_marks: SampleMarks | SiblingMarks | None = None  # a SiblingMarks when `sample_siblings` is set
    sample_siblings: str | None = None  # the build column whose equal values relate documents
    task_axes: TaskAxes | None = None
    group_grid: Mapping[str, Sequence[str]] | None = None  # {"rows": axes, "columns": axes, "facets": axes}
    axis_order: Mapping[str, Sequence[str]] = field(default_factory=dict)  # axis -> its values in order
    viewer_row: ViewerRow | None = None
    # A metric whose row holds several numbers (a list) -> a name for each, shown beside each on a sample's page.
    metric_fields: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # A metric whose rows hold no one score of their own (a list the aggregation reads, such as a heat map's cell and
    # decision) -> the metric that scores each row: the page reads a row's value, right or wrong, on it.
    row_scores: Mapping[str, str] = field(default_factory=dict)
    gold_shown: GoldShown | None = None  # without: the gold as the journal holds it


NO_VIEW_HOOKS = ViewHooks()


def view_hooks_of(benchmark: BenchmarkDeclaration | None) -> ViewHooks:
    """The `ViewHooks` a benchmark declares (none, or no declaration: `NO_VIEW_HOOKS`). Anything else is said in one
    line and left out: a broken declaration costs the benchmark its viewer hooks, not the viewer its pages."""
    if benchmark is None:
        return NO_VIEW_HOOKS
    return field_of(benchmark, "view", ViewHooks, "harness view") or NO_VIEW_HOOKS
