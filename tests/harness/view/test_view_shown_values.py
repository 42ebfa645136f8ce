"""What a newcomer reads on a sample's page (issue 54 item 11): DocVQA's list gold one answer a line (the release holds
it as JSON text inside the JSON, which showed as `["harbour", "2019"]`), and a metric that leaves a sample out
(MileBench's `score_medium` of a sample at another image-count level) said so, not a blank cell; a task page opens on a
metric its run holds (issue 89: MMLongBench-Doc without a judge opened on the judge's `acc`, with no value)."""

from __future__ import annotations

import re

import pytest

from tests.support.results_runs import harness_run
from tests.support.view_app import view_client


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    from builders.milebench.build import build_milebench
    from builders.mmlongbench.build import build_mmlongbench
    from builders.mmlongbench_doc.build import build_mmlongbench_doc

    data = tmp_path_factory.mktemp("data")
    build_mmlongbench(source="fixture", out_dir=data, configs=["docvqa_mmlongbench_doc_8k"])
    build_milebench(source="fixture", out_dir=data, configs=["action_localization"])
    build_mmlongbench_doc(source="fixture", out_dir=data)
    out = tmp_path_factory.mktemp("results")
    tasks = "mmlongbench_docvqa_mmlongbench_doc_8k,milebench_action_localization,mmlongbench_doc"
    return view_client(harness_run(out, data, tasks, "random"))


def sample_links(client, task: str) -> list[str]:
    table = client.get("/samples", params={"model": "random", "task": task})
    assert table.status_code == 200
    return [link.replace("&amp;", "&") for link in re.findall(r'href="(/sample\?[^"]+)"', table.text)]


def test_docvqa_list_gold_shows_one_answer_a_line(client) -> None:
    golds = [
        re.search(r'<pre class="text gold">(.*?)</pre>', client.get(link).text, flags=re.S).group(1)
        for link in sample_links(client, "mmlongbench_docvqa_mmlongbench_doc_8k")
    ]
    listed = [gold for gold in golds if "\n" in gold]
    assert listed, golds  # the fixture holds list answers, as the release does
    assert not [gold for gold in golds if gold.startswith("[") or "&#34;" in gold], golds


def test_a_metric_that_leaves_the_sample_out_says_so(client) -> None:
    pages = [client.get(link).text for link in sample_links(client, "milebench_action_localization")]
    few = [page for page in pages if "<td>score_few</td><td>100</td>" in page or "<td>score_few</td><td>0</td>" in page]
    assert few
    for page in few:
        cell = re.search(r"<td>score_medium</td><td>(.*?)</td></tr>", page, flags=re.S).group(1)
        assert cell.startswith('<span class="not-scored">—</span> <small>(not scored: this metric counts other '), cell
    table = client.get(
        "/samples", params={"model": "random", "task": "milebench_action_localization", "metric": "score_medium"}
    ).text
    assert '<span title="not scored on this metric">—</span>' in table


def test_a_task_page_opens_on_a_metric_its_run_holds(client) -> None:
    """MMLongBench-Doc's headline `acc` is the judge's; a run without one holds `unextracted_acc` first, and its page
    opens on it, with its number, where it opened on `acc — (no value: its results hold no acc)`."""
    page = client.get("/samples", params={"model": "random", "task": "mmlongbench_doc"}).text
    headline = re.sub(r"<[^>]+>", "", re.search(r'<p class="headline" id="headline">(.*?)</p>', page, re.S).group(1))
    assert headline.split()[:2] == ["unextracted_acc", "(0-100,"] and "no value" not in headline, headline
    assert re.search(r"random \d+\.\d \[\d+\.\d, \d+\.\d\]", headline), headline
