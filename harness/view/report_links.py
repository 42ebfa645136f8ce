"""report.md as the viewer shows it: markdown to HTML (raw HTML escaped), each table row linked to the viewer's page
for it. The links are the viewer's URLs, so they are made here, where they open, and report.md stays the file
`harness report` wrote, byte for byte, readable anywhere else.

A row's page: the task or group its first cell names (`name`, `name ‡`, `name · metric`), or what the benchmark's
`viewer_row(header, cells)` hook makes of a row of its own tables (MMNeedle's `M=10 N=2 K=1`, MMLongBench's category
and dataset rows, LoCoVQA's series): a group's page filtered on its axes across tasks. Rows under a model's heading
(`## model`) open that model's page; rows of the tables across models (and the summary) open the page without a
model (`group_pages.choose_model`): the one model that ran it, the two that did side by side, or with more each one's
number and every two side by side.
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

from markdown_it import MarkdownIt
from markdown_it.token import Token

from harness.outputs.report import task_index
from harness.view.catalog import Catalog
from harness.view.view_hooks_api import ViewerRow

MARKS = re.compile(r"(\s*[‡§†*])+$")


def linked_report(text: str, catalog: Catalog) -> str:
    """report.md's HTML with every table row the viewer has a page for linked to it."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(text)
    pages = RowPages(catalog)
    model: str | None = None
    header: list[str] = []
    previous: str | None = None  # the page of the row above
    position = 0
    while position < len(tokens):
        token = tokens[position]
        if token.type == "heading_open" and token.tag in ("h1", "h2"):
            title = tokens[position + 1].content.strip()
            model = title if title in catalog.models else None
        elif token.type == "thead_open":
            header = [t.content.strip() for t in _cells_until(tokens, position, "thead_close")]
            previous = None
        elif token.type == "tr_open" and header and _inside_body(tokens, position):
            cells = _cells_until(tokens, position, "tr_close")
            texts = [c.content.strip() for c in cells]
            if texts and not texts[0]:  # a row continuing the one above (another metric of its task)
                url, first = previous, next((c for c, t in zip(cells, texts, strict=True) if t), None)
            else:
                url, first = (pages.url(model, header, texts) if texts else None), (cells[0] if cells else None)
                previous = url
            if url and first is not None and first.children is not None:
                _link(first, url)
        position += 1
    return md.renderer.render(tokens, md.options, {})


def _link(cell: Token, url: str) -> None:
    """Make the cell's text a link to `url` (unless it holds one already)."""
    children = cell.children or []
    if not any(child.type == "link_open" for child in children):
        link = Token("link_open", "a", 1, attrs={"href": url, "class": "row-link"})
        cell.children = [link, *children, Token("link_close", "a", -1)]


def _cells_until(tokens: list[Token], start: int, end: str) -> list[Token]:
    cells = []
    for token in tokens[start:]:
        if token.type == end:
            break
        if token.type == "inline":
            cells.append(token)
    return cells


def _inside_body(tokens: list[Token], position: int) -> bool:
    for token in reversed(tokens[:position]):
        if token.type in ("tbody_open", "thead_open"):
            return token.type == "tbody_open"
    return False


class RowPages:
    """Which viewer page a table row opens (see the module's docstring)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.known = {n for data in catalog.models.values() for n in (*data.results, *data.groups)}
        self.groups = set(task_index(()).groups)
        seen: dict[int, ViewerRow] = {}  # each benchmark's declared `ViewHooks.viewer_row`, in the order first met
        for by_name in catalog.hooks.values():
            for hooks in by_name.values():
                if hooks is not None and callable(hooks.viewer_row):
                    seen.setdefault(id(hooks), hooks.viewer_row)
        self.viewer_rows = list(seen.values())

    def url(self, model: str | None, header: list[str], cells: list[str]) -> str | None:
        name = MARKS.sub("", cells[0].split(" · ")[0]).strip()
        filters: dict[str, str] = {}
        if name not in self.known:
            found = self._benchmark_row(header, cells)
            if found is None:
                return None
            name, filters = found
        if name not in self.known and name not in self.groups:
            return None
        params = {"model": model or "", "task": name, **{f"ax.{k}": v for k, v in filters.items()}}
        return "/samples?" + urlencode({k: v for k, v in params.items() if v})

    def _benchmark_row(self, header: list[str], cells: list[str]) -> tuple[str, dict[str, str]] | None:
        for viewer_row in self.viewer_rows:
            try:
                found = viewer_row(header, cells)
            except Exception:  # a benchmark's naming aid must not lose the report page
                continue
            if isinstance(found, tuple) and len(found) == 2 and isinstance(found[0], str):
                return found[0], {str(k): str(v) for k, v in dict(found[1]).items()}
        return None
