"""The viewer's "request as sent" (issue 62) on the paths a plain default run does not take
(tests/harness/test_request_as_sent.py has those): a model's input policy that drops or resizes images, a task's
truncation rule, a text round trip, a resumed run, `--log_samples`, and shards merged by `harness merge`. On each, every
sample page shows its record's text and images, serves each image (at the size the record says it was sent), and says
whether the build, with the run's policy, hashes to the journal's record of what was sent."""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import pytest

from harness.view.app import served_hosts
from tests.support.run_setups import run_args
from tests.support.view_app import shown_text

NEEDLES = "mmneedle_m10_n1_k2_pos"  # ten images per sample
TWO = ("--gen_kwargs", "max_gen_toks=2")  # every answer two tokens long


def journal_records(out: Path, task: str) -> list[dict]:
    """The task's journal records under `out`, each with its prompt's text from the journal's prompt store."""
    from harness.running.journal.prompt_store import PromptTexts
    from harness.running.journal.sample_log import with_prompt

    (journal,) = out.rglob(f"journal_{task}.jsonl")
    texts = PromptTexts.at(journal.with_name(f"prompts_{task}.jsonl"))
    return [dict(with_prompt(json.loads(line), texts)) for line in journal.read_text().splitlines()[1:]]


def policied_alias(monkeypatch: pytest.MonkeyPatch, name: str, backend: str, args: dict, policy: dict) -> None:
    """An alias `name` of `backend` whose rule gives NEEDLES `policy`, as a paper model's rules do."""
    from harness.inputs.input_policy import InputPolicy, TaskRule
    from harness.models import aliases

    rule = TaskRule((NEEDLES,), InputPolicy.of(**policy), "a paper's setting")
    monkeypatch.setitem(aliases.ALIASES, name, aliases.Alias(backend, args, rules=(rule,)))


def run_policied(harness, monkeypatch, out: Path, data_dir: Path, backend: str, alias: dict, model_args: str, policy):
    """Two NEEDLES samples run by an alias of `backend` with `policy` (`policied_alias`); `check_pages` of the run."""
    policied_alias(monkeypatch, "policied", backend, alias, policy)
    policied = run_args(NEEDLES, "policied", model_args=model_args, data_dir=data_dir, out=out)
    run = harness(*policied, "--limit", "2", *TWO)
    assert run.code == 0, run.err
    return check_pages(out, NEEDLES)


def journalled_run(harness, task: str, model: str, model_args: str, data_dir: Path, out: Path) -> list[dict]:
    """`task` run by `model` on `data_dir` into `out`, its answers two tokens long (the run must succeed): the records
    its journal holds (`journal_records`)."""
    run = harness(*run_args(task, model, model_args=model_args, data_dir=data_dir, out=out), *TWO)
    assert run.code == 0, run.err
    return journal_records(out, task)


def merged_shards(harness, tmp_path: Path, *args: str) -> Path:
    """The run `args` in two shards (`tmp_path/shard0`, `tmp_path/shard1`, each must succeed), merged by `harness
    merge` into `tmp_path/merged`: that folder."""
    shards = [tmp_path / f"shard{index}" for index in range(2)]
    for index, shard in enumerate(shards):
        run = harness(*args, "--shard", f"{index}/2", "--output_path", shard)
        assert run.code == 0, run.err
    merged = harness("merge", tmp_path / "merged", *shards)
    assert merged.code == 0, merged.err
    return tmp_path / "merged"


