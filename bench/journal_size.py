#!/usr/bin/env python
"""Report: a journal's size per 1,000 MMLongBench 128K rows, today's (`--baseline`, a commit before the prompt store)
against this tree's, where every record holds the request as sent (issue 62 item 1: the text in the journal's prompt
store, `harness.running.journal.prompt_store`).

Builds the length-true fixture's 128K configs (`--source fixture:full`, one config per category) and runs the
`constant` baseline on them under each tree, with and without `--log_samples`: the baseline's record of what was sent
is the request's turns (its text as the rows give it, each image an `<image>` marker), as long as a backend's rendering
less the chat template. Sizes are of the files each run leaves: the journals, the prompt stores, the sample logs.

    .venv/bin/python bench/journal_size.py [--ids 4] [--baseline 4ece26f] [--write-results]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

from results_file import publish

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Journal size per 1,000 MMLongBench 128K rows: the request as sent in every record"
CONFIGS = ("vrag_infoseek_128k", "niah_mmniah_ret_text_128k", "icl_food101_128k", "summ_govreport_128k",
           "docvqa_slidevqa_128k")  # fmt: skip
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def build(work: Path, ids: int) -> Path:
    out = work / "build"
    command = [str(Path(sys.executable).parent / "builders"), "build", "mmlongbench", "--source", "fixture:full",
               "--fixture-ids", str(ids), "--configs", ",".join(CONFIGS), "--out", str(out), "--overwrite", "--quiet"]  # fmt: skip
    subprocess.run(command, check=True, env={**ENV, "PYTHONPATH": str(ROOT)}, capture_output=True)
    return out


def baseline_tree(work: Path, rev: str) -> Path:
    """The harness, builders and tasks of `rev`, as files (run with PYTHONPATH)."""
    tree = work / f"tree_{rev}"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "harness", "builders", "tasks"], check=True,
                             capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def run(tree: Path, data: Path, out: Path, log_samples: bool) -> dict[str, int]:
    tasks = ",".join(f"mmlongbench_{config}" for config in CONFIGS)
    command = [sys.executable, "-m", "harness.run.cli", "--model", "constant", "--model_args", "answer=x", "--tasks", tasks,
               "--data_dir", str(data), "--output_path", str(out), "--no_progress", *(["--log_samples"] * log_samples)]  # fmt: skip
    # run from the tree: `python -m` puts the working folder first on the path
    subprocess.run(command, check=True, env={**ENV, "PYTHONPATH": str(tree)}, capture_output=True, cwd=tree)
    sizes = {
        kind: sum(p.stat().st_size for p in out.rglob(f"{kind}_*.jsonl")) for kind in ("journal", "prompts", "samples")
    }
    rows = sum(len(p.read_text().splitlines()) - 1 for p in out.rglob("journal_*.jsonl"))
    records = [json.loads(line) for p in out.rglob("journal_*.jsonl") for line in p.read_text().splitlines()[1:]]
    texts = {r.get("prompt_sha256") or r.get("prompt") for r in records} - {None}
    found = {**sizes, "rows": rows, "texts": len(texts)}
    images = ("sent_images", "image_sha256", "image_sizes", "effective_image_sizes")
    found["image_fields"] = sum(len(json.dumps(r[k])) for r in records for k in images if k in r)
    if log_samples and tree == ROOT:  # what the texts are, whole: raw, and each compressed alone (no shared chunks)
        from harness.running.journal.prompt_store import PromptTexts

        stores = [PromptTexts.at(p) for p in out.rglob("prompts_*.jsonl")]
        whole = [(store.text(d) or "").encode() for store in stores for d in store.texts]
        found["raw"] = sum(map(len, whole))
        found["alone"] = sum(len(base64.b64encode(zlib.compress(t, 9))) for t in whole)
    return found


def table(found: dict[str, dict[str, int]]) -> str:
    lines = ["| run | rows | journal | prompt store | journal + store | sample log |", "|---|---:|---:|---:|---:|---:|"]
    for name, sizes in found.items():
        per = 1000 / sizes["rows"]
        mb = [sizes["journal"] * per / 1e6, sizes["prompts"] * per / 1e6, sizes["samples"] * per / 1e6]
        lines.append(
            f"| {name} | {sizes['rows']} | {mb[0]:.1f} MB | {mb[1]:.1f} MB | {mb[0] + mb[1]:.1f} MB | {mb[2]:.1f} MB |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", type=int, default=4, help="the fixture's ids per file (rows per config)")
    parser.add_argument("--baseline", default="4ece26f", help="the commit whose journals are today's")
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = build(work, args.ids)
        today = baseline_tree(work, args.baseline)
        found = {}
        for name, tree, logged in [(f"today ({args.baseline}), default", today, False),
                                   (f"today ({args.baseline}), --log_samples", today, True),
                                   ("this tree, default", ROOT, False), ("this tree, --log_samples", ROOT, True)]:  # fmt: skip
            found[name] = run(tree, data, work / name.replace(" ", "_").replace(",", ""), logged)
    command = f".venv/bin/python bench/journal_size.py --ids {args.ids} --baseline {args.baseline} --write-results"
    mine, logged = found["this tree, default"], found["this tree, --log_samples"]
    per = 1000 / logged["rows"] / 1e6
    text = (
        f"{SECTION}\n\n`{command}` (CPU only; the `constant` baseline on the length-true fixture's 128K configs, "
        f"{', '.join(CONFIGS)}, {args.ids} ids per file: {mine['rows']} rows, {mine['texts']} distinct texts). Sizes "
        "scaled to 1,000 rows. Today a default journal keeps no prompt (the viewer rebuilt every page from the "
        "build) and `--log_samples` copied each prompt whole into its record and again into the sample log; now "
        "every record names its text by `prompt_sha256` and the prompt store beside the journal keeps each text "
        "once, cut into content-defined chunks (rows sharing a context share them) and zlib-compressed; "
        "`--log_samples` only adds the sample log, exported from the records. The texts themselves are "
        f"{logged['raw'] * per:.1f} MB per 1,000 rows; each compressed alone (no chunk shared) "
        f"{logged['alone'] * per:.1f} MB. Of this tree's journal, {mine['image_fields'] * per:.1f} MB is the records' "
        "image lists (`sent_images`, with `image_sha256` and `image_sizes` beside it: a 128K row carries tens to "
        "hundreds of images).\n\n" + table(found) + "\n"
    )
    publish(SECTION, text, args.write_results)


if __name__ == "__main__":
    main()
