"""Where a report's numbers came from: per task, the data it ran on (source, build mode, rows, the build's
and the run's `--limit`, content hash) and why such numbers may not be comparable with the paper's.

Every benchmark's report gets this (`harness report` adds it to each model's part, and a benchmark's
figures carry `provenance_line`); it reads only what results files record under `datasets[task]`,
`config` and `n-samples[task]`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# The paper's own rows: what a build without `--full` or `--limit` holds.
PAPER_ROWS = "paper"
UNKNOWN = "not recorded"
NONE = "none"  # recorded, and there was none (a run without --limit)


def limit_text(run: Mapping[str, object]) -> str | None:
    """A run's `--limit` (a count, or a fraction below 1) as the user typed it; `NONE` for a run without one, None
    where the run config does not say (results of older versions)."""
    if "limit" not in run:
        return None
    limit = run["limit"]
    if limit is None:
        return NONE
    if isinstance(limit, float) and limit.is_integer():
        return str(int(limit))
    return str(limit)


@dataclass(frozen=True)
class DataOrigin:
    """What one task's results were computed on; tasks with equal origins share a line of the report."""

    location: str | None
    revision: str | None
    content_hash: str | None
    builder: str | None
    source_kind: str | None
    source_spec: str | None
    source_images: int | None
    mode: str | None
    rows: str | None
    build_limit: int | None
    run_limit: str | None  # `NONE`: the run had no --limit; None: not recorded
    caveats: tuple[tuple[str, str], ...] = ()  # the build's own (kind, text): `caveats` of its manifest
    unverified: str | None = None  # why the data could not be verified (read with --trust_unverified_data)
    # The task's metadata picked its rows from a build holding more (MMNeedle's paper subset of a --full build):
    # what it scored is what it evaluates by default, so the build's rows are no concern
    picked: bool = False

    @classmethod
    def of(cls, dataset: Mapping[str, Any], run: Mapping[str, Any]) -> DataOrigin:
        """From a results file's `datasets[task]` and its run `config`."""
        source = dataset.get("source") or {}
        builder = dataset.get("builder")
        if builder and dataset.get("builder_version"):
            builder = f"{builder} {dataset['builder_version']}"
        return cls(
            dataset.get("location"),
            dataset.get("revision"),
            dataset.get("content_hash"),
            builder,
            source.get("kind"),
            source.get("spec"),
            source.get("num_images"),
            dataset.get("mode"),
            dataset.get("rows"),
            dataset.get("limit"),
            limit_text(run),
            tuple((str(k), str(v)) for k, v in (dataset.get("caveats") or {}).items()),
            str(dataset.get("unverified_reason")) if dataset.get("verification") == "unverified" else None,
            bool(dataset.get("rows_left_out")),
        )

    @property
    def recorded(self) -> bool:
        """Whether the results say what the data was (a build's manifest); old results or data without a
        manifest do not."""
        return self.content_hash is not None or self.source_kind is not None

    @property
    def limited_run(self) -> bool:
        return self.run_limit not in (None, NONE)

    def build_limit_text(self) -> str:
        """The build's `--limit`; `NONE` where its manifest is recorded and holds none."""
        if self.build_limit is not None:
            return str(self.build_limit)
        return NONE if self.recorded else UNKNOWN

    def concerns(self) -> list[str]:
        """Why numbers on this data are not comparable with the paper's; empty when nothing says so."""
        unverified = (
            [f"unverified data ({self.unverified}), read with --trust_unverified_data"] if self.unverified else []
        )
        if not self.recorded:
            return [
                *unverified,
                "the data's origin is not recorded (no build manifest), so comparability cannot be checked",
            ]
        out = unverified
        if self.source_kind == "synthetic":
            out.append(f"synthetic images (source `{self.source_spec or 'synthetic'}`), not the paper's")
        if self.build_limit is not None:
            out.append(f"a build capped by `--limit {self.build_limit}`")
        if self.rows is not None and self.rows != PAPER_ROWS and not self.picked:
            out.append(f"build rows `{self.rows}`, not the subset the paper evaluated")
        if self.limited_run:
            out.append(f"a run with `--limit {self.run_limit}`, which evaluates only the first samples of each task")
        said = {"synthetic": self.source_kind == "synthetic", "limited": self.build_limit is not None}
        out += [text for kind, text in self.caveats if not said.get(kind)]  # what only the build itself knew
        return out

    def short(self) -> str:
        """One phrase for a figure's caption."""
        if not self.recorded:
            return "unverified data, origin not recorded" if self.unverified else "data origin not recorded"
        parts = ["unverified"] if self.unverified else []
        parts.append(f"{self.source_kind} source" if self.source_kind else "source not recorded")
        if self.mode:
            parts.append(f"{self.mode} build")
        if self.build_limit is not None:
            parts.append(f"build --limit {self.build_limit}")
        if self.rows is not None and self.rows != PAPER_ROWS:
            parts.append(f"rows {self.rows}")
        if self.limited_run:
            parts.append(f"run --limit {self.run_limit}")
        if self.content_hash:
            parts.append(self.content_hash[:19])  # "sha256:" and 12 hex digits
        return ", ".join(parts)


def _cell(value: object) -> str:
    return UNKNOWN if value is None else str(value)


