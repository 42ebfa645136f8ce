"""What every benchmark's results file must carry for its uncertainty (issue 48; docs/statistics.md): beside each
task's and each pooled group's `<metric>_stderr,none`, the clustered `<metric>_stderr_clustered,none`, and under
`uncertainty` the rows, clusters and design effect behind it."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def assert_clustered_fields(results: Mapping[str, Any]) -> int:
    """Check the clustered fields of every task and every group with a pooled score; returns how many values had them."""
    checked = 0
    for section in ("results", "groups"):
        for name, entry in results[section].items():
            for key in entry:
                metric, comma, _ = key.partition(",")
                if not comma or metric.endswith(("_stderr", "_stderr_clustered")):
                    continue
                assert f"{metric}_stderr,none" in entry and f"{metric}_stderr_clustered,none" in entry, (name, metric)
                if entry[key] == "N/A":
                    continue  # no value (a group missing a member): nothing behind its error
                behind = results["uncertainty"][name][metric]
                assert 0 < behind["n_clusters"] <= behind["n"], (name, metric, behind)
                rule = {"kish_clusters", "largest_cluster", "slope", "working_model_n", "interval_rule"}  # issue 107's
                assert set(behind) - rule - {"stderr_cr2"} == {"n", "n_clusters", "design_effect", "overlap", "method"}
                assert set(behind) & rule in (set(), rule), (name, metric, behind)  # where the rows are clustered
                assert "stderr_cr2" in behind or behind["overlap"] or set(behind) & rule == set(), (name, metric)
                checked += 1
    return checked


def strict_mean_group(folder: Path, group: str, tasks: list[str], metric: str) -> Path:
    """An `--include_path` folder, `folder`/groups, holding one group: `group` over `tasks`, their `metric` pooled by
    strict_mean."""
    groups = folder / "groups"
    groups.mkdir()
    (groups / f"{group}.yaml").write_text(
        textwrap.dedent(
            f"""\
            group: {group}
            task: [{", ".join(tasks)}]
            aggregate_metric_list:
              - metric: {metric}
                aggregation: strict_mean
            """
        )
    )
    return groups


def results_in(model_folder: Path) -> dict[str, Any]:
    """The results file of a run, the one in its model's output folder."""
    (path,) = model_folder.glob("results_*.json")
    return json.loads(path.read_text())
