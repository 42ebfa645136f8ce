"""The project's own folders, for tests that read its files (task YAML, docs, pyproject.toml) wherever they live."""

from __future__ import annotations

from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
