"""The prompt the viewer shows for a sample is, byte for byte, what its backend sent (issue 50 item 3): each backend
reports the request as it sent it (`harness.sent`), the runner records it in every journal record (its text in the
journal's prompt store, whatever the flags: these runs are default runs, without `--log_samples`), and `harness view`
shows that record, not a prompt rebuilt beside it. Checked at each backend's own boundary: the text the `hf` backend gives
its processor (the tiny LLaVA, in every family's prompt style), the prompts the vLLM stand-in engine is given, the
chat messages the loopback server receives (OpenAI's chat completions, Gemini's `generateContent` with its images
uploaded or inline, Anthropic's Messages API and its Message Batches), and the turns a baseline reads."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
from pathlib import Path

import pytest

from harness.view.app import served_hosts
from tests.support.view_app import as_shown, shown_prompts

TASK = "mmneedle_m1_n2_k1_pos"
STYLES = (
    "default",
    "qwen",
    "gemma3",
    "idefics",
    "pixtral",
    "internvl2_5",
    "internvl2_chatml",
    "internvl2_phi3",
    "ovis2",
    "llava_llama_2",
)


def viewer_prompts(results: Path) -> dict[str, str]:
    """Sample id -> the prompt text the viewer's sample page shows as sent, for the one model and task of `results`."""
    return shown_prompts(results, TASK)


def run_args(data_dir: Path, out: Path, *model: str) -> tuple[str, ...]:
    """A default run's arguments: no `--log_samples`, so the viewer has only the journal to show."""
    return ("--tasks", TASK, *model, "--data_dir", str(data_dir), "--output_path", str(out),
            "--limit", "2", "--gen_kwargs", "max_gen_toks=2")  # fmt: skip


@pytest.mark.slow  # the tiny LLaVA generates, once per prompt style
@pytest.mark.parametrize("style", STYLES)
def test_hf_shows_the_text_its_processor_was_given(
    style: str, tiny_llava: Path, data_dir: Path, tmp_path: Path, harness, hf_processor_calls
) -> None:
    out = tmp_path / "out"
    model = ("--model", "hf", "--model_args", f"pretrained={tiny_llava},prompt_style={style},threads=1")
    run = harness(*run_args(data_dir, out, *model))
    assert run.code == 0, run.err
    shown = viewer_prompts(out)
    given = [text for text, _, _ in hf_processor_calls]
    assert len(given) == len(shown) == 2 and sorted(shown.values()) == sorted(given)