def _data_cell(origin: DataOrigin) -> str:
    where = (
        f"`{origin.location}`" + (f" @ `{origin.revision}`" if origin.revision else "") if origin.location else UNKNOWN
    )
    return where + (f" ({origin.builder})" if origin.builder else "") + (" **unverified**" if origin.unverified else "")


def _source_cell(origin: DataOrigin) -> str:
    if origin.source_kind is None:
        return UNKNOWN
    images = f", {origin.source_images:,} images" if origin.source_images else ""
    return f"{origin.source_kind} (`{origin.source_spec}`{images})"


@dataclass
class TaskData:
    """One task's origin and row counts."""

    task: str
    origin: DataOrigin
    config_rows: int | None  # rows of the build config the task reads (positives and negatives, say)
    rows: int | None  # the task's samples before the run's --limit
    evaluated: int | None  # the samples the run evaluated
    config_sha256: str | None  # the build config's content hash
    left_out: Mapping[str, Any] | None = None  # `rows_left_out`: scored, held, all_with


def _by_origin(tasks: Iterable[TaskData]) -> dict[DataOrigin, list[TaskData]]:
    groups: dict[DataOrigin, list[TaskData]] = {}
    for entry in tasks:
        groups.setdefault(entry.origin, []).append(entry)
    return groups


def _sum(values: Iterable[int | None]) -> str:
    listed = list(values)
    known = [v for v in listed if v is not None]
    return UNKNOWN if len(known) < len(listed) else f"{sum(known):,}"


def comparability_warning(tasks: list[TaskData]) -> list[str]:
    """A markdown warning naming every reason these tasks' numbers are not comparable with the paper's."""
    reasons: dict[str, int] = {}
    for entry in tasks:
        for concern in entry.origin.concerns():
            reasons[concern] = reasons.get(concern, 0) + 1
    if not reasons:
        return []
    lines = ["> **Not comparable with the paper.** These numbers come from:"]
    lines += [f"> - {reason} ({count} of {len(tasks)} tasks)" for reason, count in reasons.items()]
    lines += [">", "> Such a run checks the pipeline; compare with published numbers only on the paper's own data.", ""]
    return lines


def provenance_section(tasks: list[TaskData]) -> list[str]:
    """Markdown: the warning, one line per data origin, then each task's row counts (collapsed)."""
    if not tasks:
        return []
    groups = _by_origin(tasks)
    labels = {origin: f"D{i}" for i, origin in enumerate(groups, start=1)}
    lines = [
        "### Data",
        "",
        *comparability_warning(tasks),
        "| | data | source | mode | rows | build --limit | run --limit | tasks | samples evaluated | content hash |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for origin, entries in groups.items():
        lines.append(
            " | ".join(
                [
                    f"| {labels[origin]}",
                    _data_cell(origin),
                    _source_cell(origin),
                    _cell(origin.mode),
                    _cell(origin.rows),
                    origin.build_limit_text(),
                    _cell(origin.run_limit),
                    str(len(entries)),
                    f"{_sum(e.evaluated for e in entries)} of {_sum(e.rows for e in entries)}",
                    f"`{origin.content_hash}`" if origin.content_hash else UNKNOWN,
                ]
            )
            + " |"
        )
    lines += [
        "",
        "<details><summary>Each task's data and row counts</summary>",
        "",
        "| task | data | rows in build config | task rows | evaluated | config content sha256 |",
        "|---|---|---|---|---|---|",
    ]
    for entry in tasks:
        lines.append(
            f"| {entry.task} | {labels[entry.origin]} | {_cell(entry.config_rows)} | {_cell(entry.rows)} | "
            f"{_cell(entry.evaluated)} | {_cell(entry.config_sha256)} |"
        )
    return [*lines, "", "</details>", "", *_left_out_note(tasks)]


def _left_out_note(tasks: list[TaskData]) -> list[str]:
    """Markdown: the tasks that scored fewer rows than the build holds for them, and how to score them all."""
    left = [entry for entry in tasks if entry.left_out]
    if not left:
        return []
    scored = _sum(e.left_out.get("scored") for e in left if e.left_out)
    held = _sum(e.left_out.get("held") for e in left if e.left_out)
    ways = ", ".join(dict.fromkeys(f"`{e.left_out.get('all_with')}`" for e in left if e.left_out))
    return [
        f"> **Fewer rows than the build holds.** {len(left)} of {len(tasks)} tasks scored {scored} of the {held} rows "
        f"the build holds for them, as the tasks' metadata picks (the default); {ways} scores all of them.",
        "",
    ]


def provenance_line(tasks: list[TaskData]) -> str:
    """One line for a figure: what its data was and, if so, that it is not comparable with the paper."""
    origins = list(_by_origin(tasks))
    if not origins:
        return "Data: not recorded."
    text = "Data: " + "; ".join(origin.short() for origin in origins[:2])
    if len(origins) > 2:
        text += f"; and {len(origins) - 2} more (see the report)"
    if any(origin.concerns() for origin in origins):
        text += ". NOT comparable with the paper's numbers"
    return text + "."


def data_caption(parts: Iterable[Any]) -> str:
    """`provenance_line` over several models' results (each a `harness.outputs.results.model_results.ModelResults`, or anything with
    `data() -> list[TaskData]`): the caption of a figure that draws them all."""
    return provenance_line([entry for part in parts for entry in part.data()])
