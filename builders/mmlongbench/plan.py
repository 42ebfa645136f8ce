"""A config's rows as the official loader would feed them to a model: sampled, in evaluation order, assembled.

Reads the config's release file (two passes over a jsonl: ids first, then the sampled rows) and yields
`PlannedRow`s without touching an image; each error names the file, the line and the row id.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from builders.core.errors import BuildError
from builders.core.release_bounds import read_file
from builders.core.release_json import parse_json
from builders.core.release_paths import relative_name
from builders.mmlongbench.ablations import ABLATION_ASSEMBLERS
from builders.mmlongbench.bounds import MMLB_JSON_FILE
from builders.mmlongbench.leaves import Config
from builders.mmlongbench.prompts import (
    ASSEMBLERS,
    Assembled,
    RowFormatError,
    assemble_icl,
    check_placeholders,
    gold_json,
)
from builders.mmlongbench.release import read_lines
from builders.mmlongbench.rows import PlannedRow
from builders.mmlongbench.sampling import icl_draws, sampled_ids, shuffled_indices
from builders.mmlongbench.versions import assemblers, row_filter

SHUFFLED_LOADERS = frozenset({"govreport", "multilexsum", "docqa", "text_docqa"})  # Dataset.shuffle(seed).select(n)
# `load_vrag_occlusion` keeps one row per sampled id (pandas `drop_duplicates(subset=["id"], keep="first")`), and
# its gold passages are gone, so the row has no needle position.
FIRST_ROW_LOADERS = frozenset({"vrag_occlusion"})
LOADERS = {**ASSEMBLERS, **ABLATION_ASSEMBLERS}


def parse_row(line: str, where: str) -> dict[str, Any]:
    """A release jsonl line as its JSON object; anything else is a `BuildError` naming `where`."""
    row = parse_json(line, where)
    if not isinstance(row, dict):
        raise BuildError(f"{where}: expected a JSON object, got {type(row).__name__}")
    return row


def _id_of(row: Mapping[str, object], where: str) -> str | int:
    if "id" not in row:
        raise BuildError(f"{where}: missing field 'id'")
    value = row["id"]
    if not isinstance(value, (str, int)):
        raise BuildError(f"{where}: field 'id' should be a string or an integer, got {type(value).__name__}")
    return value


def plan_config(
    cfg: Config, path: Path, full: bool, claims: Mapping[str, list[str]] | None = None
) -> Iterator[PlannedRow]:
    """The config's rows in evaluation order (the official sample, or every row with `full`); a file without
    rows is an error, not an empty config."""
    n = None if full else cfg.leaf.sample
    if cfg.leaf.loader == "icl":
        rows = _plan_icl(cfg, path, n)
    elif cfg.leaf.loader in SHUFFLED_LOADERS:
        rows = _plan_shuffled(cfg, path, n, claims)
    else:
        rows = _plan_by_ids(cfg, path, n)
    planned = 0
    for row in rows:
        planned += 1
        yield row
    if not planned:
        raise BuildError(f"{cfg.file}: the release file holds no rows (config {cfg.name} reads it)")


def _where(cfg: Config, number: int, row_id: object = None) -> str:
    return f"{cfg.file}:{number}" + (f" (id {row_id!r})" if row_id is not None else "")


def _planned(
    cfg: Config, assembled: Assembled, where: str, row_id: str, source_id: str, eval_index: int, variant: int = -1
) -> PlannedRow:
    check_placeholders(assembled, where)
    for image in assembled.images:  # relative to mmlb_image/, which they must not leave
        relative_name(image, f"{where}: image")
    return PlannedRow(
        id=row_id,
        source_id=source_id,
        eval_index=eval_index,
        prompt=assembled.prompt,
        images=assembled.images,
        answer=gold_json(assembled.answer),
        answer_format=assembled.answer_format,
        variant=variant,
        extras=assembled.extras,
        where=where,
    )


def _plan_by_ids(cfg: Config, path: Path, n: int | None) -> Iterator[PlannedRow]:
    kept = row_filter(cfg)  # V1.1's VRAG rows without a `"` in their image path, before the sample
    ids = []
    for number, line in read_lines(path, cfg.file):
        row = parse_row(line, _where(cfg, number))
        if kept is None or kept(row):
            ids.append(_id_of(row, _where(cfg, number)))
    try:
        keep = sampled_ids(ids, n)
    except TypeError:
        raise BuildError(f"{cfg.file}: ids mix strings and integers; the official sampler sorts them") from None
    seen: dict[str | int, int] = {}
    assemble = assemblers(cfg, LOADERS)[cfg.leaf.loader]
    first_only = cfg.leaf.loader in FIRST_ROW_LOADERS
    eval_index = 0
    for number, line in read_lines(path, cfg.file):
        row = parse_row(line, _where(cfg, number))
        if kept is not None and not kept(row):
            continue
        row_id = row["id"]
        if keep is not None and row_id not in keep:
            continue
        variant = seen.get(row_id, 0)
        seen[row_id] = variant + 1
        if variant >= cfg.leaf.variants:
            raise BuildError(
                f"{_where(cfg, number, row_id)}: more than {cfg.leaf.variants} rows share this id "
                f"(the file name says {cfg.leaf.variants} {cfg.leaf.needle}s per example)"
            )
        if first_only and keep is not None and variant > 0:
            continue
        where = _where(cfg, number, row_id)
        yield _planned(
            cfg,
            assemble(row, where),
            where,
            f"{row_id}#{variant}",
            str(row_id),
            eval_index,
            -1 if first_only else variant,
        )
        eval_index += 1


def _plan_shuffled(
    cfg: Config, path: Path, n: int | None, claims: Mapping[str, list[str]] | None
) -> Iterator[PlannedRow]:
    count = sum(1 for _ in read_lines(path, cfg.file))
    order = shuffled_indices(count, n)
    position = {index: k for k, index in enumerate(order)}
    chosen: dict[int, tuple[int, str]] = {}
    for index, (number, line) in enumerate(read_lines(path, cfg.file)):
        if index in position:
            chosen[index] = (number, line)
    assemble = assemblers(cfg, LOADERS)[cfg.leaf.loader]
    for eval_index, index in enumerate(order):
        number, line = chosen[index]
        row = parse_row(line, _where(cfg, number))
        source_id = str(row.get("id", f"line{number}"))
        where = _where(cfg, number, row.get("id"))
        assembled = assemble(row, where)
        if claims is not None:
            if source_id not in claims:
                raise BuildError(f"{where}: no claims for this id in the release's claims file")
            assembled.extras["claims"] = claims[source_id]
        yield _planned(cfg, assembled, where, source_id, source_id, eval_index)


def check_exemplar_list(sets: list[Any], where: str) -> list[list[list[dict[str, Any]]]]:
    """An ICL domain's `exemplar_list` as the official loader reads it: sets of demonstration rounds, each a list
    of `{image, id}` exemplars (an image path and a class id). `where` is "file (domain 'x'"."""
    for s, exemplar_set in enumerate(sets):
        if not isinstance(exemplar_set, list):
            raise RowFormatError(
                f"{where}, exemplar_list[{s}]): expected a list of demonstration rounds, "
                f"got {json.dumps(exemplar_set)[:80]}"
            )
        for r, demo_round in enumerate(exemplar_set):
            if not isinstance(demo_round, list):
                raise RowFormatError(
                    f"{where}, exemplar_list[{s}][{r}]): expected a list of exemplars "
                    f"({{image, id}}), got {json.dumps(demo_round)[:80]}"
                )
            for k, item in enumerate(demo_round):
                if not (
                    isinstance(item, dict)
                    and isinstance(item.get("image"), str)
                    and isinstance(item.get("id"), str | int)
                    and not isinstance(item.get("id"), bool)
                ):
                    raise RowFormatError(
                        f"{where}, exemplar_list[{s}][{r}][{k}]): expected an exemplar "
                        f'{{"image": path, "id": class id}}, got {json.dumps(item)[:80]}'
                    )
    return sets


def _plan_icl(cfg: Config, path: Path, n: int | None) -> Iterator[PlannedRow]:
    data = parse_json(read_file(path, MMLB_JSON_FILE, cfg.file), cfg.file)
    if not isinstance(data, dict) or not data:
        raise BuildError(f"{cfg.file}: expected {{domain: {{exemplar_list, test_example}}}}")
    exemplar_sets, tests = {}, []
    for domain, block in data.items():
        if (
            not isinstance(block, dict)
            or not isinstance(block.get("exemplar_list"), list)
            or not isinstance(block.get("test_example"), list)
            or not block["exemplar_list"]
        ):
            raise BuildError(
                f"{cfg.file}: domain {domain!r} needs a non-empty 'exemplar_list' and a 'test_example' list"
            )
        exemplar_sets[domain] = check_exemplar_list(block["exemplar_list"], f"{cfg.file} (domain {domain!r}")
        tests += [(f"{domain}/{k}", domain, example) for k, example in enumerate(block["test_example"])]
    for eval_index, (source_id, domain, example, shots) in enumerate(icl_draws(tests, exemplar_sets, n, cfg.name)):
        where = f"{cfg.file} (domain {domain!r}, test_example {source_id.rsplit('/', 1)[1]})"
        if not isinstance(example, dict):
            raise RowFormatError(
                f"{where}: expected an object with 'image' and 'answer', got {json.dumps(example)[:80]}"
            )
        yield _planned(cfg, assemble_icl(example, shots, where), where, source_id, source_id, eval_index)
