"""Fixtures of the MMLongBench tests alone (tests/README.md: a fixture one folder uses lives in its conftest)."""

from __future__ import annotations

from pathlib import Path

import pytest

SUMM_CONFIGS = ["summ_govreport_8k", "summ_multilexsum_8k"]


@pytest.fixture(scope="session")
def summ_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A `--data_dir` with the fixture build of the two 8K summarization configs (3 rows each), by the real builder:
    the judge's tests."""
    from builders.mmlongbench.build import build_mmlongbench

    root = tmp_path_factory.mktemp("summ_data")
    build_mmlongbench(source="fixture", out_dir=root, configs=SUMM_CONFIGS)
    return root
