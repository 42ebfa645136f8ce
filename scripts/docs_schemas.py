"""`make docs`: the JSON Schema of each file the harness writes, and of the build manifest, in docs/schemas/ (issue 62,
item 2), from the declaration its reader validates with (`harness.schema`, `contract.manifest_json_schema`). `--check`
writes nothing and fails where a schema in docs/schemas/ differs (the test runs that).

    python scripts/docs_schemas.py [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "docs" / "schemas"


def schemas() -> dict[str, str]:
    """Each documented file's schema by its name in docs/schemas/."""
    from builders.core import contract
    from harness import schema
    from harness.outputs.results.results_file import ResultsFile
    from harness.running.journal.journal_file import JournalHeader, SampleRecord
    from harness.running.journal.sample_log import SampleLogLine

    declarations: dict[str, type] = {
        "journal_header": JournalHeader,
        "journal_record": SampleRecord,
        "results_file": ResultsFile,
        "sample_log_line": SampleLogLine,
    }
    found = {f"{name}.json": schema.json_schema(declaration) for name, declaration in declarations.items()}
    found["build_manifest.json"] = json.dumps(contract.manifest_json_schema(), indent=2, sort_keys=True) + "\n"
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; fail where a schema is stale")
    check = parser.parse_args(argv).check
    stale = []
    for name, text in schemas().items():
        path = FOLDER / name
        if path.is_file() and path.read_text() == text:
            continue
        stale.append(name)
        if not check:
            FOLDER.mkdir(exist_ok=True)
            path.write_text(text)
    if check and stale:
        print(f"docs/schemas/ is stale ({', '.join(stale)}): run `make docs`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
