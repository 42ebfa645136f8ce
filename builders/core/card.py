"""The dataset card: README.md with YAML front matter (configs, features, licence) and a body
rendered from a Jinja template in `dataset_cards/<benchmark>/`.

The YAML is produced by the libraries that read it back: `MetadataConfigs` writes `configs:`
(what `load_dataset(dir, config)` resolves) and `DatasetInfosDict` writes `dataset_info:`.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

import jinja2
from datasets import Features
from datasets.info import DatasetInfo, DatasetInfosDict
from datasets.splits import SplitDict, SplitInfo
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCardData


@dataclass(frozen=True)
class CardConfig:
    name: str
    features: Features
    num_rows: int
    num_bytes: int
    split: str = "test"


def front_matter(configs: list[CardConfig], **card_fields: Any) -> str:
    """The YAML between the README's `---` lines."""
    card_data = DatasetCardData(**card_fields)
    MetadataConfigs(
        {c.name: {"data_files": [{"split": c.split, "path": f"{c.name}/{c.split}-*"}]} for c in configs}
    ).to_dataset_card_data(card_data)
    infos = {}
    for c in configs:
        splits = SplitDict()
        splits.add(SplitInfo(name=c.split, num_bytes=c.num_bytes, num_examples=c.num_rows))
        infos[c.name] = DatasetInfo(
            config_name=c.name,
            features=c.features,
            splits=splits,
            download_size=c.num_bytes,
            dataset_size=c.num_bytes,
        )
    DatasetInfosDict(infos).to_dataset_card_data(card_data)
    return card_data.to_yaml()


def _template_text(name: str) -> str:
    return resources.files("dataset_cards").joinpath(*name.split("/")).read_text(encoding="utf-8")


DEFAULT_TEMPLATE = "_default.md.jinja"
# What every card's snippets need: the `datasets` that reads a build (pyproject's pin; a test holds them equal), and
# the placeholder for the repo id, which a build cannot know (`builders push` names it later).
DATASETS_REQUIREMENT = "datasets>=5.2"
REPO_PLACEHOLDER = "ORG/NAME"
# A build from a builder's own offline fixture: everything in it was drawn by the builder.
FIXTURE_CARD_LICENCE = {"license": "cc0-1.0"}
FIXTURE_LICENCE = (
    "Offline fixture: drawn by the builder, [CC0 1.0](https://creativecommons.org/publicdomain/zero/1.0/)."
)


def render_card(benchmark: str, yaml_text: str, **context: Any) -> str:
    """README.md text: `---`, the YAML, `---`, then `dataset_cards/<benchmark>/card.md.jinja` (which may
    `{% include %}` the shared parts beside it, e.g. `_image_table.md.jinja`); a benchmark without a
    template of its own gets the generic `_default.md.jinja`."""
    environment = jinja2.Environment(
        loader=jinja2.FunctionLoader(_template_text),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    environment.globals.update(datasets_requirement=DATASETS_REQUIREMENT, repo_placeholder=REPO_PLACEHOLDER)
    name = f"{benchmark}/card.md.jinja"
    if not resources.files("dataset_cards").joinpath(benchmark, "card.md.jinja").is_file():
        name = DEFAULT_TEMPLATE
    body = environment.get_template(name).render(**context)
    return f"---\n{yaml_text.rstrip()}\n---\n\n{body}"
