"""Fuzz: requests to `harness view` (issue 41), sent as written (no client normalises them) to the real server over
a real run whose folder holds links leading out to a secret. Any URL (paths of traversal shapes, query strings with
numbers of thousands of digits, digits that are digits only to `str.isdigit`) gets a page or a 4xx, never a 500, and
no byte of the secret; any Host the server was not started for is refused, whatever the URL."""

from __future__ import annotations

import http.client
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from harness.run.cli import main
from tests.support.results_runs import harness_run
from tests.support.view_app import served_view

from .conftest import JSON, bounded, budget, counted, mutated

TASK = "mmneedle_m1_n2_k1_pos"
SECRET = "outside-secret-5c1e0d"
ALLOWED = ("127.0.0.1", "localhost", "[::1]")  # the names a server on 127.0.0.1 answers (with its port)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Iterator[dict[str, object]]:
    """A run of two models with its report, links leading out of the folder in every shape, and the viewer serving
    it on a free port."""
    root = tmp_path_factory.mktemp("fuzz_view")
    results = root / "results"
    harness_run(results, data_dir, TASK, "random", "--log_samples")
    harness_run(results, data_dir, TASK, "constant", "--model_args", "answer=<b>x</b>")
    assert main(["report", str(results), "--jobs", "1"]) == 0
    outside = root / "outside"
    outside.mkdir()
    for name in ("secret.png", "secret.md", "secret.svg", "results_0.json", "journal.jsonl"):
        (outside / name).write_text(SECRET)
    (results / "link_out.png").symlink_to(outside / "secret.png")
    (results / "link_out.md").symlink_to(outside / "secret.md")
    (results / "linked").symlink_to(outside)
    model_dir = next((results / "constant").glob("results_*.json")).parent
    (model_dir / "results_0.json").symlink_to(outside / "results_0.json")
    copy = Path(shutil.copytree(model_dir, results / "copied"))
    (next(copy.glob("results_*.json"))).write_text(
        next(copy.glob("results_*.json")).read_text().replace('"model_name": "constant"', '"model_name": "copied"')
    )
    (copy / f"journal_{TASK}.jsonl").unlink()
    (copy / f"journal_{TASK}.jsonl").symlink_to(outside / "journal.jsonl")
    journal = model_dir / f"journal_{TASK}.jsonl"
    ids = [r["sample_id"] for r in map(json.loads, journal.read_text().splitlines()) if r["type"] == "sample"]

    figures = [p.name for p in results.glob("*.png") if not p.is_symlink()]
    with served_view(results, log_level="critical") as port:
        yield {"port": port, "ids": ids, "figures": figures}


