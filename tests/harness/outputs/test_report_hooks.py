"""A benchmark declares what it gives `harness report` once, in its declaration (issue 43 item 3, issue 50 item 4):
`BenchmarkDeclaration.report` is a `ReportHooks` whose section is a `Section` taking a `ModelResults`, found through the
benchmark its tasks' YAML names (`benchmark: !function benchmark.BENCHMARK`), never by a conventional name."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from harness.config.benchmark import BenchmarkDeclaration, declared_benchmark
from harness.config.task_index import TaskIndex
from harness.config.yaml_loader import FunctionRef
from harness.outputs.report.hooks import NO_HOOKS, ReportHooks, report_of

SCALES = {"mmneedle": 1, "locovqa": 1, "milebench": 100, "mmlongbench": 100}


def test_every_benchmark_declares_its_report_hooks_and_typed_sections() -> None:
    index = TaskIndex()
    refs = {
        (ref.spec, ref.yaml_file.parent): ref
        for config in [*index.tasks.values(), *index.groups.values()]
        if isinstance(ref := getattr(config, "benchmark", None), FunctionRef)
    }
    declared = {folder.name + ":" + spec: declared_benchmark(ref) for (spec, folder), ref in refs.items()}
    # each paper's declaration, and MMLongBench's ablation sets', V1.1's and VLMEvalKit's two (issue 52), have
    # report hooks; a new benchmark's are optional (docs/ADDING_A_BENCHMARK.md), checked where it declares them
    papers = {
        "locovqa:benchmark.BENCHMARK",
        "milebench:benchmark.BENCHMARK",
        "mmlongbench:benchmark.ABLATIONS",
        "mmlongbench:benchmark.BENCHMARK",
        "mmlongbench:benchmark.V1_1",
        "mmlongbench:benchmark.VLMEVALKIT",
        "mmlongbench:benchmark.VLMEVALKIT_AS_PAPER",
        "mmneedle:benchmark.BENCHMARK",
    }
    assert papers <= set(declared)
    for where, benchmark in declared.items():
        assert isinstance(benchmark, BenchmarkDeclaration), where
        hooks = benchmark.report
        if where not in papers and hooks is None:
            continue
        assert isinstance(hooks, ReportHooks) and hooks.scale == SCALES.get(where.split(":")[0], hooks.scale), where
        assert hooks.section is not None and Path(inspect.getfile(hooks.section)).parent.name == where.split(":")[0]
        parameters = inspect.signature(hooks.section).parameters
        assert [(p.name, p.annotation) for p in parameters.values()] == [
            ("model", "str"),
            ("data", "ModelResults"),
            ("out_dir", "Path"),
        ], where
        for hook in (hooks.headline_metrics, hooks.across_models):
            assert hook is None or "Any" not in str(inspect.signature(hook)), hook


def test_a_report_of_another_type_is_said_and_left_out(capsys: pytest.CaptureFixture[str]) -> None:
    toy = BenchmarkDeclaration("Toy", report={"scale": 1})  # the mistake under test
    assert report_of(toy) is NO_HOOKS
    assert capsys.readouterr().err == "harness: the Toy declaration's report is a dict, not a ReportHooks: left out\n"
    assert report_of(BenchmarkDeclaration("Toy")) is NO_HOOKS and capsys.readouterr().err == ""
