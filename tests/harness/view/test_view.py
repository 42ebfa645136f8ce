"""`harness view` without a browser: a journal's sample index (the latest record per sample, lines cut short or
foreign left out, the same by Arrow and line by line), its filters and sorts, which files a URL may name, and the
pages over a real run (escaped text, images only from the verified build, a moved build said, not crashed)."""

from __future__ import annotations

import html
import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.outputs.results.results import model_folder_name
from harness.run.cli import main
from harness.view.samples import sample_index
from harness.view.samples.safe_files import inside
from harness.view.samples.sample_index import build_index
from tests.support.results_runs import harness_run
from tests.support.view_app import unmarked, view_client

TASK = "mmneedle_m1_n2_k1_pos"
HOSTILE = "<script>window.pwned=1</script><img src=x onerror=window.pwned=2>"


def _record(doc_id: int, status: str = "ok", score: float | None = 0.0, **extra: object) -> dict[str, object]:
    record = {
        "type": "sample",
        "task": "t",
        "fingerprint": "f",
        "doc_id": doc_id,
        "sample_id": f"s{doc_id}",
        "response": f"answer {doc_id}",
        "token_count": 100 + doc_id,
        "status": status,
        "metrics": {"score": score, "by_cell": [["1,1", 1.0]]},
        "prompt": "<image>" + "x" * 500,
    }
    record.update(extra)
    return record


def _journal(path: Path, records: list[dict[str, object]], tail: bytes = b"") -> Path:
    lines = [json.dumps({"type": "header", "task": "t", "fingerprint": "f", "parts": {"a": {"b": 1}}})]
    path.write_bytes(("\n".join(lines + [json.dumps(r) for r in records]) + "\n").encode() + tail)
    return path


def test_the_index_keeps_each_samples_latest_record_by_arrow_and_line_by_line(tmp_path: Path) -> None:
    records = [
        _record(2, score=100.0),
        _record(0, score=0.0),
        _record(1, "error", None, error="timeout"),
        _record(3, score=40.0, truncation={"rule": "left", "images_dropped": 2}),
        _record(1, score=100.0),
    ]  # sample 1 again, answered on a rerun: this record counts
    clean = build_index(_journal(tmp_path / "clean.jsonl", records), "t")
    messy_path = _journal(
        tmp_path / "messy.jsonl",
        records[:2] + [{"type": "sample", "task": "other"}] + records[2:],
        tail=b'{"type": "sample", "task": "t", "doc_',
    )
    lines = messy_path.read_bytes().split(b"\n")
    messy_path.write_bytes(b"\n".join([*lines[:3], b"not JSON \xff", *lines[3:]]))  # Arrow refuses: line by line
    messy = build_index(messy_path, "t")
    for index in (clean, messy):
        assert index.sample_ids == ["s0", "s1", "s2", "s3"] and list(index.doc_ids) == [0, 1, 2, 3]
        assert index.statuses == ["ok", "ok", "ok", "ok"]
        assert list(index.metrics) == ["score"]  # the breakdown list is no column of the table
        assert list(index.metrics["score"]) == [0.0, 100.0, 100.0, 40.0]
        assert list(index.tokens) == [100, 101, 102, 103] and list(index.truncated) == [False, False, False, True]
        assert index.record(1)["response"] == "answer 1" and index.record(3)["truncation"]["images_dropped"] == 2
    assert (
        clean.skipped == 0 and messy.skipped == 2
    )  # the foreign and the broken line; the cut-short last is no line yet


def test_arrow_refusing_a_journal_falls_back_to_reading_line_by_line(tmp_path: Path, monkeypatch) -> None:
    path = _journal(tmp_path / "j.jsonl", [_record(i, score=float(i % 2)) for i in range(5)])
    by_arrow = build_index(path, "t")
    monkeypatch.setattr(sample_index, "columns_by_arrow", lambda *args: None)
    by_line = build_index(path, "t")
    assert by_line.sample_ids == by_arrow.sample_ids and by_line.statuses == by_arrow.statuses
    assert np.array_equal(by_line.metrics["score"], by_arrow.metrics["score"])
    assert np.array_equal(by_line.offsets, by_arrow.offsets)


