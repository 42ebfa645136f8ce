"""`harness view` over large journals (issue 64, "the viewer at a million rows"): a journal is indexed once, by one
streaming pass in blocks of whole lines, and a page reads only its own rows' lines. Real runs of the `random` and
`constant` baselines on MMNeedle's synthetic build, their journals of one task grown to 20,000 records by the
journal's own line writer; every other line of a journal is then overwritten (size and mtime kept, so the index
stands) and the pages show exactly what they showed before."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest

from harness.outputs.compare.paired_runs import paired_rows, paired_task, pick_runs
from harness.running.journal.journal_file import record_line
from harness.view.pairs import pair_indexes
from harness.view.samples import journal_columns, sample_index
from harness.view.samples.sample_index import build_index
from tests.support.results_runs import run_both_baselines
from tests.support.view_app import view_client

K1, K5 = "mmneedle_m1_n2_k1_pos", "mmneedle_m1_n2_k5_pos"
SAMPLES = 20_000


def _grow(journal: Path, samples: int) -> None:
    """The journal's records repeated under new sample ids (and cluster keys), to `samples` records."""
    lines = journal.read_text().splitlines()
    header, records = lines[0], [json.loads(line) for line in lines[1:]]
    with open(journal, "w", encoding="utf-8") as out:
        out.write(header + "\n")
        for i in range(samples):
            record = records[i % len(records)]
            cluster = [f"{key}-{i // len(records)}" for key in record.get("cluster") or []]
            out.write(record_line({**record, "sample_id": f"{record['sample_id']}-{i}", "cluster": cluster}) + "\n")


@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    out = run_both_baselines(tmp_path_factory.mktemp("view_index_reads"), data_dir, f"{K1},{K5}")
    for model in ("random", "constant"):
        _grow(out / model / f"journal_{K1}.jsonl", SAMPLES)
    return out


def _sample_of(link: str) -> str:
    return parse_qs(urlsplit(link).query)["id"][0]


