"""scripts/docs_schemas.py (`make docs`): docs/schemas/ holds the JSON Schema of each file the harness writes and of
the build manifest, as the declarations their readers validate with give it today (issue 62, item 2)."""

from __future__ import annotations

import json

from tests.support.paths import PROJECT


def test_the_schemas_in_docs_are_what_make_docs_writes(script_module) -> None:
    for name, text in script_module("docs_schemas").schemas().items():
        path = PROJECT / "docs" / "schemas" / name
        assert path.is_file() and path.read_text() == text, f"docs/schemas/{name} is stale: run `make docs`"


def test_the_journal_record_schema_says_what_a_record_requires() -> None:
    record = json.loads((PROJECT / "docs" / "schemas" / "journal_record.json").read_text())
    assert set(record["required"]) == {"doc_id", "sample_id", "status"}
    assert record["properties"]["status"]["enum"][0] == "ok"


def test_the_build_manifest_schema_says_what_a_reader_requires() -> None:
    manifest = json.loads((PROJECT / "docs" / "schemas" / "build_manifest.json").read_text())
    assert set(manifest["required"]) == {"format", "configs"}
    sha256 = manifest["$defs"]["ManifestFile"]["properties"]["sha256"]
    assert (sha256["pattern"], sha256["description"]) == ("^[0-9a-f]{64}$", "64 lowercase hex digits")
