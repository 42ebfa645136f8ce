"""`Any` is counted and only goes down (issue 43 item 3): each one is a place mypy stops checking.

The count is the word `Any`, each occurrence, in the shared code (a benchmark's own builder and task folders are its
own: adding one spends none of the ceiling, issue 62 item 6), as `git grep -ow Any -- 'harness/*.py'
'builders/core/*.py' | wc -l` counts it: the annotations, their imports, and the word in a comment or string alike. `MOST_ANY` is a ratchet: the count may not pass it, and when a
change brings the count down, that change lowers `MOST_ANY` to the new count, so the next one cannot spend it again.
A parameter that is only inspected is `object`; parsed JSON is `contract.JsonValue`; a record of a known shape is
its TypedDict (the build manifest, the results file, the journal).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "builders/core")
MOST_ANY = 549
# A whole word as `git grep -w` has it: no ASCII letter, digit or underscore on either side.
ANY_WORD = re.compile(r"\bAny\b", re.ASCII)


def any_counts(root: Path) -> dict[str, int]:
    """Each module under `root`'s packages that holds the word `Any`, with how many times."""
    counts = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            found = len(ANY_WORD.findall(path.read_text(encoding="utf-8")))
            if found:
                counts[path.relative_to(root).as_posix()] = found
    return counts


def over_ceiling(counts: dict[str, int], most: int = MOST_ANY, named: int = 5) -> str | None:
    """What a count past `most` is told, naming the modules with the most; None at or under it."""
    total = sum(counts.values())
    if total <= most:
        return None
    heaviest = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:named]
    listed = ", ".join(f"{name} ({count})" for name, count in heaviest)
    return (
        f"`Any` occurs {total} times in {', '.join(PACKAGES)}, over the ceiling MOST_ANY = {most}; type what was added "
        f"(`object` for a value only inspected, contract.JsonValue, a TypedDict). Most in: {listed}. "
        "When a change lowers the count, lower MOST_ANY in tests/test_any_count.py to it."
    )


def test_any_stays_at_or_under_its_ceiling() -> None:
    problem = over_ceiling(any_counts(ROOT))
    assert problem is None, problem


def test_the_count_is_whole_words_of_each_module(tmp_path: Path) -> None:
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "typed.py").write_text("from typing import Any\nx: Any = y  # Any, AnyStr, Anything\n")
    (tmp_path / "harness" / "plain.py").write_text("x: object = 1  # any MyAny Any_\n")
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "notes.txt").write_text("Any\n")  # not Python
    assert any_counts(tmp_path) == {"harness/typed.py": 3}


def test_a_count_over_the_ceiling_names_it_and_the_heaviest_modules() -> None:
    counts = {"harness/a.py": 3, "builders/b.py": 7, "tasks/c.py": 1}
    assert over_ceiling(counts, most=11) is None
    problem = over_ceiling(counts, most=10, named=2)
    assert problem is not None
    assert "11 times" in problem and "MOST_ANY = 10" in problem
    assert "Most in: builders/b.py (7), harness/a.py (3)." in problem
    assert "tasks/c.py" not in problem
    assert "lower MOST_ANY" in problem
