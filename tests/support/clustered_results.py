"""What every benchmark's results file must carry for its uncertainty (issue 48; docs/statistics.md): beside each
task's and each pooled group's `<metric>_stderr,none`, the clustered `<metric>_stderr_clustered,none`, and under
`uncertainty` the rows, clusters and design effect behind it."""

from __future__ import annotations

from collections.abc import Mapping
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
                assert set(behind) == {"n", "n_clusters", "design_effect", "overlap", "method"}
                checked += 1
    return checked