def test_filters_and_sorts(tmp_path: Path) -> None:
    records = [
        _record(0, score=100.0),
        _record(1, score=20.0),
        _record(2, "over_length", None),
        _record(3, score=0.0, truncation={"rule": "left"}),
        _record(4, "empty", 0.0),
    ]
    index = build_index(_journal(tmp_path / "j.jsonl", records), "t")
    assert index.full_marks("score") == 100.0  # a 0-100 metric: full marks are 100
    assert list(index.select("right", "score")) == [0]
    assert list(index.select("wrong", "score")) == [1, 3, 4]  # scored below full marks, empty answers included
    assert list(index.select("over_length", "score")) == [2] and list(index.select("truncated", "score")) == [3]
    assert list(index.select("all", "score", low=10, high=50)) == [1]
    axes = {"cell": [("1,1",), ("1,2", "2,2"), (), ("2,2",), ("1,1",)]}
    assert list(index.select("all", "score", axes=axes, wanted={"cell": "2,2"})) == [1, 3]  # any of K needles
    rows = np.arange(len(index))
    assert list(index.order(rows, "score", True)) == [0, 1, 3, 4, 2]  # no value last, either way
    assert list(index.order(rows, "score", False)) == [3, 4, 1, 0, 2]
    assert list(index.order(rows, "cell", False, axes)) == [0, 4, 1, 3, 2]
    assert math.isnan(index.metrics["score"][2])


def test_a_url_names_only_files_inside_the_results_folder(tmp_path: Path) -> None:
    root = tmp_path / "results"
    (root / "model").mkdir(parents=True)
    (root / "figure.png").write_bytes(b"png")
    (root / "model" / "results_1.json").write_text("{}")
    (tmp_path / "outside.png").write_bytes(b"secret")
    (root / "out.png").symlink_to(tmp_path / "outside.png")
    (root / "in.png").symlink_to(root / "figure.png")
    (root / "linked").symlink_to(tmp_path)
    assert inside(root, "figure.png") == (root / "figure.png").resolve()
    assert inside(root, "in.png") == (root / "figure.png").resolve()  # a link that stays inside
    for path in (
        "out.png",
        "linked/outside.png",
        "../outside.png",
        "model/../../outside.png",
        "/etc/passwd",
        "//etc/passwd",
        "model/results_1.json",
        "missing.png",
        "model",
        "",
        "a\\..\\outside.png",
        "figure.png\x00.png",
        "./figure.png/",
    ):
        assert inside(root, path) is None, path


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("view_run")
    return harness_run(out, data_dir, "mmneedle_m1_n2_k1_pos", "constant", "--model_args", f"answer={HOSTILE}")


def test_pages_escape_untrusted_text_and_serve_only_the_prompts_images(run_dir: Path) -> None:
    client = view_client(run_dir)
    home = client.get("/")
    assert home.status_code == 200 and "mmneedle_m1_n2_k1_pos" in home.text
    assert "script-src 'self'" in home.headers["content-security-policy"]
    table = client.get("/samples", params={"model": "constant", "task": "mmneedle_m1_n2_k1_pos", "show": "wrong"})
    assert table.status_code == 200 and "12 of 12 samples" in table.text
    assert HOSTILE not in table.text and "&lt;script&gt;window.pwned=1&lt;/script&gt;" in table.text
    sample = client.get(
        "/sample", params={"model": "constant", "task": "mmneedle_m1_n2_k1_pos", "id": "m1_n2_k1-00000"}
    )
    assert sample.status_code == 200 and HOSTILE not in sample.text and 'id="inputs-match"' in sample.text
    (sha,) = set(re.findall(r'src="/image/([0-9a-f]{64})\?size=thumb"', sample.text))
    image = client.get(f"/image/{sha}")
    assert image.status_code == 200 and image.headers["content-type"] == "image/jpeg"
    assert client.get(f"/image/{sha}", params={"size": "thumb"}).status_code == 200
    assert client.get("/image/" + "0" * 64).status_code == 404  # a hash of no prompt shown
    assert (
        client.get("/sample", params={"model": "constant", "task": "mmneedle_m1_n2_k1_pos", "id": "nope"}).status_code
        == 404
    )


