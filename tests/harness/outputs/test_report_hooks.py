"""A benchmark's report module declares what it gives `harness report` (issue 43 item 3): its sections are
`Section`s taking a `ModelResults`, and beside them one `ReportHooks` (`REPORT_HOOKS`), found by that one name."""

from __future__ import annotations

import inspect
import types
from pathlib import Path

import pytest

from harness.config.task_index import TaskIndex
from harness.config.yaml_loader import FunctionRef
from harness.outputs.report_hooks import NO_HOOKS, ReportHooks, hooks_of

SCALES = {"mmneedle": 1, "locovqa": 1, "milebench": 100, "mmlongbench": 100}


def test_every_benchmark_declares_its_report_hooks_and_typed_sections() -> None:
    index = TaskIndex()
    sections = {
        ref.resolve()
        for config in [*index.tasks.values(), *index.groups.values()]
        if isinstance(ref := getattr(config, "report", None), FunctionRef)
    }
    assert len(sections) == 5  # each benchmark's section, and MMLongBench's ablation sets'
    for section in sections:
        benchmark = Path(inspect.getfile(section)).parent.name
        hooks = hooks_of(section)
        assert isinstance(hooks, ReportHooks) and hooks.scale == SCALES[benchmark], section.__module__
        parameters = inspect.signature(section).parameters
        assert [(p.name, p.annotation) for p in parameters.values()] == [
            ("model", "str"),
            ("data", "ModelResults"),
            ("out_dir", "Path"),
        ], section.__module__
        for hook in (hooks.headline_metrics, hooks.across_models):
            assert hook is None or "Any" not in str(inspect.signature(hook)), hook


def test_a_report_hooks_of_another_type_is_said_and_left_out(capsys: pytest.CaptureFixture[str]) -> None:
    module = types.ModuleType("tasks.toy.report")
    module.REPORT_HOOKS = {"scale": 1}  # type: ignore[attr-defined]  # the mistake under test

    def section(model: str, data: object, out_dir: object) -> list[str]:
        return []

    section.__module__ = module.__name__
    import sys

    sys.modules[module.__name__] = module
    try:
        assert hooks_of(section) is NO_HOOKS
    finally:
        del sys.modules[module.__name__]
    assert capsys.readouterr().err == "harness: tasks.toy.report.REPORT_HOOKS is a dict, not a ReportHooks: left out\n"
