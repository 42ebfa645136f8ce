"""End to end: `harness --model openai` against the loopback chat-completions server, on a synthetic
MMNeedle build, through a rate limit, a server error and a timeout."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import datasets
import pytest

from harness.run.cli import main
from tests.support.backend_fixtures import MMNEEDLE_LIMIT as LIMIT
from tests.support.chat_server import ChatServer
from tests.support.provider_tests import closed_port

pytestmark = pytest.mark.slow  # harness runs end to end through the CLI against a chat server

TASKS = ["mmneedle_m1_n2_k1_pos", "mmneedle_m1_n2_k1_neg", "mmneedle_m10_n1_k1_neg"]


def _images_in(body: dict) -> tuple[str, ...]:
    shas = []
    for message in body["messages"]:
        if isinstance(message["content"], list):
            for part in message["content"]:
                if part["type"] == "image_url":
                    head, data = part["image_url"]["url"].split(",", 1)
                    assert head == "data:image/jpeg;base64"
                    assert part["image_url"]["detail"] == "high"
                    shas.append(hashlib.sha256(base64.b64decode(data)).hexdigest())
    return tuple(shas)


def _harness_argv(model_args: str, data: Path, out: Path, *extra: str, tasks: list[str] = TASKS) -> list[str]:
    """`harness --model openai --model_args <model_args>` on `tasks` of the build in `data`, its results in `out`."""
    return [
        "--tasks",
        ",".join(tasks),
        "--model",
        "openai",
        "--model_args",
        model_args,
        "--data_dir",
        str(data),
        "--output_path",
        str(out),
        "--no_progress",
        *extra,
    ]


def test_harness_openai_end_to_end(mmneedle_dir: Path, tmp_path: Path, capsys):
    server = ChatServer(answer=lambda body: "-1", faults=["rate_ms_once", "fail_once", "timeout_once"])
    server.start()
    out = tmp_path / "results"
    argv = _harness_argv(
        f"model=test-vlm,base_url={server.base_url},api_key=sk-test,timeout=1.5,backoff=0.01,concurrency=4,"
        "image_detail=high",
        mmneedle_dir,
        out,
    )
    try:
        code = main(argv)
        first_run_requests = len(server.received)
        again = main(argv)  # the same command again: everything is already done
    finally:
        server.stop()
    err = capsys.readouterr().err
    assert code == 0 and again == 0, err

    # 9 samples, plus one retried attempt for each of the 429, the 500 and the timeout.
    assert first_run_requests == 3 * LIMIT + 3
    assert len(server.received) == first_run_requests  # the rerun sent nothing
    assert all(
        r.headers["authorization"] == "Bearer sk-test" and r.body["model"] == "test-vlm" for r in server.received
    )

    (results_file,) = sorted(out.rglob("results_*.json"))[:1]
    results = json.loads(results_file.read_text())
    for task in TASKS:
        entry = results["sample_counts"][task]
        assert entry["n_ok"] == LIMIT and entry["n_error"] == 0, entry
    budgets = {results["configs"][t]["generation_settings"]["max_gen_toks"] for t in TASKS}
    assert {r.body["max_tokens"] for r in server.received} == budgets
    assert all(r.body["temperature"] == 0.0 and "seed" in r.body for r in server.received)
    assert results["results"]["mmneedle_m1_n2_k1_neg"]["existence_acc,none"] == 1.0
    assert results["results"]["mmneedle_m1_n2_k1_pos"]["exact_acc,none"] == 0.0

    # Every request carried exactly one row's images, in the row's order, as the row's own bytes.
    expected = set()
    for config in ("m1_n2_k1", "m10_n1_k1"):
        rows = datasets.load_dataset(str(mmneedle_dir / "mmneedle"), config, split="test")
        keep = rows if config == "m1_n2_k1" else rows.filter(lambda r: not r["is_positive"])
        expected |= {tuple(r["image_sha256"]) for r in keep}
    sent = {_images_in(r.body) for r in server.received}
    assert sent == expected
    assert {len(s) for s in sent} == {1, 10}


# --- the response cache, secrets, and bad input, all through the `harness` command -------------------

SECRET = "sk-test-5ecret-d0-not-write"
MODEL_DIR = "openai__test-vlm"  # <output_path>/<backend>__<served model>


def _argv(
    server: ChatServer, data: Path, out: Path, *extra: str, tasks: list[str] = TASKS, model_args: str = ""
) -> list[str]:
    settings = {
        "model": "test-vlm",
        "base_url": server.base_url,
        "api_key": SECRET,
        "timeout": "1.5",
        "backoff": "0.01",
        "max_retries": "1",
        "concurrency": "1",
    }
    settings.update(item.split("=", 1) for item in model_args.split(",") if item)  # a key may be given once only
    return _harness_argv(",".join(f"{k}={v}" for k, v in settings.items()), data, out, *extra, tasks=tasks)


def _newest_results(model_dir: Path) -> dict:
    return json.loads(sorted(model_dir.glob("results_*.json"))[-1].read_text())


def _records(model_dir: Path, task: str) -> list[dict]:
    lines = (model_dir / f"journal_{task}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines[1:]]


def test_cached_rerun_makes_zero_model_calls_and_no_secret_is_written(mmneedle_dir: Path, tmp_path: Path, capsys):
    server = ChatServer(answer=lambda body: "1, 1, 1" if len(body["messages"][0]["content"]) > 2 else "-1")
    server.start()
    out = tmp_path / "results"
    model_dir = out / MODEL_DIR
    argv = _argv(server, mmneedle_dir, out)
    try:
        assert main(argv) == 0
        sent = len(server.received)
        assert sent == 3 * LIMIT
        first = _newest_results(model_dir)
        first_records = {t: _records(model_dir, t) for t in TASKS}
        assert (model_dir / "cache.sqlite3").is_file()
        assert first["config"]["cache_hits"] == 0 and first["config"]["requests_sent"] == sent

        # The journals are gone (e.g. deleted after a task's YAML changed): the cache answers everything.
        for journal in model_dir.glob("journal_*.jsonl"):
            journal.unlink()
        assert main(argv) == 0
        assert len(server.received) == sent  # not one request more
        second = _newest_results(model_dir)
        assert second["config"]["cache_hits"] == sent
        assert second["config"]["model_calls"] == 0 and second["config"]["requests_sent"] == 0
        assert second["results"] == first["results"] and second["n-samples"] == first["n-samples"]
        assert second["usage"] == first["usage"] and second["usage"][TASKS[0]]["prompt_tokens"] == 11 * LIMIT
        for task in TASKS:
            assert {r["sample_id"]: r["response"] for r in _records(model_dir, task)} == {
                r["sample_id"]: r["response"] for r in first_records[task]
            }

        # --no_cache: the model is asked again.
        for journal in model_dir.glob("journal_*.jsonl"):
            journal.unlink()
        assert main([*argv, "--no_cache"]) == 0
        assert len(server.received) == 2 * sent
        assert _newest_results(model_dir)["config"]["cache"] is None
    finally:
        server.stop()
    captured = capsys.readouterr()
    assert "response cache" in captured.err and f"{sent} hits" in captured.err

    # The key reached the server, and was written nowhere: not in results, journals, cache or output.
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in server.received)
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in captured.out + captured.err
    config = first["config"]
    assert config["model_args"]["api_key"] == "<redacted>" and config["model_args"]["model"] == "test-vlm"
    assert any("api_key=<redacted>" in a for a in config["argv"])


def test_per_sample_failures_are_recorded_and_retried_by_a_rerun(mmneedle_dir: Path, tmp_path: Path, capsys):
    # concurrency=1: the faults meet the requests in order. The first task's three samples: a server
    # that times out (twice: the retry too), a malformed body, a 400 saying images are not accepted;
    # then the second task's first sample is refused.
    server = ChatServer(
        answer=lambda body: "-1", faults=["timeout_once", "timeout_once", "malformed", "no_vision", "refuse"]
    )
    server.start()
    out = tmp_path / "results"
    model_dir = out / MODEL_DIR
    tasks = ["mmneedle_m1_n2_k1_pos", "mmneedle_m1_n2_k1_neg"]
    try:
        assert main(_argv(server, mmneedle_dir, out, tasks=tasks)) == 1  # failed samples: not a finished run
        first_sent = len(server.received)
        results = _newest_results(model_dir)
        failed = _records(model_dir, tasks[0])
        assert sorted(r["status"] for r in failed) == ["error"] * 3
        errors = sorted(r["error"] for r in failed)
        assert errors[0] == "malformed_response: body is not JSON: '<html>gateway hiccup</html>'"
        assert errors[1].startswith("provider_error: HTTP 400: This model does not support image inputs")
        assert errors[2].startswith("provider_error: gave up after 2 attempts: timeout after 1.5s")
        entry = {**results["results"][tasks[0]], **results["sample_counts"][tasks[0]]}
        assert entry["n_error"] == 3 and entry["n_scored"] == 0 and entry["existence_acc,none"] == "N/A"
        refused = {**results["results"][tasks[1]], **results["sample_counts"][tasks[1]]}
        assert refused["n_refused"] == 1 and refused["n_ok"] == LIMIT - 1 and refused["existence_acc,none"] == 1.0
        # Token usage: the sum of what each sample's answer reported, refusals included.
        records = _records(model_dir, tasks[1])
        assert (
            results["usage"][tasks[1]]["total_tokens"] == sum(r["usage"]["total_tokens"] for r in records) == 14 * LIMIT
        )
        err = capsys.readouterr().err
        assert f"{tasks[1]}: 1 refused by the provider, 0 failed" in err
        assert f"{tasks[0]}: 0 refused by the provider, 3 failed" in err
        assert "3 sample(s) failed with errors and are left out of the scores above" in err
        assert results["failed_samples"] == {tasks[0]: 3}

        # A rerun sends the three failed samples again (not the refused one) and completes the task.
        assert main(_argv(server, mmneedle_dir, out, tasks=tasks)) == 0
        assert len(server.received) == first_sent + 3
        rerun = _newest_results(model_dir)["sample_counts"]
        assert rerun[tasks[0]]["n_ok"] == LIMIT and rerun[tasks[1]]["n_refused"] == 1
        resumed = (
            f"harness: {LIMIT} samples resumed from the journal, 3 generated now (1 of 2 tasks)"  # the failed 3 redone
        )
        assert resumed in capsys.readouterr().err  # one line for the run
    finally:
        server.stop()


def test_rejected_key_stops_the_run_and_keeps_finished_samples(mmneedle_dir: Path, tmp_path: Path, capsys):
    server = ChatServer(answer=lambda body: "-1", faults=["ok", "ok", "auth"])
    server.start()
    out = tmp_path / "results"
    task = "mmneedle_m1_n2_k1_neg"
    try:
        assert main(_argv(server, mmneedle_dir, out, tasks=[task])) == 1
        err = capsys.readouterr().err
        (line,) = [line for line in err.splitlines() if line.startswith("harness: error:")]
        assert "the model backend stopped: openai backend stopped: HTTP 401" in line and "Incorrect API key" in line
        assert "run the same command to resume" in line and "Traceback" not in err
        assert not list((out / MODEL_DIR).glob("results_*.json"))
        assert sorted(r["status"] for r in _records(out / MODEL_DIR, task)) == ["error", "ok", "ok"]

        assert main(_argv(server, mmneedle_dir, out, tasks=[task])) == 0  # the key works again
        assert f"{task}: 2 samples resumed from the journal, 1 generated now" in capsys.readouterr().err
        assert len(server.received) == 4
    finally:
        server.stop()


def test_unreachable_server_is_one_line_and_exit_1(mmneedle_dir: Path, tmp_path: Path, capsys):
    port = closed_port()
    code = main(
        _harness_argv(
            f"model=m,base_url=http://127.0.0.1:{port}/v1,max_retries=1,backoff=0.01",
            mmneedle_dir,
            tmp_path,
            tasks=["mmneedle_m1_n2_k1_neg"],
        )
    )
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    (line,) = [line for line in err.splitlines() if line.startswith("harness: error:")]
    assert f"cannot connect to http://127.0.0.1:{port}/v1/chat/completions" in line


def test_missing_api_key_is_a_user_error(mmneedle_dir: Path, tmp_path: Path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code = main(_harness_argv("model=gpt-4o", mmneedle_dir, tmp_path, tasks=["mmneedle_m1_n2_k1_neg"]))
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith(
            "harness: error: model 'openai': openai backend: no API key for https://api.openai.com/v1; set OPENAI_API_KEY"
        )
    )


def test_image_cap_and_unreadable_image_never_reach_the_server(
    mmneedle_dir: Path, tmp_path: Path, capsys, broken_image
):
    import shutil

    broken = tmp_path / "data"
    shutil.copytree(mmneedle_dir / "mmneedle", broken / "mmneedle")

    broken_image(broken / "mmneedle", "m1_n2_k1", 1, b"this is not an image")  # row 1: the second positive

    server = ChatServer(answer=lambda body: "-1")
    server.start()
    out = tmp_path / "results"
    tasks = ["mmneedle_m1_n2_k1_pos", "mmneedle_m10_n1_k1_neg"]
    try:
        assert main(_argv(server, broken, out, tasks=tasks, model_args=",max_images=5")) == 0
        assert len(server.received) == LIMIT - 1  # only the readable one-image prompts were sent
        assert {len(_images_in_any(r.body)) for r in server.received} == {1}
        assert main(_argv(server, broken, out, tasks=tasks, model_args=",max_images=5")) == 0
        assert len(server.received) == LIMIT - 1  # both outcomes are final: nothing is retried
    finally:
        server.stop()
    results = _newest_results(out / MODEL_DIR)["sample_counts"]
    assert results[tasks[1]]["n_too_many_images"] == LIMIT and results[tasks[1]]["n_scored"] == 0
    assert results[tasks[0]]["n_invalid_input"] == 1 and results[tasks[0]]["n_ok"] == LIMIT - 1
    (bad,) = [r for r in _records(out / MODEL_DIR, tasks[0]) if r["status"] == "invalid_input"]
    # Caught before the response cache is consulted (harness.running.cache), so before the backend's own check.
    assert bad["doc_id"] == 1 and bad["error"].startswith("invalid_input: image ") and "does not decode" in bad["error"]
    capped = _records(out / MODEL_DIR, tasks[1])[0]
    assert capped["error"] == "10 images; the model takes at most 5"


def _images_in_any(body: dict) -> list[str]:
    return [
        p for m in body["messages"] if isinstance(m["content"], list) for p in m["content"] if p["type"] == "image_url"
    ]


def test_secrets_are_redacted_by_value_everywhere(mmneedle_dir: Path, tmp_path: Path, capsys, monkeypatch):
    env_key, url_key = "sk-env-key-0123456789", "urlpass-9876543210"
    monkeypatch.setenv("OPENAI_API_KEY", env_key)
    out = tmp_path / "results"
    # A proxy that quotes the key it was sent in its error message (the first sample), then answers.
    server = ChatServer(answer=lambda body: "-1", faults=["echo_key"])
    server.start()
    try:
        argv = _harness_argv(
            f"model=test-vlm,base_url={server.base_url},timeout=5,max_retries=0",
            mmneedle_dir,
            out,
            tasks=["mmneedle_m1_n2_k1_neg"],
        )
        assert main(argv) == 1  # the echoed sample failed
        assert server.received[0].headers["authorization"] == f"Bearer {env_key}"
        (journal,) = out.rglob("journal_*.jsonl")
        records = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
        assert [r["error"] for r in records if r["status"] == "error"] == [
            "provider_error: HTTP 400: rejected Bearer <redacted>"
        ]
        # A key inside the URL: it reaches nothing written either.
        with_url = f"http://reader:{url_key}@{server.base_url.split('://', 1)[1]}"
        argv_url = [*argv[:5], f"model=test-vlm,base_url={with_url},timeout=5", *argv[6:], "--allow_failures"]
        main(argv_url)
    finally:
        server.stop()
    captured = capsys.readouterr()
    for path in out.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert env_key.encode() not in data and url_key.encode() not in data, path
    assert env_key not in captured.out + captured.err and url_key not in captured.out + captured.err
    results = [json.loads(p.read_text()) for p in out.rglob("results_*.json")]
    assert any("reader:<redacted>@" in json.dumps(r["config"]) for r in results)


def test_a_killed_run_sends_nothing_twice_that_it_had_received(mmneedle_dir: Path, tmp_path: Path):
    import os
    import signal
    import subprocess
    import sys
    import time

    server = ChatServer(answer=lambda body: "-1", faults=["slow"] * 100)  # 0.2 s an answer
    server.start()
    out = tmp_path / "results"
    task = "mmneedle_m1_n2_k1_neg"
    argv = [
        sys.executable,
        "-m",
        "harness.run.cli",
        *_argv(server, mmneedle_dir, out, tasks=[task], model_args=",chunk_size=12,timeout=5"),
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_DATASETS_CACHE": str(tmp_path / "c")}
    journal = out / MODEL_DIR / f"journal_{task}.jsonl"
    try:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while (not journal.exists() or len(journal.read_text().splitlines()) < 1 + 2) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        journalled = len(journal.read_text().splitlines()) - 1
        assert 2 <= journalled < LIMIT, "the kill must land inside the one batch of all the task's requests"
        sent_before = len(server.received)
        again = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr
    finally:
        server.stop()
    # Every answer journalled before the kill is kept: only the unjournalled samples were sent again.
    assert len(server.received) - sent_before == LIMIT - journalled
    assert f"{journalled} samples resumed from the journal" in again.stderr


def test_a_cache_dir_outlives_output_folders(mmneedle_dir: Path, tmp_path: Path, monkeypatch):
    server = ChatServer(answer=lambda body: "-1")
    server.start()
    cache = tmp_path / "shared-cache"
    task = ["mmneedle_m1_n2_k1_neg"]
    try:
        assert main(_argv(server, mmneedle_dir, tmp_path / "a", "--cache_dir", str(cache), tasks=task)) == 0
        sent = len(server.received)
        assert sent == LIMIT and (cache / "cache.sqlite3").is_file()
        assert main(_argv(server, mmneedle_dir, tmp_path / "b", "--cache_dir", str(cache), tasks=task)) == 0
        monkeypatch.setenv("MMLONGEVAL_CACHE_DIR", str(cache))
        assert main(_argv(server, mmneedle_dir, tmp_path / "c", tasks=task)) == 0
        assert len(server.received) == sent  # new output folders, no new request
        assert not (tmp_path / "c" / MODEL_DIR / "cache.sqlite3").exists()
        config = _newest_results(tmp_path / "c" / MODEL_DIR)["config"]
        assert config["cache"] == str(cache / "cache.sqlite3") and config["cache_hits"] == LIMIT
    finally:
        server.stop()