def _overwrite_all_but(journal: Path, kept: set[str]) -> int:
    """Every line of `journal` but the header and the records of `kept` sample ids overwritten with bytes that are no
    JSON, each line its length; the file's size and mtime as they were. The number of lines overwritten."""
    before = journal.stat()
    lines = journal.read_bytes().split(b"\n")
    overwritten = 0
    for i, line in enumerate(lines[1:], 1):
        if line and json.loads(line)["sample_id"] not in kept:
            lines[i] = b"\xff" * len(line)
            overwritten += 1
    journal.write_bytes(b"\n".join(lines))
    os.utime(journal, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert journal.stat().st_size == before.st_size
    return overwritten


def test_a_page_reads_only_its_rows_of_a_20000_row_journal(grown: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(grown, results)
    client = view_client(results)
    table = {"model": "random", "task": K1, "sort": "sample", "page": "7"}
    pairs = {"task": K1, "a": "random", "b": "constant", "metric": "exact_acc"}
    pages = {
        "table": ("/samples", table),
        "pairs": ("/pairs", pairs),
        "group": ("/samples", {"model": "random", "task": "mmneedle"}),
    }
    before = {name: client.get(path, params=params) for name, (path, params) in pages.items()}
    assert all(page.status_code == 200 for page in before.values())
    assert f"of {SAMPLES + 12} samples" in before["group"].text  # both tasks' rows in the group's table
    links = [html.unescape(h) for h in re.findall(r'class="sample-link" href="([^"]+)"', before["table"].text)]
    shown = {_sample_of(link) for link in links}
    assert len(shown) == 50
    one = client.get(links[0])
    assert one.status_code == 200
    shown |= {
        _sample_of(html.unescape(h)) for h in re.findall(r'class="sample-link" href="([^"]+)"', before["group"].text)
    }  # type: ignore[union-attr]
    overwritten = _overwrite_all_but(results / "random" / f"journal_{K1}.jsonl", shown)
    assert overwritten > SAMPLES - 120
    for name, (path, params) in pages.items():
        assert client.get(path, params=params).text == before[name].text, name
    assert client.get(links[0]).text == one.text


def test_concurrent_requests_share_one_build_of_an_index(grown: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.view import viewer as viewer_module
    from harness.view.viewer import Viewer

    builds: list[str] = []
    real = viewer_module.build_index

    def counted(path: Path, task: str):  # the real build, counted
        builds.append(task)
        return real(path, task)

    monkeypatch.setattr(viewer_module, "build_index", counted)
    viewer = Viewer(grown)
    run = viewer.catalog.task_run("constant", K1)
    assert run is not None
    found: list[object] = []
    threads = [threading.Thread(target=lambda: found.append(viewer.index(run))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert builds == [K1] and len(found) == 4 and all(index is found[0] for index in found)
    assert len(found[0]) == SAMPLES  # type: ignore[arg-type]


def test_blocks_of_any_size_give_the_same_index(grown: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = (grown / "constant" / f"journal_{K1}.jsonl").read_bytes().split(b"\n")
    long_line = json.dumps({"type": "sample", "task": K1, "note": "x" * 9000}).encode()
    journal = tmp_path / "journal.jsonl"
    # a foreign line longer than the small blocks below, a line that is no JSON, and a last line cut short by a kill
    journal.write_bytes(b"\n".join([*source[:300], long_line, b"not JSON", *source[300:2000], b'{"type": "sam']))
    whole = build_index(journal, K1)
    monkeypatch.setattr(journal_columns, "BLOCK", 4096)
    small = build_index(journal, K1)
    monkeypatch.setattr(sample_index, "columns_by_arrow", lambda *args: None)
    by_line = build_index(journal, K1)
    for index in (small, by_line):
        assert index.sample_ids == whole.sample_ids and index.statuses == whole.statuses
        assert np.array_equal(index.offsets, whole.offsets) and np.array_equal(index.lengths, whole.lengths)
        assert np.array_equal(index.doc_ids, whole.doc_ids) and index.clusters == whole.clusters
        assert all(np.array_equal(index.metrics[m], whole.metrics[m], equal_nan=True) for m in whole.metrics)
        assert index.skipped == whole.skipped == 2  # the long foreign line and the line that is no JSON
    assert len(whole) == 1999 and whole.record(5)["sample_id"] == whole.sample_ids[5]


def test_the_pages_pairing_is_harness_compares(grown: Path) -> None:
    a, b = pick_runs([grown], ["random", "constant"])
    paired = paired_task(a, b, K1)
    expected = paired_rows(paired, "exact_acc")
    index_a = build_index(grown / "random" / f"journal_{K1}.jsonl", K1)
    index_b = build_index(grown / "constant" / f"journal_{K1}.jsonl", K1)
    found = pair_indexes(index_a, index_b, "exact_acc")
    assert len(expected) == SAMPLES and (found.a_only, found.b_only) == (len(paired.a_only), len(paired.b_only))
    assert [index_a.sample_ids[r] for r in found.rows.tolist()] == [row.sample_id for row in expected]
    assert found.values_a.tolist() == [row.a for row in expected]
    assert found.values_b.tolist() == [row.b for row in expected]
    assert [index_b.sample_ids[r] for r in found.partners.tolist()] == [row.sample_id for row in expected]


def test_a_cluster_keys_hash_is_the_same_wherever_its_column_starts() -> None:
    import pyarrow as pa

    from harness.view.samples.text_columns import key_hashes

    keys = ['mmneedle:{"image_sha256":"' + f"{i:064x}" + '"}' for i in range(1000)]
    whole = key_hashes(pa.array(["", "é", *keys], pa.string()))
    assert len(set(whole.tolist())) == len(keys) + 2  # no two of them collide
    assert key_hashes(pa.array(keys).slice(700)).tolist() == whole[702:].tolist()  # a slice: its own bytes alone
    assert [key_hashes(pa.array([key]))[0] for key in keys[:5]] == whole[2:7].tolist()  # exact to the last bit