def _get(port: int, target: str, host: str) -> tuple[int, bytes]:
    """The status and body of `GET target` with this Host, sent byte for byte."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest("GET", target, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", host)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


# --- strategies ------------------------------------------------------------------------------------------------

NASTY_NUMBERS = [
    "²",
    "³",
    "٣",
    "①",
    "9" * 4301,
    "1" * 6000,
    "-1",
    "0",
    "1e999",
    "-1e999",
    "nan",
    "inf",
    "0x10",
    "1_0",
    " 1",
]
NUMBERS = st.one_of(
    st.sampled_from(NASTY_NUMBERS),
    st.integers(4301, 6000).map(lambda n: "7" * n),  # past the 4,300 digits of int(str)
    st.text(st.characters(categories=["Nd", "No"]), min_size=1, max_size=4),  # ², ٣, ①: digits to isdigit only
    st.integers(-(2**80), 2**80).map(str),
)
SEGMENTS = st.sampled_from(
    [
        "..",
        "%2e%2e",
        "%2E%2e",
        ".",
        "",
        "%2f",
        "..%2f..",
        "%00",
        "%5c..%5c",
        "linked",
        "link_out.png",
        "link_out.md",
        "secret.png",
        "secret.md",
        "outside",
        "results",
        "report.md",
        "etc",
        "passwd",
        "constant",
        "copied",
        "view.css",
        "%ff",
        "%c0%ae%c0%ae",
    ]
)
PLANTED = st.sampled_from(
    ["link_out.png", "link_out.md", "linked/secret.png", "linked/secret.svg", "../outside/secret.md", "report.md"]
)
PREFIXES = st.sampled_from(["/", "/report/", "/static/", "/image/", "/samples/", "/sample/", "/run/", "//", "/%2e/"])
PATHS = st.builds(
    lambda prefix, parts: prefix + "/".join(parts), PREFIXES, st.lists(SEGMENTS | st.text(max_size=8), max_size=6)
)
NUMERIC_KEYS = ["page", "run", "low", "high", "desc", "size"]
KEYS = st.sampled_from(
    [*NUMERIC_KEYS, *NUMERIC_KEYS, "id", "show", "metric", "sort", "vs", "ax.cell", "ax.depth", "ax.row", "ax.images"]
    + ["ax.task", "ax.M", "ax.K", "ax.set"]  # a group's axes across tasks
)


@st.composite
def queries(draw: st.DrawFn, ids: list[str]) -> str:
    """A query string over the pages' own parameters: real names most of the time (the pages' deep paths), numbers
    of every shape, text."""
    params = {"model": draw(st.sampled_from(["constant", "random", "copied", "nobody"]))}
    params["task"] = draw(st.sampled_from([TASK, TASK, TASK, "mmneedle", "mmneedle_k1", "*", "", "../../etc"]))
    if params["task"].startswith("mmneedle") and draw(st.booleans()):
        params.pop("model")  # a group URL without a model
    if ids and draw(st.booleans()):
        params["id"] = draw(st.sampled_from(ids))
    for key in draw(st.lists(KEYS, min_size=1, max_size=4)):
        words = st.sampled_from(["wrong", "right", "1", "thumb", "large", "doc", "exact_acc"])
        params[key] = draw(NUMBERS if key in NUMERIC_KEYS else st.one_of(words, st.text(max_size=12), NUMBERS))
    return "&".join(f"{quote(k, safe='.')}={quote(v, safe='')}" for k, v in params.items())


@st.composite
def targets(draw: st.DrawFn, ids: list[str], figures: list[str]) -> str:
    kind = draw(st.sampled_from(["page", "page", "page", "path", "report", "report", "figure"]))
    if kind == "page":
        page = draw(st.sampled_from(["/samples", "/samples", "/sample", "/run", "/", "/report/"]))
        return page + "?" + draw(queries(ids))
    if kind == "report":  # a file of the folder: traversal shapes and the links planted in it
        ways = draw(st.lists(SEGMENTS, max_size=3))
        return "/report/" + "/".join([*ways, draw(PLANTED | st.sampled_from(figures))])
    if kind == "figure":
        return "/report/" + draw(st.sampled_from(figures)) + draw(st.sampled_from(["", "?size=" + "9" * 5000, "/.."]))
    path = "".join(c if 0x21 <= ord(c) < 0x7F else quote(c) for c in draw(PATHS))
    return path + ("?" + draw(queries(ids)) if draw(st.booleans()) else "")


HOSTS = st.one_of(
    st.sampled_from(
        [
            "attacker.example",
            "attacker.example:{port}",
            "127.0.0.1",
            "127.0.0.1:{port}0",
            "127.0.0.1:{port}.attacker.example",
            "localhost.attacker.example:{port}",
            "127.0.0.1.nip.io:{port}",
            "0.0.0.0:{port}",
            "[::1]",
            "[::1:{port}",
            "LOCALHOST:{port}",
            "Localhost:{port}",
            "127.0.0.1:{port}",
            "[::1]:{port}",
            "localhost:{port}",
            "",
            "localhost:",
            ":{port}",
            "127.1:{port}",
            "2130706433:{port}",
        ]
    ),
    st.builds(
        lambda name: name + ":{port}", st.text(st.characters(min_codepoint=0x21, max_codepoint=0xFF), max_size=20)
    ),
)


# --- properties ------------------------------------------------------------------------------------------------


@budget(fuzz=8000, ci=60)
@given(data=st.data())
def test_any_url_gets_a_page_or_a_refusal_never_an_error_nor_a_byte_from_outside(served, data) -> None:
    counted()
    target = data.draw(targets(served["ids"], served["figures"]), label="target")
    host = data.draw(st.sampled_from(ALLOWED), label="host") + f":{served['port']}"
    status, body = _get(served["port"], target, host)
    assert status < 500, (target, status, body[-400:])  # a group URL without a model may redirect (303)
    assert SECRET.encode() not in body, target


@budget(fuzz=4000, ci=40)
@given(data=st.data())
def test_a_host_the_server_was_not_started_for_is_refused_whatever_the_url(served, data) -> None:
    counted()
    port = served["port"]
    host = data.draw(HOSTS, label="host").replace("{port}", str(port))
    target = data.draw(targets(served["ids"], served["figures"]), label="target")
    status, body = _get(port, target, host)
    allowed = host.lower() in {f"{name}:{port}" for name in ALLOWED}
    if allowed:
        assert status != 421 and status < 500, (host, target, status)
    else:
        assert status in (400, 421), (host, target, status)  # 400: a header the HTTP parser itself refuses
        assert TASK.encode() not in body and b"constant" not in body, host


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> tuple[Path, dict[str, object]]:
    """A run of one model to damage: its folder and its results file as written."""
    results = tmp_path_factory.mktemp("fuzz_view_damaged") / "results"
    harness_run(results, data_dir, TASK, "random", "--log_samples")
    (path,) = results.rglob("results_*.json")
    return path, json.loads(path.read_text())


NUMBER_TOKEN = re.compile(r"(?<=[:\[,] )-?[0-9]+(\.[0-9]+)?(?=[,}\]])")


@budget(fuzz=1000, ci=25)
@given(data=st.data())
def test_a_results_file_of_any_content_leaves_the_viewer_starting_and_every_page_working(one_run, data) -> None:
    """Any shape, and numbers past Python's digit limit for int(str) (or too large for a float), in the results
    file: the viewer starts, and every page of every model and task it shows is a page, never a 500."""
    from starlette.testclient import TestClient

    from harness.view.app import create_app, served_hosts

    counted()
    path, original = one_run
    text = json.dumps(data.draw(mutated(original), label="results"))
    numbers = list(NUMBER_TOKEN.finditer(text))
    if numbers and data.draw(st.sampled_from([False, False, True]), label="big number"):
        found = data.draw(st.sampled_from(numbers), label="where")
        big = data.draw(st.sampled_from(["9" * 5000, "7" * 4000, "-" + "1" * 400, "1e999"]), label="how big")
        text = text[: found.start()] + big + text[found.end() :]
    path.write_text(text)
    with bounded(60, "the viewer over a damaged results file"):
        app = create_app(path.parent.parent, hosts=served_hosts("127.0.0.1", 8765))
        client = TestClient(app, base_url="http://127.0.0.1:8765", raise_server_exceptions=False)
        catalog = app.state.viewer.catalog
        urls = ["/", "/report/"]
        for model in catalog.model_names()[:2]:
            urls.append(f"/run?{quote_query(model=model, run='0')}")
            urls.append(f"/samples?{quote_query(model=model, task='mmneedle')}")  # the group page
            for task in catalog.tasks(model)[:2]:
                urls.append(f"/samples?{quote_query(model=model, task=task)}")
                urls.append(f"/sample?{quote_query(model=model, task=task, id='m1_n2_k1-00000')}")
        for url in urls:
            status = client.get(url).status_code
            assert status < 500, (url, status, text[:300])


def quote_query(**params: str) -> str:
    return "&".join(f"{k}={quote(v, safe='')}" for k, v in params.items())


# --- a judge log beside a journal (issue 87) ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> tuple[Path, list[tuple[str, int]]]:
    """A run: where its judge log goes, and its samples' ids and documents."""
    results = harness_run(tmp_path_factory.mktemp("fuzz_judge_log") / "results", data_dir, TASK, "random")
    (journal,) = results.rglob(f"journal_{TASK}.jsonl")
    records = [r for r in map(json.loads, journal.read_text().splitlines()) if r["type"] == "sample"]
    return journal.with_name(f"judge_{TASK}.jsonl"), [(r["sample_id"], r["doc_id"]) for r in records]


