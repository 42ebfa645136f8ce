"""The folder's one build: MMLongBench-Doc's whole fixture release, built once a session and read by every module
here (`fixture_builds`, tests/support/harness_fixtures.py: read it, never edit it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from builders.mmlongbench_doc import CONFIGS


@pytest.fixture(scope="module")
def doc_dir(fixture_builds: Callable[..., Path]) -> Path:
    return fixture_builds(mmlongbench_doc=list(CONFIGS))
