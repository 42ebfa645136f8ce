"""The offline fixture in V1.1's layout (`--source fixture:v1.1`): the release as the Hub holds it today, which V1.1's
download scripts fetch (`scripts/download_text_data.sh`, `download_image_data.sh` at 22b9f27): `0_mmlb_data.tar.gz`
and `1_vrag_image.tar.gz`, `2_vh_image.tar.gz`, `2_mm-niah_image.tar.gz`, `3_icl_image.tar.gz`, `4_summ_image.tar.gz`,
`5_docqa_image.tar.gz`, each extracting into `mmlb_data/` or `mmlb_image/`.

Its rows are the fixture's (`builders.mmlongbench.fixture`), and each VRAG file holds one more example whose image path
holds a double quote, as ViQuAE's real ones do: the rows V1.1's loader drops before it samples (`data.py:48-56` at
22b9f27), so a V1.1 build leaves it out and a paper build keeps it.
"""

from __future__ import annotations

import json
from pathlib import Path

from builders.mmlongbench.fixture import _image, _tar, fixture_files
from builders.mmlongbench.leaves import IMAGE_ARCHIVES, LENGTHS, TEXT_ARCHIVES
from builders.mmlongbench.release import IMAGE_DIR, TEXT_DIR

FIXTURE_V1_1_VERSION = "1"
QUOTED_IMAGE = 'vrag/{dataset}/entity_"quoted".jpg'


def _with_quoted_ids(texts: dict[str, bytes], images: dict[str, bytes]) -> None:
    """Each VRAG file gets the rows of one more id, copies of its first id's rows with the quoted image."""
    for length in LENGTHS:
        for dataset in ("infoseek", "viquae"):
            name = next(n for n in texts if n.startswith(f"vrag/{dataset}_K{LENGTHS[length] // 1024}_"))
            rows = [json.loads(line) for line in texts[name].decode().splitlines()]
            first = [r for r in rows if r["id"] == rows[0]["id"]]
            image = QUOTED_IMAGE.format(dataset=dataset)
            images.setdefault(image, _image(image, 112, 84, 901 + len(dataset), "JPEG"))
            extra = [{**r, "id": f"{dataset}_quoted", "image": image} for r in first]
            texts[name] = "".join(json.dumps(r) + "\n" for r in rows + extra).encode()


def v1_1_fixture_files() -> tuple[dict[str, bytes], dict[str, bytes]]:
    texts, images = fixture_files()
    _with_quoted_ids(texts, images)
    return texts, images


def write_v1_1_fixture(root: str | Path) -> Path:
    """Write the fixture in V1.1's layout into `root` (the Hub's archive names) and return `root`."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    texts, images = v1_1_fixture_files()
    _tar(root / TEXT_ARCHIVES[0], TEXT_DIR, texts)
    by_folder: dict[str, dict[str, bytes]] = {}
    for rel, data in images.items():
        by_folder.setdefault(rel.split("/")[0], {})[rel] = data
    for folder, files in by_folder.items():
        _tar(root / IMAGE_ARCHIVES[folder][0], IMAGE_DIR, files)
    return root
