"""No secret is written anywhere, in any encoding: a server that quotes the key it was sent (in an error, a
refusal the response cache keeps, a retried 500 that is logged, an answer), with the key from the
environment (`Authorization: Bearer KEY`) or inside the URL (`http://user:KEY@host`, sent as
`Authorization: Basic base64(user:KEY)`). Every file of the output folder and of the cache folder is read as
raw bytes and searched for every form of the key; so is everything printed."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import quote

import pytest

from harness.run.cli import main
from tests.support.chat_server import ChatServer

USER = "reader"
URL_KEY = "url+key/with=odd%chars-42"  # needs percent-encoding inside a URL
ENV_KEY = "sk-env-0123456789-abcdef"
TASKS = "mmneedle_m1_n2_k1_neg,mmneedle_m1_n2_k1_pos"
# With concurrency=1 the requests take these in turn (a retried one takes the next): an error, a refusal (kept
# by the cache), a 500 that is retried (logged), answers that quote the Authorization header (kept by the cache).
FAULTS = ["echo_key", "echo_key_refused", "echo_key_once", "echo_key_answer", "echo_key_answer", "echo_key_answer"]


def forms_of(key: str, basic: str | None = None) -> list[str]:
    """The key as written in text, in a URL, in JSON (escaped once and twice), in Python's repr, in base64,
    and the basic-auth token it becomes."""
    forms = {
        key,
        quote(key, safe=""),
        quote(key),
        json.dumps(key)[1:-1],
        json.dumps(json.dumps(key))[1:-1],
        repr(key)[1:-1],
        base64.b64encode(key.encode()).decode(),
    }
    if basic:
        forms.add(basic)
    return sorted(forms)


def _files(*folders: Path) -> list[Path]:
    return [p for folder in folders for p in folder.rglob("*") if p.is_file()]


def _run(server: ChatServer, base_url: str, out: Path, cache: Path) -> int:
    return main(
        [
            "--tasks",
            TASKS,
            "--model",
            "openai",
            "--model_args",
            f"model=test-vlm,base_url={base_url},concurrency=1,max_retries=1,backoff=0.01,timeout=5",
            "--data_dir",
            str(server.data_dir),
            "--output_path",
            str(out),
            "--cache_dir",
            str(cache),
            "--log_samples",
            "--no_progress",
            "--allow_failures",
        ]
    )


@pytest.fixture
def leaky_server(mmneedle_dir: Path):
    server = ChatServer(answer=lambda body: "-1", faults=list(FAULTS))
    server.data_dir = mmneedle_dir  # type: ignore[attr-defined]
    server.start()
    yield server
    server.stop()


def test_a_key_from_the_environment_quoted_back_by_the_server_is_written_nowhere(
    leaky_server: ChatServer, tmp_path: Path, capsys, caplog, monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    out, cache = tmp_path / "out", tmp_path / "cache"
    assert _run(leaky_server, leaky_server.base_url, out, cache) == 0
    captured = capsys.readouterr()
    assert {r.headers["authorization"] for r in leaky_server.received} == {f"Bearer {ENV_KEY}"}
    _check_nothing_holds(forms_of(ENV_KEY), out, cache, captured.out + captured.err + caplog.text)


def test_a_key_inside_the_url_is_written_nowhere_nor_its_basic_auth_token(
    leaky_server: ChatServer, tmp_path: Path, capsys, caplog, monkeypatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    host = leaky_server.base_url.split("://", 1)[1]
    out, cache = tmp_path / "out", tmp_path / "cache"
    assert _run(leaky_server, f"http://{USER}:{quote(URL_KEY, safe='')}@{host}", out, cache) == 0
    captured = capsys.readouterr()
    basic = base64.b64encode(f"{USER}:{URL_KEY}".encode()).decode()
    assert {r.headers["authorization"] for r in leaky_server.received} == {f"Basic {basic}"}
    _check_nothing_holds(forms_of(URL_KEY, basic), out, cache, captured.out + captured.err + caplog.text)
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    assert f"{USER}:<redacted>@" in results["config"]["model_args"]["base_url"]


def _check_nothing_holds(forms: list[str], out: Path, cache: Path, printed: str) -> None:
    files = _files(out, cache)
    names = {p.name for p in files}
    assert "cache.sqlite3" in names and any(n.startswith("samples_") for n in names), names
    for path in files:
        data = path.read_bytes()
        for form in forms:
            assert form.encode() not in data, (path, form)
    for form in forms:
        assert form not in printed, form
    # What the server said is kept, the key redacted: the error, the refusal and the answer in the journals,
    # the refusal and the answer in the cache, the retried 500 in the log (whatever handler writes it).
    journals = "".join(p.read_text() for p in out.rglob("journal_*.jsonl"))
    records = [json.loads(line) for line in journals.splitlines() if '"type": "sample"' in line]
    assert any(r["status"] == "error" and "rejected" in r["error"] and "<redacted>" in r["error"] for r in records)
    assert any(r["status"] == "refused" and "<redacted>" in r["error"] for r in records)
    assert any("you sent" in (r.get("response") or "") and "<redacted>" in r["response"] for r in records)
    stored = (cache / "cache.sqlite3").read_bytes()
    assert b"filtered for" in stored and b"you sent" in stored and b"<redacted>" in stored
    assert "upstream refused" in printed and "<redacted>" in printed