def check_pages(
    out: Path, task: str, matches: bool | None = True, records: list[dict] | None = None
) -> dict[str, tuple[str, list[bytes]]]:
    """Sample id -> (the text its page shows as sent, the bytes served for each of its images), for every record of
    `task` under `out`: each page shows its record's text and images, each image served at the size recorded, and
    says the build hashes (`matches`: True), does not (False), or nothing (None: nothing to compare; so for a prompt
    the task's truncation cut, which the build's row is not)."""
    from PIL import Image
    from starlette.testclient import TestClient

    from harness.view.app import create_app
    from harness.view.catalog import Catalog

    (model,) = Catalog(out).model_names()
    client = TestClient(create_app(out, hosts=served_hosts("127.0.0.1", 8765)), base_url="http://127.0.0.1:8765")
    shown = {}
    records = journal_records(out, task) if records is None else records  # given: as read before the store went
    assert records
    for record in records:
        page = client.get("/sample", params={"model": model, "task": task, "id": record["sample_id"]})
        assert page.status_code == 200 and "the request as the backend sent it" in page.text
        turn = re.search(r'<div class="turn turn-sent">.*?<span class="text">(.*?)</span>', page.text, flags=re.S)
        assert turn is not None, page.text[:2000]
        text = shown_text(turn.group(1))
        assert text == record["prompt"]
        verdict = None if record.get("truncation") else matches  # a cut prompt is not the build's row: not compared
        assert ("cut by the task&#39;s truncation rule" in page.text) is bool(record.get("truncation"))
        assert ('id="inputs-match"' in page.text) is (verdict is True), record["sample_id"]
        assert ("It does not hash" in page.text) is (verdict is False), record["sample_id"]
        images = re.findall(r'src="/image/([0-9a-f]{64})\?size=thumb"', page.text)
        assert images == [image["sha256"] for image in record["sent_images"]]
        served = []
        for image in record["sent_images"]:  # each image as sent: its bytes served, at the size the record says
            got = client.get(f"/image/{image['sha256']}")
            assert got.status_code == 200, (record["sample_id"], image)
            assert list(Image.open(io.BytesIO(got.content)).size) == image["size"]
            assert client.get(f"/image/{image['sha256']}", params={"size": "thumb"}).status_code == 200  # the page's
            served.append(got.content)
        shown[record["sample_id"]] = (text, served)
    return shown


def received_as_shown(chat_server, shown: dict[str, tuple[str, list[bytes]]]) -> None:
    """Each request the chat server received is one page's: its messages, each image's bytes those the viewer serves
    for the record's image at its place (then named `sha256:<the record's hash>`, as the record writes it)."""
    pages = {text: served for text, served in shown.values()}
    received = []
    for request in chat_server.received:
        messages = request.body["messages"]
        sent = [
            part
            for message in messages
            for part in (message["content"] if isinstance(message["content"], list) else [])
            if part.get("type") == "image_url"
        ]
        data = [base64.b64decode(part["image_url"]["url"].split(",", 1)[1]) for part in sent]
        match = [text for text, served in pages.items() if served == data]
        assert match, "a request whose images no page serves"
        shas = re.findall(r'"url": "sha256:([0-9a-f]{64})"', match[0])
        for part, sha in zip(sent, shas, strict=True):
            part["image_url"]["url"] = f"sha256:{sha}"
        received.append(json.dumps(messages, ensure_ascii=False))
    assert sorted(received) == sorted(pages)


