"""The build manifest's declaration validated by pydantic (`contract.manifest_schema`, issue 62 item 2): a manifest
that is not as declared is one line naming the field, what was expected there and what was found; keys the
declaration does not name are left alone."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from builders.core import contract

SHA = "ab" * 32
GOOD: dict[str, Any] = {
    "format": contract.MANIFEST_FORMAT,
    "contract": {"image_storage": "embedded"},
    "configs": {"m1": {"files": [{"path": "m1/a.parquet", "num_bytes": 3, "sha256": SHA}], "rows": 2, "file": "x"}},
}
HUB = {"repo": "org/name", "revision": "main", "commit": "c" * 40, "files": ["a.json"]}


def damaged(change: Any) -> dict[str, Any]:
    manifest = copy.deepcopy(GOOD)
    change(manifest)
    return manifest


def test_a_manifest_as_declared_passes_and_keys_it_does_not_name_are_left_alone() -> None:
    assert contract.manifest_problem(GOOD) is None
    assert contract.manifest_problem({**GOOD, "extra": [1, {"x": None}], "inputs": {"hub": HUB}}) is None
    assert contract.manifest_problem({**GOOD, "inputs": {"hub": {"a": HUB, "b": HUB}}}) is None  # several sources


def files(manifest: dict[str, Any]) -> list[Any]:
    return manifest["configs"]["m1"]["files"]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda m: m.update(format="mmlongeval-build/2"), "format: expected one of mmlongeval-build/1, got 'mm"),
        (lambda m: m.pop("format"), "format: expected one of mmlongeval-build/1, got nothing"),
        (lambda m: m.update(configs=["m1"]), "configs: expected an object naming each config, got ['m1']"),
        (lambda m: m.update(configs={}), "configs: expected an object naming each config, got {}"),
        (lambda m: m["configs"].update(m1=3), "configs.m1: expected an object, got 3"),
        (lambda m: m["configs"]["m1"].update(files="x"), "configs.m1.files: expected a list of files, got 'x'"),
        (lambda m: m["configs"]["m1"].update(files=[]), "configs.m1.files: expected a list of files, got []"),
        (lambda m: files(m).__setitem__(0, 3), "files[0]: expected an object with path, num_bytes and sha256, got 3"),
        (lambda m: files(m)[0].pop("sha256"), "files[0].sha256: expected 64 lowercase hex digits, got nothing"),
        (lambda m: files(m)[0].update(sha256="AB"), "files[0].sha256: expected 64 lowercase hex digits, got 'AB'"),
        (lambda m: files(m)[0].update(sha256=None), "files[0].sha256: expected 64 lowercase hex digits, got None"),
        (lambda m: files(m)[0].update(num_bytes=True), "files[0].num_bytes: expected a byte count, got True"),
        (lambda m: files(m)[0].update(path=""), "files[0].path: expected a relative path, got ''"),
        (lambda m: files(m)[0].update(path="../x"), "files[0].path: '../x' is not a path inside the build folder"),
        (lambda m: files(m)[0].update(path="a/./b"), "files[0].path: 'a/./b' is not a path inside the build folder"),
        (lambda m: m["configs"]["m1"].update(rows=-1), "configs.m1.rows: expected a count, got -1"),
        (lambda m: m["configs"]["m1"].update(rows="2"), "configs.m1.rows: expected a count, got '2'"),
        (lambda m: m.update(builder=3), "builder: expected a string, got 3"),
        (lambda m: m.update(steps=[3]), "steps[0]: expected an object, got 3"),
        (lambda m: m.update(caveats={"a": 1}), "caveats.a: expected a string, got 1"),
        (lambda m: m["contract"].update(image_storage="inline"), "expected one of embedded, shared, got 'inline'"),
        (lambda m: m["contract"].update(image_storage="shared"), "image_table: expected an object, got nothing"),
        (lambda m: m.update(inputs={"hub": {**HUB, "commit": "x"}}), "inputs.hub.commit: expected a commit (40 hex"),
        (lambda m: m.update(inputs={"hub": {"a": {**HUB, "files": 1}}}), "inputs.hub.a.files: expected a list, got 1"),
    ],
)
def test_what_is_not_as_declared_is_one_line_naming_the_field_and_what_was_expected(change: Any, said: str) -> None:
    problem = contract.manifest_problem(damaged(change))
    assert problem is not None and said in problem and "\n" not in problem, problem


def test_a_reader_names_the_file_and_the_field(tmp_path: Path) -> None:
    contract.write_manifest(tmp_path, damaged(lambda m: files(m)[0].pop("sha256")))
    with pytest.raises(contract.ManifestError) as raised:
        contract.read_manifest(tmp_path)
    assert str(raised.value) == (
        f"{tmp_path / contract.MANIFEST_NAME}: configs.m1.files[0].sha256: expected 64 lowercase hex digits, got nothing"
    )


def test_a_value_s_kind_in_words() -> None:
    values: list[object] = [None, True, 1, 1.5, "s", [], {}, 10**400]
    assert [contract.kind_of(v) for v in values] == [
        "null",
        "a boolean",
        "a number",
        "a number",
        "a string",
        "a list",
        "an object",
        "an integer past a float's range",
    ]
