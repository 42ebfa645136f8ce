"""Fuzz: build manifests (issue 30). Whatever `build_manifest.json` holds (integers past Python's 4,300-digit limit
included, issue 41), loading a task's data ends in the data, verified, or in one line naming the build; never a
traceback. Verified means: the data loads only where every file the manifest lists for the task's config has the
sha256 the manifest gives it, so a hash or a path tampered with, or a data file changed under a good manifest, is
refused (issue 41: the property never checked it)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from builders.core import contract
from harness.config.task_index import TaskIndex
from harness.errors import UserError
from harness.running.task.task import Task

from .conftest import JSON, bounded, budget, counted, deep, mutated, with_long_integers

CONFIG = "colors"  # the config toy_colors reads


@st.composite
def tampered(draw: Callable[..., Any], good: dict) -> str:
    """The good manifest with one file of the task's config given another sha256, or another build file's path."""
    manifest = json.loads(json.dumps(good))
    entry = draw(st.sampled_from(manifest["configs"][CONFIG]["files"]))
    if draw(st.booleans()):
        at = draw(st.integers(0, 63))
        digit = draw(st.sampled_from([d for d in "0123456789abcdef" if d != entry["sha256"][at]]))
        entry["sha256"] = entry["sha256"][:at] + digit + entry["sha256"][at + 1 :]
    else:
        others = [f["path"] for name, c in manifest["configs"].items() if name != CONFIG for f in c["files"]]
        entry["path"] = draw(st.sampled_from(others))
    return json.dumps(manifest)


@budget(fuzz=300, ci=10)
@given(data=st.data(), changed_data=st.one_of(st.just(-1), st.just(-1), st.integers(0, 400)))
def test_any_manifest_loads_verified_data_or_fails_in_one_line(
    toy_build, data: st.DataObject, changed_data: int
) -> None:
    counted()
    data_dir, tasks = toy_build
    good = json.loads((data_dir / "toy" / contract.MANIFEST_NAME).read_text())
    manifest = data.draw(
        st.one_of(
            mutated(good).map(json.dumps),
            JSON.map(json.dumps),
            st.sampled_from([deep(5000), "", "\xff", "[]"]),
            with_long_integers(good),
            tampered(good),
        ),
        label="manifest",
    )
    config = TaskIndex([tasks], include_defaults=False).tasks["toy_colors"]
    with tempfile.TemporaryDirectory() as folder, bounded(60, "a task's data"):
        root = Path(folder)
        shutil.copytree(data_dir, root, dirs_exist_ok=True)
        (root / "toy" / contract.MANIFEST_NAME).write_text(manifest, errors="surrogateescape")
        if changed_data >= 0:  # one byte of the config's data file changed, whatever the manifest says
            (parquet,) = (root / "toy" / CONFIG).glob("*.parquet")
            raw = bytearray(parquet.read_bytes())
            raw[changed_data * 97 % len(raw)] ^= 0x01
            parquet.write_bytes(bytes(raw))
        try:
            task = Task(config)
            task.load(root)
        except UserError as err:
            message = str(err)
            assert "\n" not in message.strip() and str(root) in message, message
            return
        assert len(task) > 0
        # Loaded: so every file the manifest lists for the config is there with the hash it gives.
        listed = json.loads(manifest)["configs"][CONFIG]["files"]
        for entry in listed:
            assert contract.file_sha256(root / "toy" / entry["path"]) == entry["sha256"], entry
