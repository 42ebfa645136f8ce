"""`harness view` over a results folder someone sent (issue 41): it imports no task code the results name, opens no
file through a link leading out of the folder, answers only its own Host names, never blocks on a FIFO, answers odd
query numbers and numbers past Python's digit limit with a page (never a 500), and stops in one line."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.view.app import served_hosts, split_host
from tests.support.results_runs import harness_run, model_folder, planted_task_code, record_include_path, results_copy
from tests.support.view_app import view_client

TASK = "mmneedle_m1_n2_k1_pos"
BASE = "http://127.0.0.1:8765"
SECRET = "not-for-the-viewer-7f3a"
BIG = "9" * 5000  # past Python's 4,300-digit limit for int(str)


@pytest.fixture(scope="module")
def needle_run(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("untrusted_run")
    return harness_run(out, data_dir, TASK, "constant", "--model_args", "answer=GUESS")


@pytest.fixture
def results(needle_run: Path, tmp_path: Path) -> Path:
    """A copy of the run to plant things in."""
    return results_copy(needle_run, tmp_path)


def _sample_id(model_dir: Path) -> str:
    journal = model_dir / f"journal_{TASK}.jsonl"
    return next(r["sample_id"] for r in map(json.loads, journal.read_text().splitlines()) if r["type"] == "sample")


def test_task_code_a_results_file_names_is_neither_indexed_nor_imported(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path
) -> None:
    """The run used --include_path; the folder it names (a copy, never imported in this process) now holds a
    module that leaves a mark when imported, as its task's `process_results` and its report hook."""
    argv = ["--model_args", "answer=red", "--include_path", str(toy_tasks)]
    out = harness_run(tmp_path / "results", toy_dir, "toy_colors", "constant", *argv)
    mark = tmp_path / "imported"
    planted = planted_task_code(toy_tasks, tmp_path / "their_tasks", mark, "Theirs")
    record_include_path(out, planted)

    client = view_client(out)
    home = client.get("/")
    assert home.status_code == 200 and 'id="not-loaded"' in home.text and str(planted) in home.text
    table = client.get("/samples", params={"model": "constant", "task": "toy_colors"})
    assert table.status_code == 200 and "not among the installed tasks" in table.text
    sample_id = re.search(r"id=([^\"&]+)\"", table.text.split('id="samples"')[1]).group(1)  # type: ignore[union-attr]
    assert client.get("/sample", params={"model": "constant", "task": "toy_colors", "id": sample_id}).status_code == 200
    assert not mark.exists()