@pytest.mark.parametrize(
    ("policy", "images", "resized"),
    [({"keep_last_images": 3}, 3, False), ({"image_scale": 0.5}, 10, True), ({"keep_last_images": 2, "image_scale": 0.5}, 2, True)],
    ids=["keep_last_images", "image_scale", "both"],
)  # fmt: skip
def test_a_policy_that_drops_or_scales_images_shows_them_as_sent(
    policy: dict, images: int, resized: bool, chat_server, data_dir: Path, tmp_path: Path, harness, monkeypatch, rows
) -> None:
    """A model whose rule keeps only a prompt's last images (their places dropped from the text) or scales them: its
    server received, byte for byte, what each page shows and serves, and the build with the policy hashes to it."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "out"
    gpt = {"model": "gpt-4o"}
    shown = run_policied(harness, monkeypatch, out, data_dir, "openai", gpt, f"base_url={chat_server.base_url}", policy)
    source = {row["id"]: row for row in rows("m10_n1_k2")}
    for record in journal_records(out, NEEDLES):
        built = source[record["sample_id"]]["image_sha256"]
        assert len(record["sent_images"]) == images and len(built) == 10
        kept = [image["sha256"] for image in record["sent_images"]]
        assert (kept == built[-images:]) is not resized and record["prompt"].count('"type": "image_url"') == images
    received_as_shown(chat_server, shown)


@pytest.mark.slow  # the tiny LLaVA generates
@pytest.mark.parametrize(
    ("policy", "images"),
    [({"processor_kwargs": {"do_normalize": False}}, 10), ({"keep_last_images": 2, "image_scale": 0.5}, 2)],
    ids=["processor_kwargs", "keep_last_images_scaled"],
)
def test_hf_with_a_policy_shows_the_text_and_settings_sent(
    policy: dict,
    images: int,
    tiny_llava: Path,
    data_dir: Path,
    tmp_path: Path,
    harness,
    monkeypatch,
    hf_processor_calls,
) -> None:
    """A model whose rule passes settings to its processor (`processor_kwargs`, as InternVL's one tile), or keeps and
    scales images: the text its processor was given, with the images kept, is each page's; every image's record
    names the settings it was processed with; the build with the policy hashes to the record."""
    given = hf_processor_calls
    out = tmp_path / "out"
    shown = run_policied(
        harness, monkeypatch, out, data_dir, "hf", {"threads": "1"}, f"pretrained={tiny_llava}", policy
    )
    assert sorted(text for text, _ in shown.values()) == sorted(text for text, _, _ in given) and len(given) == 2
    settings = policy.get("processor_kwargs", {})
    assert all(count == images == text.count("<image>") and kwargs == settings for text, count, kwargs in given)
    records = journal_records(out, NEEDLES)
    assert all(len(record["sent_images"]) == images for record in records)
    assert all(image["processor"] == settings for record in records for image in record["sent_images"])


@pytest.fixture(scope="module")
def milebench_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stand-in MileBench's TQA (its rows' contexts long enough for a short context to cut) and CLEVR-Change."""
    from builders.milebench.build import build_milebench

    root = tmp_path_factory.mktemp("milebench")
    build_milebench(source="fixture", out_dir=root, configs=["tqa", "clevr_change"])
    return root


def test_a_prompt_the_tasks_truncation_cut_shows_as_sent(
    chat_server, milebench_dir: Path, tmp_path: Path, harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MileBench's left truncation cuts a long row to a short context: its page shows the cut prompt its server
    received, only the images kept, each served; the build's row is not what was sent, so no hash verdict is given."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "out"
    short = f"model=gpt-4o,base_url={chat_server.base_url},context_length=90"
    records = journalled_run(harness, "milebench_tqa", "openai", short, milebench_dir, out)
    cut = [record for record in records if record.get("truncation")]
    assert cut and all(len(r["sent_images"]) == r["truncation"]["images_kept"] for r in cut)
    assert any(r["truncation"]["images_dropped"] and r["truncation"]["context_tokens_dropped"] for r in cut)
    shown = check_pages(out, "milebench_tqa")
    received_as_shown(chat_server, shown)


@pytest.mark.slow  # the tiny LLaVA (a SentencePiece tokenizer) generates
def test_a_prompt_re_decoded_by_the_tasks_round_trip_shows_as_sent(
    tiny_llava_sp: Path, milebench_dir: Path, tmp_path: Path, harness, hf_processor_calls
) -> None:
    """MileBench's text round trip re-decodes each context piece through the model's tokenizer before it is sent: each
    page shows the re-decoded text its processor was given, not the row's; the journal's input hash is the row's and
    the rule's, so the build still hashes to it."""
    out = tmp_path / "out"
    model_args = f"pretrained={tiny_llava_sp},threads=1"
    records = journalled_run(harness, "milebench_clevr_change", "hf", model_args, milebench_dir, out)
    assert records and all(record["text_round_trip"]["changed"] for record in records)
    shown = check_pages(out, "milebench_clevr_change")
    given = [text for text, _, _ in hf_processor_calls]
    assert sorted(text for text, _ in shown.values()) == sorted(given) and len(given) == len(records)


def test_a_resumed_run_and_its_sample_log_show_the_requests_as_first_sent(
    chat_server, data_dir: Path, tmp_path: Path, harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model whose policy scales its images, run, then run again with `--log_samples`: every sample is resumed from
    the journal (nothing sent twice), each page still shows and serves what its server received the first time, and
    the sample log's prompt and images are the journal's records (what the pages show from it, the store gone)."""
    from harness.inputs.input_policy import InputPolicy, TaskRule
    from harness.models import aliases

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    rule = TaskRule((NEEDLES,), InputPolicy.of(keep_last_images=3, image_scale=0.5), "a paper's setting")
    monkeypatch.setitem(aliases.ALIASES, "policied", aliases.Alias("openai", {"model": "gpt-4o"}, rules=(rule,)))
    out = tmp_path / "out"
    policied = run_args(NEEDLES, "policied", model_args=f"base_url={chat_server.base_url}", data_dir=data_dir, out=out)
    args = (*policied, "--limit", "3", *TWO)
    assert harness(*args).code == 0
    first = check_pages(out, NEEDLES)
    again = harness(*args, "--log_samples")
    assert again.code == 0 and "3 samples resumed from the journal, 0 generated now" in again.err, again.err
    assert len(chat_server.received) == 3
    assert check_pages(out, NEEDLES) == first
    received_as_shown(chat_server, first)
    (log,) = out.rglob(f"samples_{NEEDLES}_*.jsonl")
    logged = {line["sample_id"]: line for line in map(json.loads, log.read_text().splitlines())}
    records = {record["sample_id"]: record for record in journal_records(out, NEEDLES)}
    assert {k: line["arguments"]["gen_args_0"]["arg_0"] for k, line in logged.items()} == {
        k: record["prompt"] for k, record in records.items()
    }
    assert {k: json.loads(line["sent_images"]) for k, line in logged.items()} == {
        k: record["sent_images"] for k, record in records.items()
    }
    next(out.rglob(f"prompts_{NEEDLES}.jsonl")).unlink()  # without the prompt store, the sample log's are shown
    assert check_pages(out, NEEDLES, records=list(records.values())) == first


@pytest.mark.parametrize(
    "policy",
    [{}, {"keep_last_images": 3, "image_scale": 0.5}],
    ids=["plain", "policy"],
)
def test_merged_shards_show_each_request_as_sent(
    policy: dict, chat_server, data_dir: Path, tmp_path: Path, harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model (one whose policy drops and scales its images, too) run in two shards merged by `harness merge`: the
    merged folder's pages show and serve what its server received, and the build with the run's policy hashes to each
    record."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    policied_alias(monkeypatch, "policied", "openai", {"model": "gpt-4o"}, policy)
    policied = run_args(NEEDLES, "policied", model_args=f"base_url={chat_server.base_url}", data_dir=data_dir)
    shown = check_pages(merged_shards(harness, tmp_path, *policied, *TWO), NEEDLES)
    assert len(shown) == 12
    received_as_shown(chat_server, shown)


def test_merged_shards_of_a_cut_run_show_each_request_as_sent(
    chat_server, milebench_dir: Path, tmp_path: Path, harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose task's truncation cut prompts to a short context, in two shards merged by `harness merge`: each
    merged page shows the cut prompt its server received."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    short = f"model=gpt-4o,base_url={chat_server.base_url},context_length=90"
    tqa = run_args("milebench_tqa", "openai", model_args=short, data_dir=milebench_dir)
    merged = merged_shards(harness, tmp_path, *tqa, *TWO)
    assert any(record.get("truncation") for record in journal_records(merged, "milebench_tqa"))
    received_as_shown(chat_server, check_pages(merged, "milebench_tqa"))


def test_the_verdict_turns_on_the_runs_policy(
    chat_server, data_dir: Path, tmp_path: Path, harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The verdict compares the build with the run's policy applied: the results file without its policy, each page
    still shows the record (its images, from the build, served) but says the build does not hash to it."""
    from harness.inputs.input_policy import InputPolicy, TaskRule
    from harness.models import aliases

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    rule = TaskRule((NEEDLES,), InputPolicy.of(keep_last_images=3), "a paper's setting")
    monkeypatch.setitem(aliases.ALIASES, "policied", aliases.Alias("openai", {"model": "gpt-4o"}, rules=(rule,)))
    out = tmp_path / "out"
    policied = run_args(NEEDLES, "policied", model_args=f"base_url={chat_server.base_url}", data_dir=data_dir, out=out)
    run = harness(*policied, "--limit", "2", *TWO)
    assert run.code == 0, run.err
    first = check_pages(out, NEEDLES)
    (results,) = out.rglob("results_*.json")
    written = json.loads(results.read_text())
    assert written["config"].pop("input_policies") == {NEEDLES: {"keep_last_images": 3}}
    results.write_text(json.dumps(written))
    assert check_pages(out, NEEDLES, matches=False) == first
