"""The docs pages stay true without running what needs a GPU or the network: every relative link leads to a file,
and in the pages' command blocks every `harness --tasks` names tasks the index knows and every `builders build`
names a benchmark and configs it has (a renamed task or config fails here)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "tasks").glob("*/README.md"))
PAGES_IN_FLIGHT = {"integrity.md", "viewing.md", "scaling.md"}  # issues 30, 32, 34 write them


def commands(text: str) -> list[list[str]]:
    out = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip()
            if line.startswith(("harness ", "builders build ")):
                try:
                    out.append(shlex.split(line, comments=True))
                except ValueError:
                    continue
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_to_files(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" in link or link.startswith("mailto:"):
            continue
        target = (page.parent / link).resolve()
        assert target.exists() or Path(link).name in PAGES_IN_FLIGHT, f"{page.name}: {link}"


def test_the_commands_of_the_docs_name_known_tasks_and_configs() -> None:
    from builders.core.benchmark import load_benchmark, select_configs
    from harness.config.task_index import TaskIndex

    index = TaskIndex([])
    checked = 0
    for page in PAGES:
        for argv in commands(page.read_text(encoding="utf-8")):
            if argv[0] == "harness" and "--tasks" in argv and "--include_path" not in argv:  # (else another folder's)
                names = argv[argv.index("--tasks") + 1].split(",")
                if not all(re.fullmatch(r"[a-z0-9_.-]+", n) for n in names) or "list" in names:
                    continue  # a placeholder (NAME, {task}, a glob), not a name
                try:
                    index.select(names)
                except Exception as err:
                    raise AssertionError(f"{page.relative_to(ROOT)}: {' '.join(argv)}: {err}") from None
                checked += 1
            elif argv[:2] == ["builders", "build"] and "--configs" in argv and not argv[2].startswith("-"):
                benchmark = load_benchmark(argv[2])
                configs = argv[argv.index("--configs") + 1]
                if not re.fullmatch(r"[a-z0-9_,-]+", configs):
                    continue  # a placeholder
                try:
                    select_configs([configs], benchmark.configs(), getattr(benchmark, "accepts_config", None))
                except Exception as err:
                    raise AssertionError(f"{page.relative_to(ROOT)}: {' '.join(argv)}: {err}") from None
                checked += 1
    assert checked >= 20