def test_a_link_leading_out_of_the_folder_is_never_opened(results: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    model_dir = model_folder(results)
    sample_id = _sample_id(model_dir)
    # Outside: a report, a results file of another model, a journal and a sample log, each holding the secret.
    (outside / "report.md").write_text(f"# {SECRET}\n")
    (results_file,) = model_dir.glob("results_*.json")
    theirs = json.loads(results_file.read_text())
    theirs["config"]["model_name"] = SECRET
    (outside / "results_0.json").write_text(json.dumps(theirs))
    journal = model_dir / f"journal_{TASK}.jsonl"
    (outside / "journal.jsonl").write_text(journal.read_text().replace("GUESS", SECRET))
    log = {"doc_id": 0, "arguments": {"gen_args_0": {"arg_0": SECRET}}, "target": SECRET, "doc": {}}
    (outside / "samples.jsonl").write_text(json.dumps(log) + "\n")
    # Inside: each a link to them.
    (results / "report.md").symlink_to(outside / "report.md")
    (model_dir / "results_0.json").symlink_to(outside / "results_0.json")
    journal.unlink()
    journal.symlink_to(outside / "journal.jsonl")
    (model_dir / f"samples_{TASK}_0.jsonl").symlink_to(outside / "samples.jsonl")
    for path in results.rglob("results_*.json"):  # the build gone: a prompt could only come from the sample log
        run = json.loads(path.read_text())
        run["datasets"][TASK]["location"] = str(tmp_path / "gone")
        path.write_text(json.dumps(run))

    client = view_client(results)
    home = client.get("/")
    assert home.status_code == 200 and 'id="left-out"' in home.text and "results_0.json" in home.text
    table = client.get("/samples", params={"model": "constant", "task": TASK})
    assert table.status_code == 200 and 'id="journal-problem"' in table.text
    pages = [
        home,
        table,
        client.get("/report/"),
        client.get("/report/report.md"),
        client.get("/sample", params={"model": "constant", "task": TASK, "id": sample_id}),
        client.get("/samples", params={"model": SECRET, "task": TASK}),
    ]
    assert [page.status_code for page in pages[2:]] == [404, 404, 404, 404]
    assert not any(SECRET in page.text for page in pages)


def test_only_the_host_names_the_server_was_started_for_are_answered(results: Path) -> None:
    client = view_client(results)
    for host in ("127.0.0.1:8765", "localhost:8765", "LOCALHOST:8765", "[::1]:8765"):
        assert client.get("/", headers={"Host": host}).status_code == 200, host
    for host in (
        "attacker.example",
        "attacker.example:8765",
        "127.0.0.1",  # port 80
        "127.0.0.1:8766",
        "127.0.0.1:8765.attacker.example",
        "localhost.attacker.example:8765",
        "127.0.0.1:8765@attacker.example",
        "",
        "[::1:8765",
    ):
        refused = client.get("/samples", params={"model": "constant", "task": TASK}, headers={"Host": host})
        assert refused.status_code == 421 and "mmneedle" not in refused.text, host
    everywhere = served_hosts("0.0.0.0", 9000)
    assert everywhere.allows("10.1.2.3:9000") and everywhere.allows("[fe80::1]:9000")
    assert not everywhere.allows("attacker.example:9000") and not everywhere.allows("10.1.2.3:9001")
    assert split_host("[::1]:8765") == ("::1", 8765) and split_host("a b:1") is None


def test_odd_and_huge_query_numbers_get_a_page(results: Path) -> None:
    client = view_client(results)
    table = {"model": "constant", "task": TASK}
    for params in (
        {**table, "page": "²"},
        {**table, "page": "٣"},
        {**table, "page": BIG},
        {**table, "page": "-1"},
        {**table, "low": BIG, "high": "²"},
        {**table, "low": "nan", "high": "1e999"},
    ):
        response = client.get("/samples", params=params)
        assert response.status_code == 200 and "page 1 of 1" in response.text, params
    for run in ("²", BIG, "-1"):
        assert client.get("/run", params={"model": "constant", "run": run}).status_code == 404


def test_numbers_past_the_digit_limit_leave_out_a_file_or_a_line_not_the_viewer(results: Path) -> None:
    model_dir = model_folder(results)
    (model_dir / "results_zzz.json").write_text('{"results": {"x": {"acc,none": ' + BIG + "}}}")
    journal = model_dir / f"journal_{TASK}.jsonl"
    lines = journal.read_text().splitlines()
    first = json.loads(next(line for line in lines if '"type": "sample"' in line))
    big_metric = json.dumps({**first, "sample_id": "big-metric", "metrics": {"exact_acc": 0}}).replace(
        '"exact_acc": 0', '"exact_acc": ' + BIG
    )
    big_doc = json.dumps({**first, "sample_id": "big-doc"}).replace(f'"doc_id": {first["doc_id"]}', '"doc_id": ' + BIG)
    huge_but_legal = json.dumps({**first, "sample_id": "huge-doc"}).replace(
        f'"doc_id": {first["doc_id"]}', '"doc_id": ' + "9" * 400
    )
    journal.write_text("\n".join([*lines, big_metric, big_doc, huge_but_legal]) + "\n")
    (model_dir / f"samples_{TASK}_0.jsonl").write_text('{"doc_id": 0, "x": ' + BIG + "}\n")

    client = view_client(results)
    home = client.get("/")
    assert home.status_code == 200 and 'id="left-out"' in home.text and "results_zzz.json" in home.text
    table = client.get("/samples", params={"model": "constant", "task": TASK})
    assert (
        table.status_code == 200 and "12 of 12 samples" in table.text and "line(s) are not sample records" in table.text
    )
    sample = client.get("/sample", params={"model": "constant", "task": TASK, "id": first["sample_id"]})
    assert sample.status_code == 200


# --------------------------------------------------------------------------- the command, as a process


class Viewer:
    """`harness view` running as a process: its stderr lines, its port."""

    def __init__(self, script: str, results: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [script, "view", str(results), "--port", "0"], env=env, stderr=subprocess.PIPE, text=True
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.port = int(self.wait_for(r"at http://127\.0\.0\.1:(\d+)/").group(1))

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, pattern: str, seconds: float = 60) -> re.Match[str]:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                continue
            self.seen.append(line)
            found = re.search(pattern, line)
            if found:
                return found
        raise AssertionError(f"no line matching {pattern!r} in {seconds} s: {self.seen}")

    def get(self, path: str, timeout: float = 10) -> int:
        import http.client

        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.request("GET", path)
            return connection.getresponse().status
        finally:
            connection.close()

    def stop(self, signum: int, seconds: float = 10) -> tuple[int | None, list[str]]:
        self.process.send_signal(signum)
        try:
            code: int | None = self.process.wait(seconds)
        except subprocess.TimeoutExpired:
            code = None
        self.process.kill()
        self.process.wait()
        time.sleep(0.2)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return code, self.seen


@pytest.fixture
def viewer_process(harness_script: str, script_env: dict[str, str]) -> Iterator[list[Viewer]]:
    started: list[Viewer] = []
    yield started
    for viewer in started:
        if viewer.process.poll() is None:
            viewer.process.kill()
            viewer.process.wait()


@pytest.mark.slow
def test_fifos_planted_as_files_block_nothing_and_signals_stop_the_server_in_one_line(
    results: Path, harness_script: str, script_env: dict[str, str], viewer_process: list[Viewer]
) -> None:
    model_dir = model_folder(results)
    other = Path(shutil.copytree(model_dir, results / "other"))  # a second model whose journal is a FIFO
    (other_results,) = other.glob("results_*.json")
    other_results.write_text(other_results.read_text().replace('"model_name": "constant"', '"model_name": "piped"'))
    for fifo in (
        other / f"journal_{TASK}.jsonl",
        model_dir / f"samples_{TASK}_0.jsonl",  # read for the prompt: the journal holds none
        model_dir / "results_zzz.json",
        results / "report.md",
        results / "figure.png",
    ):
        fifo.unlink(missing_ok=True)
        os.mkfifo(fifo)

    viewer = Viewer(harness_script, results, script_env)
    viewer_process.append(viewer)
    assert viewer.get("/") == 200
    assert viewer.get(f"/sample?model=constant&task={TASK}&id={_sample_id(model_dir)}") == 200
    assert viewer.get(f"/samples?model=piped&task={TASK}") == 200
    assert viewer.get("/report/") == 404 and viewer.get("/report/figure.png") == 404
    assert viewer.get("/samples?model=constant&task=" + TASK + "&page=" + BIG) == 200
    code, lines = viewer.stop(signal.SIGTERM, seconds=10)
    assert code is not None, f"still running 10 s after SIGTERM: {lines}"
    assert any("results_zzz.json: left out" in line for line in lines)
    assert not any("Traceback" in line for line in lines), lines

    interrupted = Viewer(harness_script, results, script_env)
    viewer_process.append(interrupted)
    assert interrupted.get("/") == 200
    code, lines = interrupted.stop(signal.SIGINT, seconds=10)
    assert code == 130, (code, lines)
    assert lines[-1] == "harness view: stopped" and not any("Traceback" in line for line in lines), lines


def test_an_uncertainty_entry_without_its_rows_leaves_the_runs_page_a_page(results: Path) -> None:
    """The results file's `uncertainty.<task>.<metric>` entries without their `n` (found by `make fuzz`: it made the
    runs page a 500): the numbers show without rows or clusters."""
    (path,) = model_folder(results).glob("results_*.json")
    data = json.loads(path.read_text())
    entries = data["uncertainty"][TASK]
    for i, metric in enumerate(sorted(entries)):
        entries[metric] = [{}, {"n_clusters": 3}][i % 2]
    path.write_text(json.dumps(data))
    page = view_client(results).get("/")
    assert page.status_code == 200 and TASK in page.text


def test_a_lone_surrogate_in_the_results_file_shows_as_its_escape(results: Path) -> None:
    """JSON's `"\\udcff"` reads as a str no UTF-8 encodes (found by `make fuzz`: the run's page was a 500)."""
    (path,) = model_folder(results).glob("results_*.json")
    data = json.loads(path.read_text())
    data["datasets"][TASK]["builder"] = "from \udcff"
    path.write_text(json.dumps(data))
    page = view_client(results).get("/run", params={"model": "constant", "run": "0"})
    assert page.status_code == 200 and "from \\udcff" in page.text


@pytest.mark.parametrize(
    "policy",
    [
        {"image_scale": "half"},
        {"max_image_side": [1]},
        {"keep_last_images": 0},
        {"processor_kwargs": "x"},
        {"no_such_setting": 1},
    ],
)
def test_an_input_policy_the_results_file_garbles_leaves_the_sample_page_a_page(results: Path, policy: object) -> None:
    """`config.input_policies.<task>` is the results file's, so anything: the page still shows the journal's record of
    what was sent, and says the build could not be matched to it, never a 500."""
    (path,) = model_folder(results).glob("results_*.json")
    data = json.loads(path.read_text())
    data["config"]["input_policies"] = {TASK: policy}
    path.write_text(json.dumps(data))
    (model,) = {p.parent.name for p in results.rglob("results_*.json")}
    sample = _sample_id(model_folder(results))
    page = view_client(results).get("/sample", params={"model": model, "task": TASK, "id": sample})
    assert page.status_code == 200 and "the request as the backend sent it" in page.text
    assert f"the results file&#39;s input policy for {TASK} cannot be applied" in page.text


@pytest.mark.parametrize("target", ["[" * 100_000, json.dumps("[" * 100_000)])
def test_a_gold_answer_nested_past_any_parser_leaves_the_sample_page_a_page(results: Path, target: str) -> None:
    """The journal's `target` is shown as the gold answer, read as JSON where it is JSON (MMLongBench's lists); one
    nested deeper than json parses (a RecursionError, not a ValueError) made the sample page a 500: it is shown as
    the text it is."""
    journal = model_folder(results) / f"journal_{TASK}.jsonl"
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    for record in records:
        if record["type"] == "sample":
            record["target"] = target
    journal.write_text("".join(json.dumps(record) + "\n" for record in records))
    (model,) = {p.parent.name for p in results.rglob("results_*.json")}
    page = view_client(results).get(
        "/sample", params={"model": model, "task": TASK, "id": _sample_id(model_folder(results))}
    )
    assert page.status_code == 200 and "[[[[" in page.text


def test_a_doc_id_past_what_a_float_holds_exactly_leaves_the_pages_pages(results: Path) -> None:
    """A journal's `doc_id` past 2**53 (an integer, so a valid record) and within int64: Arrow's reader took it, and
    its cast to the index's floats refused it (ArrowInvalid), a 500 on the task's every page."""
    journal = model_folder(results) / f"journal_{TASK}.jsonl"
    lines = journal.read_text().splitlines()
    last = json.loads(lines[-1])
    journal.write_text("\n".join([*lines, json.dumps({**last, "sample_id": "far", "doc_id": 10**18})]) + "\n")
    (model,) = {p.parent.name for p in results.rglob("results_*.json")}
    client = view_client(results)
    table = client.get("/samples", params={"model": model, "task": TASK})
    assert table.status_code == 200 and "far" in table.text
    sample = client.get("/sample", params={"model": model, "task": TASK, "id": _sample_id(model_folder(results))})
    assert sample.status_code == 200


@pytest.mark.parametrize("truncation", [5, "dropped 3 images", [1, 2]])
def test_a_truncation_the_journal_garbles_leaves_the_sample_page_a_page(results: Path, truncation: object) -> None:
    """A journal record's `truncation` (what the task's rule dropped: an object) of another type made the sample page a
    500 (the page lists its items); it is shown as recorded, said to be no object."""
    journal = model_folder(results) / f"journal_{TASK}.jsonl"
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    sample = next(record for record in records if record["type"] == "sample")
    sample["truncation"] = truncation
    journal.write_text("".join(json.dumps(record) + "\n" for record in records))
    (model,) = {p.parent.name for p in results.rglob("results_*.json")}
    page = view_client(results).get("/sample", params={"model": model, "task": TASK, "id": sample["sample_id"]})
    assert page.status_code == 200 and "not an object" in page.text


def test_a_prompt_store_that_fails_its_check_is_said_on_the_sample_page(results: Path) -> None:
    """Every chunk of the run's prompt store replaced by a zlib bomb: the sample page shows the prompt rebuilt from the
    verified build and says the store's copy fails its check (issue 77, item 1)."""
    import base64
    import zlib

    folder = model_folder(results)
    (store,) = folder.glob(f"prompts_{TASK}.jsonl")
    bomb = base64.b64encode(zlib.compress(b"\0" * (64 << 20))).decode()
    lines = [json.loads(line) for line in store.read_text().splitlines()]
    store.write_text("".join(json.dumps({**r, "zlib": bomb} if "chunk" in r else r) + "\n" for r in lines))
    page = view_client(results).get("/sample", params={"model": folder.name, "task": TASK, "id": _sample_id(folder)})
    assert page.status_code == 200
    assert "the journal&#39;s prompt store holds this sample&#39;s text, but it fails its check" in page.text
