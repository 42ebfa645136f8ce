"""MM-NIAH's configs: the official tasks (`shells/data/mm_niah.json`), one per needle task, needle kind and split.

The release's six tasks (retrieval, counting, reasoning; text or image needles) are each published as a
validation and a test annotation file, `mm_niah_{split}/annotations/{task}-{needle}.jsonl`; the official task
name is `{task}-{needle}-{split}` (e.g. `retrieval-text-val`), the config `{task}_{needle}_{split}`.
"""

from __future__ import annotations

from dataclasses import dataclass

TASKS = ("retrieval", "counting", "reasoning")
NEEDLES = ("text", "image")
SPLITS = ("val", "test")


@dataclass(frozen=True)
class Config:
    task: str  # retrieval | counting | reasoning
    needle: str  # text | image
    split: str  # val | test

    @property
    def name(self) -> str:
        return f"{self.task}_{self.needle}_{self.split}"

    @property
    def official_name(self) -> str:
        return f"{self.task}-{self.needle}-{self.split}"

    @property
    def folder(self) -> str:
        """The split's folder of the release (`shells/data/mm_niah.json`'s `root`, less `/images`)."""
        return f"mm_niah_{self.split}"

    @property
    def annotation(self) -> str:
        return f"{self.folder}/annotations/{self.task}-{self.needle}.jsonl"


CONFIGS = {cfg.name: cfg for cfg in (Config(t, n, s) for s in SPLITS for t in TASKS for n in NEEDLES)}