@pytest.mark.slow  # the vLLM stand-in engine behind the real backend, with the tiny LLaVA's processor
def test_vllm_shows_the_prompt_its_engine_was_given(
    tiny_llava: Path, data_dir: Path, tmp_path: Path, harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.models.backends.vllm_engine import backend
    from tests.support import fake_vllm

    real = backend.VLLMModel.__init__

    def with_stand_in(self, settings, **kw):
        real(self, settings, **{**kw, "llm_factory": fake_vllm.FAKE_LLM, "sampling_factory": fake_vllm.FAKE_SAMPLING})

    monkeypatch.setattr(backend.VLLMModel, "__init__", with_stand_in)
    fake_vllm.CALLS.clear()
    out = tmp_path / "out"
    model = ("--model", "vllm", "--model_args", f"pretrained={tiny_llava},max_model_len=4096,use_tqdm=false")
    run = harness(*run_args(data_dir, out, *model))
    assert run.code == 0, run.err
    given = [prompt["prompt"] for call in fake_vllm.CALLS for prompt in call.get("prompts", [])]
    shown = viewer_prompts(out)
    assert len(given) == len(shown) == 2 and sorted(shown.values()) == sorted(given)


@pytest.mark.slow  # the SGLang stand-in engine behind the real backend, with the tiny LLaVA's processor
def test_sglang_shows_the_prompt_its_engine_was_given(
    tiny_llava: Path, data_dir: Path, tmp_path: Path, harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    sglang = pytest.importorskip("sglang", reason="SGLang's classes (make test installs them)")
    from tests.support import fake_sglang

    monkeypatch.setattr(sglang, "Engine", fake_sglang.FakeEngine, raising=False)
    fake_sglang.CALLS.clear()
    out = tmp_path / "out"
    model = ("--model", "sglang", "--model_args", f"pretrained={tiny_llava},context_length=4096")
    run = harness(*run_args(data_dir, out, *model))
    assert run.code == 0, run.err
    given = [prompt for call in fake_sglang.CALLS for prompt in call["prompt"]]
    shown = viewer_prompts(out)
    assert len(given) == len(shown) == 2 and sorted(shown.values()) == sorted(given)


def test_openai_shows_the_messages_its_server_received(
    chat_server, data_dir: Path, tmp_path: Path, harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "out"
    model = ("--model", "openai", "--model_args", f"model=gpt-4o,base_url={chat_server.base_url},image_detail=low")
    run = harness(*run_args(data_dir, out, *model))
    assert run.code == 0, run.err
    shown = viewer_prompts(out)
    received = [as_shown(request.body["messages"]) for request in chat_server.received]
    assert len(received) == len(shown) == 2 and sorted(shown.values()) == sorted(received)
    assert all('"detail": "low"' in text for text in received)


@pytest.mark.parametrize(
    ("images", "image_format"), [("upload", "png"), ("inline", "original")], ids=["uploaded", "inline"]
)
def test_gemini_shows_the_contents_its_server_received(
    images: str, image_format: str, gemini_server, data_dir: Path, tmp_path: Path, harness, rows
) -> None:
    pytest.importorskip("google.genai")
    from PIL import Image

    out = tmp_path / "out"
    args = f"model=gemini-test,base_url={gemini_server.base_url},api_key=test-key,images={images},image_format={image_format}"
    run = harness(*run_args(data_dir, out, "--model", "gemini", "--model_args", args))
    assert run.code == 0, run.err
    shown = viewer_prompts(out)
    # an uploaded file is the image decoded, made RGB and saved as PNG (`gemini.py:73,80`): named by its pixels' image
    by_pixels = {
        image.convert("RGB").tobytes(): sha
        for row in rows("m1_n2_k1")
        for image, sha in zip(row["images"], row["image_sha256"], strict=True)
    }
    received = []
    for request in gemini_server.received:
        if not request.path.endswith(":generateContent"):
            continue
        body = {k: request.body[k] for k in ("contents", "systemInstruction") if k in request.body}
        for content in body["contents"]:
            for part in content["parts"]:
                if "fileData" in part:  # the file it uploaded, named by the hash of the image it was made from
                    mime, data = gemini_server.file_bytes(part["fileData"]["file_uri"])
                    assert mime == "image/png" == part["fileData"]["mime_type"] and data.startswith(b"\x89PNG")
                    with Image.open(io.BytesIO(data)) as png:
                        part["fileData"] = {"file_uri": f"sha256:{by_pixels[png.convert('RGB').tobytes()]}"}
                elif "inlineData" in part:  # the dataset's own bytes, inline: their hash is the record's
                    data = base64.urlsafe_b64decode(part["inlineData"]["data"].replace("+", "-").replace("/", "_"))
                    assert data.startswith(b"\xff\xd8")
                    part["inlineData"] = {"data": f"sha256:{hashlib.sha256(data).hexdigest()}"}
        received.append(json.dumps(body, ensure_ascii=False))
    assert len(received) == len(shown) == 2 and sorted(shown.values()) == sorted(received)
    assert all(('"fileData"' if images == "upload" else '"inlineData"') in text for text in received)


@pytest.mark.parametrize("batch", [False, True], ids=["messages", "message_batches"])
def test_anthropic_shows_the_messages_its_server_received(
    batch: bool, anthropic_server, data_dir: Path, tmp_path: Path, harness
) -> None:
    pytest.importorskip("anthropic")
    out = tmp_path / "out"
    args = f"model=claude-test,base_url={anthropic_server.base_url},api_key=test-key,batch_poll=0.01"
    run = harness(*run_args(data_dir, out, "--model", "anthropic", "--model_args", args), *(["--batch"] * batch))
    assert run.code == 0, run.err
    shown = viewer_prompts(out)
    if batch:
        bodies = [item["params"] for items in anthropic_server.batch_requests.values() for item in items]
    else:
        bodies = [r.body for r in anthropic_server.received if r.path == "/v1/messages"]
    received = []
    for body in bodies:
        for message in body["messages"]:  # each image's bytes as sent, named by their sha256 (what the record names)
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "image":
                    data = base64.b64decode(block["source"]["data"])
                    assert block["source"]["media_type"] == "image/jpeg" and data.startswith(b"\xff\xd8")
                    block["source"] = {"type": "base64", "data": f"sha256:{hashlib.sha256(data).hexdigest()}"}
        sent = {"system": body["system"]} if "system" in body else {}
        received.append(json.dumps({**sent, "messages": body["messages"]}, ensure_ascii=False))
    assert len(received) == len(shown) == 2 and sorted(shown.values()) == sorted(received)


def test_a_baseline_shows_the_turns_it_read(data_dir: Path, tmp_path: Path, harness, rows) -> None:
    out = tmp_path / "out"
    run = harness(*run_args(data_dir, out, "--model", "random"))
    assert run.code == 0, run.err
    source = {r["id"]: r for r in rows("m1_n2_k1")}
    shown = viewer_prompts(out)
    assert len(shown) == 2 and all(text == source[sample_id]["prompt"] for sample_id, text in shown.items())


def test_a_rerun_compares_against_the_record_of_what_was_sent(data_dir: Path, tmp_path: Path, harness) -> None:
    """A journalled sample whose record of what was sent differs from what its backend would send now is another
    request: generated again; one whose record matches is resumed."""
    out = tmp_path / "out"
    args = run_args(data_dir, out, "--model", "constant", "--model_args", "answer=-1")
    assert harness(*args).code == 0
    again = harness(*args)
    assert again.code == 0 and "2 samples resumed from the journal, 0 generated now" in again.err, again.err
    (journal,) = out.rglob(f"journal_{TASK}.jsonl")
    lines = journal.read_text().splitlines()
    first = json.loads(lines[1])
    lines[1] = json.dumps({**first, "prompt_sha256": hashlib.sha256(b"rendered otherwise").hexdigest()})
    journal.write_text("\n".join(lines) + "\n")
    third = harness(*args)
    assert third.code == 0 and "1 journalled samples were answered for other inputs" in third.err, third.err


def test_log_samples_exports_the_records_as_sent(
    chat_server, data_dir: Path, tmp_path: Path, harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--log_samples` writes lm-eval's samples file from the journal's records: each `arg_0` is the text the record
    names (from the prompt store), the text the viewer shows; the journal's records hold the text's hash, not the
    text, and the store holds each text once."""
    from harness.running.journal.prompt_store import PromptTexts

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "out"
    model = ("--model", "openai", "--model_args", f"model=gpt-4o,base_url={chat_server.base_url}")
    run = harness(*run_args(data_dir, out, *model), "--log_samples")
    assert run.code == 0, run.err
    (journal,) = out.rglob(f"journal_{TASK}.jsonl")
    records = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    assert all("prompt" not in record and len(record["prompt_sha256"]) == 64 for record in records)
    texts = PromptTexts.at(journal.with_name(f"prompts_{TASK}.jsonl"))
    assert sorted(texts.texts) == sorted({record["prompt_sha256"] for record in records})
    (log,) = out.rglob(f"samples_{TASK}_*.jsonl")
    exported = {
        line["sample_id"]: line["arguments"]["gen_args_0"]["arg_0"]
        for line in map(json.loads, log.read_text().splitlines())
    }
    assert exported == viewer_prompts(out)
    assert {texts.text(r["prompt_sha256"]) for r in records} == set(exported.values())


def test_a_model_that_shrinks_images_shows_them_as_sent(tmp_path: Path, harness, monkeypatch) -> None:
    """A paper model whose rule resizes a task's images (MMLongBench's `max_image_side`), in a default run: each page
    shows the record's request, its images at the size sent, and it hashes to the journal's record of what was sent
    (rebuilt from the build without the model's policy, it did not)."""
    import pyarrow.parquet as pq
    from PIL import Image
    from starlette.testclient import TestClient

    from builders.mmlongbench.build import build_mmlongbench
    from harness.inputs.input_policy import InputPolicy, TaskRule
    from harness.models import aliases
    from harness.view.app import create_app
    from harness.view.catalog import Catalog

    build_mmlongbench(source="fixture", out_dir=tmp_path / "data", configs=["niah_vh_single_8k"])
    rule = TaskRule(("mmlongbench_niah_vh_*",), InputPolicy.of(max_image_side=64), "halves the fixture's images")
    monkeypatch.setitem(aliases.ALIASES, "shrinker", aliases.Alias("constant", {"answer": "Yes"}, rules=(rule,)))
    out = tmp_path / "out"
    task = "mmlongbench_niah_vh_single_8k"
    run = harness("--tasks", task, "--model", "shrinker", "--data_dir", tmp_path / "data", "--output_path", out)
    assert run.code == 0, run.err
    (journal,) = out.rglob(f"journal_{task}.jsonl")
    records = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    assert records and all(max(image["size"]) <= 64 for r in records for image in r["sent_images"])
    built = (tmp_path / "data" / "mmlongbench" / "niah_vh_single_8k").glob("*.parquet")
    assert any(max(size) > 64 for p in built for row in pq.read_table(p).to_pylist() for size in row["image_sizes"])
    (model,) = Catalog(out).model_names()
    client = TestClient(create_app(out, hosts=served_hosts("127.0.0.1", 8765)), base_url="http://127.0.0.1:8765")
    for record in records:
        page = client.get("/sample", params={"model": model, "task": task, "id": record["sample_id"]})
        assert page.status_code == 200 and "the request as the backend sent it" in page.text
        assert 'id="inputs-match"' in page.text and "does not hash" not in page.text
        shown = re.findall(r'src="/image/([0-9a-f]{64})\?size=thumb"', page.text)
        assert shown == [image["sha256"] for image in record["sent_images"]]
        for sha in shown:  # each image as sent: its bytes served, at the size the record says
            served = client.get(f"/image/{sha}")
            assert served.status_code == 200, sha
            assert list(Image.open(io.BytesIO(served.content)).size) == next(
                image["size"] for image in record["sent_images"] if image["sha256"] == sha
            )


def test_a_journal_from_before_the_prompt_store_resumes_and_exports(data_dir: Path, tmp_path: Path, harness) -> None:
    """A record with its prompt inline (`--log_samples` before the prompt store) is resumed, compared by its text,
    and exported with it; the viewer shows it as sent."""
    from harness.running.journal.prompt_store import PromptTexts

    out = tmp_path / "out"
    args = run_args(data_dir, out, "--model", "constant", "--model_args", "answer=-1")
    assert harness(*args).code == 0
    (journal,) = out.rglob(f"journal_{TASK}.jsonl")
    store = journal.with_name(f"prompts_{TASK}.jsonl")
    texts = PromptTexts.at(store)
    header, *lines = journal.read_text().splitlines()
    old = []
    for line in lines:
        record = json.loads(line)
        old.append({**record, "prompt": texts.text(record.pop("prompt_sha256"))})
    journal.write_text("\n".join([header, *map(json.dumps, old)]) + "\n")
    store.unlink()
    again = harness(*args, "--log_samples")
    assert again.code == 0 and "2 samples resumed from the journal, 0 generated now" in again.err, again.err
    (log,) = out.rglob(f"samples_{TASK}_*.jsonl")
    exported = {line["sample_id"]: line["arguments"]["gen_args_0"]["arg_0"] for line in map(json.loads, log.read_text().splitlines())}  # fmt: skip
    assert exported == {r["sample_id"]: r["prompt"] for r in old} == viewer_prompts(out)
