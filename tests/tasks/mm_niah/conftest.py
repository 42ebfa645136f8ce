"""The folder's one build: MM-NIAH's whole fixture release, built once a session and read by every module here
(`fixture_builds`, tests/support/harness_fixtures.py: read it, never edit it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from builders.mm_niah import CONFIGS


@pytest.fixture(scope="module")
def built(fixture_builds: Callable[..., Path]) -> Path:
    return fixture_builds(mm_niah=list(CONFIGS))
