"""lm-eval's own tools read our output: its file-name helpers find our results and sample logs, its
`make_table` prints our results with no bookkeeping mistaken for a metric, and the sample logs load as
lm-eval's do (`datasets.load_dataset("json", ...)`)."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest
from lm_eval.utils import (
    get_file_datetime,
    get_file_task_name,
    get_latest_filename,
    get_results_filenames,
    get_sample_results_filenames,
    make_table,
)

from harness.running.journal.sample_log import read_sample_log
from tests.support.hf_runs import hf_run
from tests.support.run_setups import checkpoint_folder

TASKS = ["mmneedle_m1_n2_k1_pos", "mmneedle_m10_n1_k2_pos"]


@pytest.mark.slow
def test_lm_eval_reads_our_results_and_sample_logs(tmp_path: Path, data_dir: Path, tiny_llava: Path, harness) -> None:
    hf = hf_run(",".join(TASKS), data_dir, checkpoint=tiny_llava)
    run = harness(*hf, "--limit", "3", "--gen_kwargs", "max_gen_toks=4", "--output_path", tmp_path, "--log_samples")
    assert run.code == 0, run.err
    folder = tmp_path / checkpoint_folder(tiny_llava)
    files = [str(p) for p in sorted(folder.iterdir())]
    (results_file,) = get_results_filenames(files)
    samples = get_sample_results_filenames(files)  # our journals are not taken for lm-eval's sample logs
    assert sorted(get_file_task_name(Path(f).name) for f in samples) == sorted(TASKS)
    assert {get_file_datetime(Path(f).name) for f in samples} == {get_file_datetime(Path(results_file).name)[:-5]}
    assert get_latest_filename(samples) in samples

    results = json.loads(Path(results_file).read_text())
    assert results["model_name"] == str(tiny_llava) and results["model_name_sanitized"] == folder.name
    assert (
        results["chat_template"].startswith("{% for message in messages %}") and len(results["chat_template_sha"]) == 64
    )
    table = make_table(results)
    metrics = {line.split("|")[5].strip() for line in table.splitlines()[2:] if line.count("|") > 5}
    assert {"existence_acc", "exact_acc", "format_valid_rate"} <= metrics
    assert not {m for m in metrics if m.startswith("n_") or m in ("sample_len", "aggregation")}

    for path in samples:
        assert len(read_sample_log(Path(path))) == 3  # each line as `SampleLogLine` declares it
        rows = datasets.load_dataset("json", data_files=path, split="train", cache_dir=str(tmp_path / "json_cache"))
        assert rows.num_rows == 3 and rows[0]["filter"] == "none"
        first = rows[0]
        assert first["arguments"]["gen_args_0"]["arg_0"].count("<image>") == len(first["image_sha256"])
        assert first["resps"] == [[first["filtered_resps"][0]]] and first["status"] == "ok"
        assert "exact_acc" in first["metrics"] and isinstance(first["exact_acc"], float)
        assert json.loads(first["exact_acc_by_cell"])  # breakdowns as JSON text: one type per field
