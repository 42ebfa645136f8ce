"""A build's VLMEvalKit configs: each length's TSV read once, its rows spooled per asked config (memory flat in rows),
the images they name gathered, then read once per length.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from pathlib import Path

from builders.core import contract
from builders.core.errors import BuildError
from builders.core.release_bounds import check_file_size
from builders.mmlongbench.bounds import TSV_FILE
from builders.mmlongbench.leaves import Config
from builders.mmlongbench.release import read_lines
from builders.mmlongbench.rows import PlannedRow
from builders.mmlongbench.vlmevalkit.images import read_images
from builders.mmlongbench.vlmevalkit.layout import HUB_FOLDER, OfficialSets, label, tsv_name
from builders.mmlongbench.vlmevalkit.rows import SOURCE_OF_LEAF, leaf_of, planned_row
from builders.mmlongbench.vlmevalkit.tsv import read_records

OnImage = Callable[[str, str, bytes], None]  # (length, path, bytes)


def tsv_image_key(length: str, path: str) -> str:
    """How a build knows an image of VLMEvalKit's rows: by its length's archive and its path (the same path in the
    release, or in another length's archive, is another file)."""
    return f"{HUB_FOLDER}/{label(length)}/{path}"


class VlmevalkitConfigs:
    """The VLMEvalKit configs of one build: planned from the TSVs of `sets`, spooled into `work`."""

    def __init__(self, sets: OfficialSets, cfgs: list[Config], work: Path) -> None:
        self.sets, self.cfgs, self.work = sets, cfgs, work
        self.spools: dict[str, tuple[Path, int]] = {}  # config -> (spooled planned rows, row count)
        self.id_rows: dict[str, dict[str, int]] = {}  # config -> question_id -> rows of it in the config
        self.needed: dict[str, dict[str, str]] = {}  # length -> image path -> the first row naming it
        self.tsv_sha256: dict[str, str] = {}

    @property
    def lengths(self) -> list[str]:
        return list(dict.fromkeys(cfg.length for cfg in self.cfgs))

    def file(self, cfg: Config) -> str:
        return f"{HUB_FOLDER}/{tsv_name(cfg.length)}"

    def plan(self) -> None:
        for length in self.lengths:
            asked = {cfg.leaf.dataset: cfg for cfg in self.cfgs if cfg.length == length}
            path, name = self.sets.tsv(length), f"{HUB_FOLDER}/{tsv_name(length)}"
            check_file_size(path, TSV_FILE, name)  # before the hash reads it whole
            self.tsv_sha256[length] = contract.file_sha256(path)
            handles = {
                cfg.name: open(self.work / f"{cfg.name}.plan.jsonl", "w", encoding="utf-8") for cfg in asked.values()
            }
            counts = {cfg.name: 0 for cfg in asked.values()}
            try:
                for record in read_records(path, name):
                    where = f"{name}:{record.line} (index {record.fields['index'][:40]!r})"
                    cfg = asked.get(leaf_of(record, where))
                    if cfg is None:
                        continue
                    ids = self.id_rows.setdefault(cfg.name, {})
                    qid = record.fields["question_id"]
                    variant = ids.get(qid, 0)
                    ids[qid] = variant + 1
                    row = planned_row(cfg, record, where, counts[cfg.name], variant)
                    for image in row.images:
                        self.needed.setdefault(length, {}).setdefault(image, where)
                    handles[cfg.name].write(json.dumps(row.to_json(), ensure_ascii=False) + "\n")
                    counts[cfg.name] += 1
            finally:
                for handle in handles.values():
                    handle.close()
            for cfg in asked.values():
                if not counts[cfg.name]:
                    raise BuildError(
                        f"{name}: no row of {cfg.leaf.paper_name} (task/source_dataset "
                        f"{'/'.join(SOURCE_OF_LEAF[cfg.leaf.dataset])}) in this TSV; config {cfg.name} reads it"
                    )
                self.spools[cfg.name] = (self.work / f"{cfg.name}.plan.jsonl", counts[cfg.name])

    def rows(self, cfg: Config) -> Iterator[PlannedRow]:
        """The config's planned rows in TSV order, each a depth or permutation only where its id has all the leaf's."""
        spool, _ = self.spools[cfg.name]
        ids = self.id_rows.get(cfg.name, {})
        for _, line in read_lines(spool, total=None):
            plan = PlannedRow.from_json(json.loads(line))
            if not ids.get(plan.source_id) == cfg.leaf.variants > 1:
                plan.variant = -1
            yield plan

    def image_count(self) -> int:
        return sum(len(paths) for paths in self.needed.values())

    def read_images(self, on_image: OnImage, progress: Callable[[int], object]) -> None:
        for length, wanted in self.needed.items():
            missing = read_images(self.sets, length, wanted, functools.partial(on_image, length), progress)
            if missing:
                shown = sorted(missing)[:5]
                named = "; ".join(f"{p} (needed by {wanted[p]})" for p in shown)
                more = f" and {len(missing) - len(shown)} more" if len(missing) > len(shown) else ""
                raise BuildError(
                    f"{len(missing)} image(s) not found in {self.sets.where_images(length)}: {named}{more}"
                )