WIDTHS = st.one_of(st.integers(0, 70), st.sampled_from([64, 65, 150_000]))  # JUDGE_NUMBERS_MOST is 64
NOT_SCORES = st.one_of(st.floats(), st.lists(st.floats(), max_size=3), JSON)
# Lines of a judge log, each as (kind, the run's sample by number, its status, what the kind draws): a sample judged
# with any number of metrics (`WIDTHS` scores and a few more named anyhow), lines of samples the journal lacks by the
# thousand, a line of another document, one damaged, or no JSON at all.
JUDGE_LINES = st.lists(
    st.tuples(st.just("wide"), st.integers(0, 9), st.sampled_from(["judged", "error", "x"]), WIDTHS)
    | st.tuples(
        st.just("named"),
        st.integers(0, 9),
        st.just("judged"),
        st.dictionaries(st.text(max_size=12), NOT_SCORES, max_size=8),
    )
    | st.tuples(st.just("unknown"), st.integers(0, 9), st.just("judged"), st.integers(1, 3000) | st.just(100_000))
    | st.tuples(st.just("other doc"), st.integers(0, 9), st.just("judged"), st.integers() | JSON)
    | st.tuples(st.just("damaged"), st.integers(0, 9), st.just("judged"), mutated({"metrics": {"s": 1.0}}))
    | st.tuples(st.just("bytes"), st.integers(0, 9), st.just(""), st.binary(max_size=60)),
    max_size=6,
)


