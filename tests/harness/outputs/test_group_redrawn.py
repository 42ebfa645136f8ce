"""A group's clustered error through a `!function` member is the cluster bootstrap of the group (issue 63, item 4):
MMLongBench's VH accuracy folded at 50 (`tasks.mmlongbench.utils.vh_folded`) taken at exactly 50 (a constant answer
on a balanced task) has every delete-one value equal, so the delta method through its jackknife gave the group 0.000;
redrawn whole, the group's error matches a cluster bootstrap written here apart (numpy, ids drawn with replacement),
and a group of smooth members keeps its delta-method error unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from harness.config.group_rules import MemberScore
from harness.outputs.results.groups import group_linearized
from harness.uncertainty.influence import difference, linearize_by_jackknife, linearize_mean
from tasks.mmlongbench.utils import vh_folded

IDS, ROWS = 60, 3  # source ids, each asked at ROWS depths; the same ids at both lengths (one cluster per id)
LENGTHS = ("8k", "16k")
STRICT = {"aggregation": "strict_mean"}


def _scores(rng: np.random.Generator, constant: bool) -> dict[str, np.ndarray]:
    """Per length, each row's 0/100 score: a constant answer right on exactly half the ids (a balanced task: the
    accuracy is 50, the fold's kink), or a model whose chance per id is drawn."""
    out = {}
    for length in LENGTHS:
        if constant:
            per_id = np.repeat((np.arange(IDS) % 2 == 0) * 100.0, ROWS)
        else:
            chance = np.repeat(rng.beta(2, 2, IDS), ROWS)
            per_id = (rng.random(IDS * ROWS) < chance) * 100.0
        out[length] = per_id
    return out


def _group(scores: dict[str, np.ndarray], fold: bool, run: str = "a"):
    keys = [[f"id{i // ROWS}"] for i in range(IDS * ROWS)]
    members, member_scores = [], []
    for length, values in scores.items():
        rows = [f"{run}{length}/{i}" for i in range(len(values))]
        if fold:
            form = linearize_by_jackknife(vh_folded, list(values), rows, keys)
        else:
            form = linearize_mean(values, rows, keys)
        members.append(form)
        member_scores.append(MemberScore(length, form.estimate, float("nan"), len(values)))
    value = float(np.mean([s.value for s in member_scores]))
    return group_linearized(STRICT, member_scores, members, value), value


def _apart(scores: dict[str, np.ndarray], seed: int, draws: int = 4000) -> float:
    """The group's cluster bootstrap, written apart: ids drawn with replacement, every length's rows of a drawn id
    kept together, each length folded, the mean of the folded."""
    rng = np.random.default_rng(seed)
    by_id = {length: values.reshape(IDS, ROWS) for length, values in scores.items()}
    replicates = []
    for _ in range(draws):
        drawn = rng.integers(0, IDS, IDS)
        replicates.append(np.mean([vh_folded(list(by_id[length][drawn].ravel())) for length in LENGTHS]))
    return float(np.std(replicates, ddof=1))


def test_a_group_of_folded_members_at_the_kink_has_its_bootstrap_error_not_zero() -> None:
    scores = _scores(np.random.default_rng(0), constant=True)
    group, value = _group(scores, fold=True)
    assert value == 50.0 and group is not None
    # what the delta method gave: every jackknife influence 0
    assert all(
        np.allclose(m.influence, 0)
        for m in [
            linearize_by_jackknife(vh_folded, list(v), [str(i) for i in range(len(v))], [[i] for i in range(len(v))])
            for v in scores.values()
        ]
    )
    error = group.error()
    assert "cluster bootstrap" in error.method and error.n_clusters == IDS
    assert error.stderr_clustered == pytest.approx(_apart(scores, 1), rel=0.1)
    assert error.stderr_clustered > 3  # the 6.72 at MMLongBench's sizes; never 0.000


def test_away_from_the_kink_the_redrawn_group_matches_the_bootstrap_written_apart() -> None:
    scores = _scores(np.random.default_rng(2), constant=False)
    group, _ = _group(scores, fold=True)
    assert group is not None
    assert group.error().stderr_clustered == pytest.approx(_apart(scores, 3), rel=0.1)
    assert group.error().stderr_clustered == group.error().stderr_clustered  # seeded: the same each time


def test_a_group_of_smooth_members_keeps_its_delta_method_error() -> None:
    scores = _scores(np.random.default_rng(4), constant=False)
    group, _ = _group(scores, fold=False)
    assert group is not None and group.redraw is None and group.error().method == "delta method"


def test_two_runs_of_a_folded_group_are_differenced_by_the_bootstrap() -> None:
    rng = np.random.default_rng(5)
    scores = _scores(rng, constant=True)
    a, _ = _group(scores, fold=True, run="")
    b, _ = _group(_scores(rng, constant=False), fold=True, run="")  # the same row ids: paired
    assert a is not None and b is not None
    error = difference(a, b).error()
    assert error.stderr_clustered > 0 and "cluster bootstrap" in error.method
