"""A run as the harness left it before issue 99 changed how a run records its data, made from one the harness leaves
now: the rule of that version (04180133, the parent of cc902fd1) written again here. It recorded a verified build's
data as the manifest's `content_sha256` of the config (a journal header's `task.dataset`, the results' `fingerprint`
and `config.content_sha256`), taken from the manifest; the header's fingerprint digests the parts with it, and every
record and the results' `task_hashes` carry that fingerprint. Nothing else of a journal or results file changed.

Held to that version's own output: `harness --tasks mmneedle_m1_n2_k1_pos --model constant --model_args answer=-1
--limit 2` run by 04180133 (a `git worktree` of it) and by this version on the synthetic MMNeedle build of
`harness_fixtures.data_dir`, this version's journal made earlier here is that version's, header and records alike
(their order aside), and its results' `datasets` and `task_hashes` are that version's.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.running.journal.journal_file import fingerprint, journal_name


def written_before_issue_99(model_folder: Path, task: str, build: Path, config: str) -> str:
    """The journal of `task` in `model_folder` (and every results file there) rewritten as the version before issue
    99 wrote them on the build `build` (its folder) of `config`; the data fingerprint it recorded."""
    manifest = json.loads((build / "build_manifest.json").read_text())
    recorded = manifest["configs"][config]["content_sha256"]
    journal = model_folder / journal_name(task)
    header, *records = (json.loads(line) for line in journal.read_text().splitlines())
    header["parts"]["task"]["dataset"] = recorded
    header["fingerprint"] = fingerprint(header["parts"])
    lines = [header, *({**record, "fingerprint": header["fingerprint"]} for record in records)]
    journal.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    for path in model_folder.glob("results_*.json"):
        results = json.loads(path.read_text())
        dataset = results["datasets"][task]
        dataset["fingerprint"] = dataset["config"]["content_sha256"] = recorded
        results["task_hashes"][task] = header["fingerprint"]
        path.write_text(json.dumps(results, indent=2))
    return recorded