def judge_log(drawn: list[tuple], samples: list[tuple[str, int]]) -> tuple[list[str], set[int]]:
    """`JUDGE_LINES` as lines of the run's samples, and which of them judge a sample with more than 64 scores."""
    lines: list[str] = []
    wide: set[int] = set()
    for kind, number, status, what in drawn:
        sample_id, doc_id = samples[number % len(samples)]
        line = {"sample_id": sample_id, "doc_id": doc_id, "status": status, "metrics": {"s": 1.0}}
        if kind == "wide":
            wide.update([len(lines)] if what > 64 else [])
            lines.append(json.dumps({**line, "metrics": {f"m{i}": 0.5 for i in range(what)}}))
        elif kind == "named":
            lines.append(json.dumps({**line, "metrics": what}))
        elif kind == "unknown":
            lines.extend(json.dumps({**line, "sample_id": f"unknown-{i:07d}"}) for i in range(what))
        elif kind == "other doc":
            lines.append(json.dumps({**line, "doc_id": what}))
        elif kind == "damaged":
            lines.append(json.dumps({**line, **what} if isinstance(what, dict) else what))
        else:
            lines.append(what.decode("latin-1").replace("\n", ""))
    return lines, wide


@budget(fuzz=400, ci=4)
@given(drawn=JUDGE_LINES, most=st.sampled_from([2_000_000, 1, 20, 60_000]))
@example(drawn=[("wide", 0, "judged", 150_000)], most=2_000_000)  # issue 87: 2.6 GB at 2,000 rows
@example(drawn=[("unknown", 0, "judged", 100_000), ("wide", 1, "judged", 1)], most=60_000)  # issue 87: held whole
def test_a_judge_log_of_any_width_and_line_count_leaves_every_page_a_page_within_its_bounds(
    judged_run, drawn: list[tuple], most: int
) -> None:
    """Issue 87: a judge line naming 150,000 metrics held 2.6 GB, a log of 1,000,000 lines for unknown samples 1.2 GB
    and no page in 120 s. Any log beside the journal, with any cap on the lines read (`JOURNAL_LINES_MOST`, 2,000,000
    as the viewer has it): every page a page within its time bound, a line past a bound said on the table (the
    memory each holds: tests/harness/view/test_view_bounded.py)."""
    from harness.view.samples import judged_columns
    from tests.support.view_app import view_client

    counted()
    log, samples = judged_run
    lines, wide = judge_log(drawn, samples)
    log.write_text("".join(line + "\n" for line in lines), encoding="utf-8", errors="surrogateescape")
    kept, judged_columns.JOURNAL_LINES_MOST = judged_columns.JOURNAL_LINES_MOST, most
    try:
        with bounded(30, f"the viewer beside a judge log of {len(lines):,} lines"):
            client = view_client(log.parent.parent)
            table = client.get("/samples", params={"model": "random", "task": TASK})
            pages = [
                client.get("/sample", params={"model": "random", "task": TASK, "id": samples[0][0]}),
                client.get("/samples", params={"model": "random", "task": "mmneedle"}),
            ]
    finally:
        judged_columns.JOURNAL_LINES_MOST = kept
    assert table.status_code == 200 and all(page.status_code < 500 for page in pages), (table.status_code, pages)
    past = len({at for at in wide if at < most})
    if past:
        assert f"{past:,} line(s) hold over 64 judge metric values: left out" in table.text
    if len(lines) > most:
        assert f"only its first {most:,} lines are read" in table.text