def test_a_build_moved_away_is_said_on_the_page(run_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "results"
    shutil.copytree(run_dir, copy)
    for path in copy.rglob("results_*.json"):
        results = json.loads(path.read_text())
        for entry in results["datasets"].values():
            entry["location"] = str(tmp_path / "gone" / "mmneedle")
        path.write_text(json.dumps(results))
    client = view_client(copy)
    table = client.get("/samples", params={"model": "constant", "task": "mmneedle_m1_n2_k1_pos"})
    assert table.status_code == 200 and 'id="data-problem"' in table.text and "12 of 12 samples" in table.text
    sample = client.get(
        "/sample", params={"model": "constant", "task": "mmneedle_m1_n2_k1_pos", "id": "m1_n2_k1-00000"}
    )
    assert sample.status_code == 200 and "not found" in sample.text and "/image/" not in sample.text


def test_the_command_says_what_is_wrong_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A folder that is not there, or a file, is one line with the way out (issue 76, item 6): the folder a run
    wrote, the closest folder beside it, a results file's own folder; `harness report` and `compare` say the same."""
    wrote = "give the folder a run wrote (its --output_path)"
    assert main(["view", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"harness: error: {tmp_path / 'missing'}: no such folder; {wrote}"
    ]
    (tmp_path / "results_a" / "random").mkdir(parents=True)  # a folder a run wrote (issue 89: no other is offered)
    (tmp_path / "results_a" / "random" / "results_2026-01-01T00-00-00.json").write_text("{}")
    (tmp_path / "results_x.json").write_text("{}")
    for command in (["view"], ["report"], ["compare"]):
        assert main([*command, str(tmp_path / "results_b")]) == 2
        said = f"{tmp_path / 'results_b'}: no such folder; {wrote}; did you mean {tmp_path / 'results_a'}?"
        assert capsys.readouterr().err.strip().splitlines() == [f"harness: error: {said}"]
        assert main([*command, str(tmp_path / "results_x.json")]) == 2
        said = f"{tmp_path / 'results_x.json'}: a file, not a results folder; {wrote}; this file's folder is {tmp_path}"
        assert capsys.readouterr().err.strip().splitlines() == [f"harness: error: {said}"]


def test_an_axis_value_reads_as_the_user_wrote_it() -> None:
    """A depth stored as float32 comes back as 0.20000000298023224; the filter shows and matches it as 0.2."""
    import numpy as np

    from harness.view.samples.sample_index import axis_members

    assert axis_members(float(np.float32(0.2))) == ("0.2",)
    assert axis_members(3.0) == ("3",) and axis_members([0.5, "text", None]) == ("0.5", "text")


def test_the_gold_shows_as_text_and_a_metric_list_as_rows() -> None:
    from harness.view.shown import gold_text, metric_rows

    assert gold_text('"Yes"') == "Yes"  # MMLongBench keeps its gold as JSON
    assert gold_text('["Paris", "City of Light"]') == "Paris\nCity of Light"
    assert gold_text('"[\\"harbour\\", \\"2019\\"]"') == "harbour\n2019"  # DocVQA's list: JSON text in JSON
    assert gold_text("1, 2, 3") == "1, 2, 3" and gold_text("42") == "42" and gold_text('{"a": 1}') == '{"a": 1}'
    assert gold_text(None) is None
    assert metric_rows([["1,2", 0.5], ["2,1", 1.0]]) == [("1,2", "0.5"), ("2,1", "1")]
    assert metric_rows([1, 2]) == [("numerator", "1"), ("denominator", "2")]
    assert metric_rows(0.25) is None and metric_rows([]) is None


def test_a_local_checkpoint_is_named_by_its_results_folder(
    data_dir: Path, tiny_llava: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 89: a run of `--model hf --model_args pretrained=/a/local/folder` was named by its path on every page
    (titles, the model lists, the tables, the links) and in report.md. It goes by its results folder's name, as its
    folder's links do, report.md and `harness compare` with it; the path shows once, under the model's heading, and
    still opens its pages."""
    results = harness_run(
        tmp_path / "results", data_dir, TASK, "hf", "--model_args", f"pretrained={tiny_llava},threads=1", "--limit", "2"
    )
    harness_run(results, data_dir, TASK, "random", "--limit", "2")
    folder = model_folder_name("hf", {"pretrained": str(tiny_llava)})
    assert (results / folder).is_dir()
    path = html.escape(str(tiny_llava))
    client = view_client(results)
    home = unmarked(client.get("/").text)
    assert f'<h2 id="model-1">{html.escape(folder)}</h2>' in home
    assert f'<p class="checkpoint">The checkpoint at <code>{path}</code></p>' in home
    assert f'<th class="model-column">{html.escape(folder)}</th>' in home
    assert home.count(path) == 2  # under its heading, and in its run's command
    samples = {"model": folder, "task": TASK, "vs": "random"}
    pairs = {"task": TASK, "a": folder, "b": "random"}
    for url, params in (("/samples", samples), ("/sample", {**samples, "id": "m1_n2_k1-00000"}), ("/pairs", pairs)):
        page = client.get(url, params=params)
        assert page.status_code == 200 and path not in page.text and html.escape(folder) in unmarked(page.text), url
    title = re.search(r"<title>(.*?)</title>", client.get("/samples", params=samples).text).group(1)
    assert title.startswith(f"{TASK} · {html.escape(folder)} beside random"), title
    for by in (folder, str(tiny_llava)):
        for url, params in (("/samples", {"model": by, "task": TASK}), ("/run", {"model": by, "run": "0"})):
            page = client.get(url, params=params)
            assert page.status_code == 200 and f"{html.escape(folder)} ›" in unmarked(page.text), (url, by)
    assert main(["report", str(results)]) == 0 and main(["compare", str(results), "--models", folder, "random"]) == 0
    capsys.readouterr()
    assert f"\n## {folder}\n" in (results / "report.md").read_text()
    assert f"A: **{folder}** in `{results}`; B: **random**" in (results / "compare.md").read_text()
