"""Fuzz: build manifests (issue 30). Whatever `build_manifest.json` holds, loading a task's data ends in the data,
verified, or in one line naming the manifest; never a traceback."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from harness.config.task_index import TaskIndex
from harness.errors import UserError
from harness.running.task import Task

from .conftest import JSON, bounded, budget, counted, deep, mutated


@budget(fuzz=300, ci=10)
@given(data=st.data())
def test_any_manifest_loads_verified_data_or_fails_in_one_line(toy_build, data: st.DataObject) -> None:
    counted()
    data_dir, tasks = toy_build
    good = json.loads((data_dir / "toy" / "build_manifest.json").read_text())
    manifest = data.draw(
        st.one_of(mutated(good).map(json.dumps), JSON.map(json.dumps), st.sampled_from([deep(5000), "", "\xff", "[]"])),
        label="manifest",
    )
    config = TaskIndex([tasks], include_defaults=False).tasks["toy_colors"]
    with tempfile.TemporaryDirectory() as folder, bounded(60, "a task's data"):
        root = Path(folder)
        shutil.copytree(data_dir, root, dirs_exist_ok=True)
        (root / "toy" / "build_manifest.json").write_text(manifest, errors="surrogateescape")
        try:
            task = Task(config)
            task.load(root)
            assert len(task) > 0
        except UserError as err:
            assert "Traceback" not in str(err)
