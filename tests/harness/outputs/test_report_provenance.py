"""`report.md` opens with provenance: per model and run, the command, backend and alias, model arguments
(redacted), generation settings, seed, --limit, commit and package versions, date, and each build read with its
source and content hash; a fixture build's source is named in the data table and the figures' captions."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from builders.core.contract import read_manifest
from tests.support.report_runs import evaluate, svg_texts
from tests.support.report_runs import report_text as _report

TASKS = "mmneedle_m1_n2_k1_pos,mmneedle_m1_n2_k1_neg"


def _run_block(text: str, model: str) -> str:
    """One model's provenance (from its heading in the opening to the next model's or the end of the opening)."""
    opening = text[text.index("## Provenance\n") :]
    opening = opening[: opening.find("\n## ", 1)]
    start = opening.index(f"### Runs of {model}\n")
    end = opening.find("\n### ", start + 1)
    return opening[start:] if end < 0 else opening[start:end]


@pytest.mark.slow  # two runs and a report
def test_the_report_opens_with_each_runs_provenance(tmp_path: Path, data_dir: Path, harness) -> None:
    out = tmp_path / "results"
    random = evaluate(harness, out, data_dir, "random", "--gen_kwargs", "temperature=0.5", tasks=TASKS)
    constant = evaluate(
        harness, out, data_dir, "constant", "--model_args", "answer=-1", "--limit", "5", "--seed", "7", tasks=TASKS
    )
    text = _report(harness, out)
    # The warning and one screen of numbers come first, then the runs' provenance, then the tables and each model.
    assert text.index("> **Warning") < text.index("## Summary\n") < text.index("## Provenance\n")
    assert text.index("## Provenance\n") < min(text.index(heading) for heading in ("## Across models", "## random\n"))
    manifest = read_manifest(data_dir / "mmneedle")

    for model, results in (("random", random), ("constant", constant)):
        block = _run_block(text, model)
        (path,) = sorted((out / model).glob("results_*.json"))
        when = datetime.fromtimestamp(results["date"], UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        settings = json.dumps(results["configs"]["mmneedle_m1_n2_k1_pos"]["generation_settings"], sort_keys=True)
        packages = ", ".join(f"{name} {version}" for name, version in results["package_versions"].items())
        for expected in (
            f"#### Run 1 of 1: `{path.name}`",
            f"- **date**: {when}",
            f"- **command** (redacted): `{' '.join(results['config']['argv'])}`",
            f"- **backend**: `{model}`; **alias**: `none`",
            f"  - `{settings}`: 2 task(s): mmneedle_m1_n2_k1_neg, mmneedle_m1_n2_k1_pos",
            f"- **code**: commit `{results['git_hash']}`; packages: {packages}",
            f"  - `{data_dir / 'mmneedle'}`: builder builders.mmneedle {manifest['builder_version']}; "
            f"source synthetic (`synthetic`); build --limit 12; content hash `{manifest['content_hash']}`; "
            "verified; 2 task(s): mmneedle_m1_n2_k1_neg, mmneedle_m1_n2_k1_pos",
        ):
            assert expected in block, (expected, block)
    random_block, constant_block = _run_block(text, "random"), _run_block(text, "constant")
    assert '- **seed**: 0; **--gen_kwargs**: `{"temperature": 0.5}`; **--limit**: none;' in random_block
    assert '"seed": 0, "temperature": 0.5, "top_p"' in random_block  # the task's settings, --gen_kwargs applied
    assert "- **seed**: 7; **--gen_kwargs**: `none`; **--limit**: 5;" in constant_block
    assert '- **model arguments** (redacted): `{"answer": "-1"}`' in constant_block
    # The data table says "none" for a run without --limit, not "not recorded".
    random_part = text[text.index("## random\n") :]
    assert "| regenerate | paper | 12 | none | 2 | 24 of 24 |" in random_part


def test_an_older_results_file_with_a_secret_is_redacted_in_the_opening(
    tmp_path: Path, data_dir: Path, harness
) -> None:
    out = tmp_path / "results"
    evaluate(harness, out, data_dir, "constant", "--model_args", "answer=-1", tasks=TASKS)
    (path,) = (out / "constant").glob("results_*.json")
    results = json.loads(path.read_text())  # as a version that did not redact would have written it
    secret = "sk-provenance-0123456789"
    results["config"]["model_args"]["api_key"] = secret
    results["config"]["argv"] += ["--model_args", f"answer=-1,api_key={secret}"]
    results["config"]["system_note"] = {"hf_token": secret}  # a field this version does not know
    results["config"]["run_file"] = {"path": "/runs/run.yaml", "contents": {"model_args": {"api_key": secret}}}
    path.write_text(json.dumps(results))
    text = _report(harness, out)
    assert secret not in text
    block = _run_block(text, "constant")
    assert '"api_key": "<redacted>"' in block and "api_key=<redacted>" in block
    assert '- **other run settings**: `{"system_note": {"hf_token": "<redacted>"}}`' in block
    # The --config file the command named, beside the command (harness.run.run_file)
    assert '- **run file** `/runs/run.yaml` (redacted): `{"model_args": {"api_key": "<redacted>"}}`' in block


@pytest.fixture(scope="module")
def mmlb_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from builders.mmlongbench.build import build_mmlongbench

    root = tmp_path_factory.mktemp("mmlb")
    build_mmlongbench(source="fixture", out_dir=root, configs=["vrag_infoseek_8k", "vrag_viquae_8k"])
    return root


@pytest.mark.slow  # a run and a report with figures
def test_a_fixture_build_names_its_source_in_the_table_and_the_figure(tmp_path: Path, mmlb_data: Path, harness) -> None:
    out = tmp_path / "results"
    evaluate(harness, out, mmlb_data, "random", tasks="mmlongbench_vrag_8k")
    text = _report(harness, out)
    manifest = read_manifest(mmlb_data / "mmlongbench")
    spec = manifest["request"]["source"]
    assert spec.startswith("fixture-v")
    assert f"| fixture (`{spec}`) | not recorded | paper | none | none | 2 |" in text
    assert f"source fixture (`{spec}`); build --limit none;" in _run_block(text, "random")
    assert "source: not recorded" not in text
    figure = " ".join(svg_texts(out / "mmlongbench_length_random.svg"))
    assert f"Data: fixture source, {manifest['content_hash'][:19]}. NOT comparable" in figure  # was "unknown source"
