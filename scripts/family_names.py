"""`make docs`: harness/models/families/names.json, the names each family declares (its config's `model_type`s and
architectures, its API names' fragments, its aliases and their checkpoints, its prompt styles), from the family
modules themselves (`harness.models.families.declared_names`). A lookup reads it to import only the families whose
names match; a family it does not list yet is imported on every lookup, so a stale file costs time, never an answer.
`--check` writes nothing and fails where the file differs from the modules (the test runs that).

    python scripts/family_names.py [--check]
"""

from __future__ import annotations

import argparse
import json
import sys


def render() -> str:
    from harness.models.families import FAMILIES, declared_names, family

    return json.dumps({name: declared_names(family(name)) for name in FAMILIES}, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    from harness.models.families import NAMES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 where names.json is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        stale = not NAMES.exists() or NAMES.read_text(encoding="utf-8") != text
        if stale:
            print(f"{NAMES} is stale: run `make docs`", file=sys.stderr)
        return int(stale)
    NAMES.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
