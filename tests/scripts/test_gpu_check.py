"""scripts/compare_backends.py on real result folders (two `harness` runs of the `constant` baseline),
and the GPU check's refusal to run without a GPU."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.run.cli import main
from tests.support import fake_vllm
from tests.support.backend_fixtures import MMNEEDLE_LIMIT
from tests.support.model_requests import make_request
from tests.support.paths import PROJECT

TASKS = "mmneedle_m1_n2_k1_pos,mmneedle_m1_n2_k1_neg"


def _run(data: Path, out: Path, answer: str) -> Path:
    code = main(
        [
            "--tasks",
            TASKS,
            "--model",
            "constant",
            "--model_args",
            f'answer="{answer}"',
            "--data_dir",
            str(data),
            "--output_path",
            str(out),
            "--no_progress",
        ]
    )
    assert code == 0
    return out


@pytest.mark.slow  # two harness runs end to end
def test_compare_backends_on_two_runs(mmneedle_dir, tmp_path, capsys, script_module):
    compare = script_module("compare_backends")
    never = _run(mmneedle_dir, tmp_path / "a", "-1")
    same = _run(mmneedle_dir, tmp_path / "b", "-1")
    other = _run(mmneedle_dir, tmp_path / "c", "1, 1, 1")
    capsys.readouterr()

    assert (
        compare.main(
            [
                str(never),
                str(same),
                "--labels",
                "hf",
                "vllm",
                "--seconds",
                "10",
                "4",
                "--exclude",
                "0",
                "2",
                "--json",
                str(tmp_path / "same.json"),
                "--min_agreement",
                "1.0",
            ]
        )
        == 0
    )
    report = capsys.readouterr().out
    assert f"Answer agreement: {2 * MMNEEDLE_LIMIT}/{2 * MMNEEDLE_LIMIT} = 100.0%" in report
    summary = json.loads((tmp_path / "same.json").read_text())
    assert summary["throughput"]["hf"] == {"samples": 6, "seconds": 10.0, "samples_per_s": 0.6}
    assert summary["throughput"]["vllm"]["samples_per_s"] == 3.0  # 6 samples in 4 - 2 seconds
    neg = summary["tasks"]["mmneedle_m1_n2_k1_neg"]["metrics"]["existence_acc"]
    assert neg == {"a": 1.0, "b": 1.0, "diff": 0.0}

    assert compare.main([str(never), str(other), "--min_agreement", "0.5", "--out", str(tmp_path / "r.md")]) == 1
    report = (tmp_path / "r.md").read_text()
    assert "Answer agreement: 0/6 = 0.0%" in report
    assert "| | existence_acc | 1.0000 | 0.0000 | -1.0000 |" in report  # negatives: '-1' right, '1, 1, 1' wrong
    assert "a='-1' b='1, 1, 1'" in report


def _gpu_check(bash: str, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`scripts/gpu_check.sh tiny/ckpt WORK` run by `bash` with `env`, its work folder under `tmp_path`."""
    script = str(PROJECT / "scripts" / "gpu_check.sh")
    return subprocess.run(
        [bash, script, "tiny/ckpt", str(tmp_path / "work")], capture_output=True, text=True, env=env, timeout=60
    )


def test_gpu_check_needs_a_gpu(tmp_path):
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    result = subprocess.run(["bash", "-n", str(PROJECT / "scripts" / "gpu_check.sh")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    # With harness and builders on PATH but no nvidia-smi, the script stops before doing anything.
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    if shutil.which("nvidia-smi", path=env["PATH"]):
        pytest.skip("this machine has nvidia-smi")
    result = _gpu_check(bash, tmp_path, env)
    assert result.returncode == 2
    # Without the installed command, the checkout's module (python -c 'from harness.run.cli import main') does.
    runnable = (bin_dir / "harness").exists() or subprocess.run(
        ["python", "-c", "import harness.run.cli, builders.cli"], env=env, capture_output=True
    ).returncode == 0
    expected = (
        "gpu_check: no nvidia-smi: this check needs an NVIDIA GPU"
        if runnable
        else "gpu_check: the 'harness' command is not installed"
    )
    assert expected in result.stderr
    assert not (tmp_path / "work").exists()


def test_gpu_check_runs_the_checkout_without_installed_commands(tmp_path):
    """On a GPU machine with no network the package is not installed: with the checkout on PYTHONPATH and
    no `harness`/`builders` on PATH, the script runs them through $PYTHON (here it stops at nvidia-smi)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(PROJECT)}
    if shutil.which("nvidia-smi", path=env["PATH"]) or shutil.which("harness", path=env["PATH"]):
        pytest.skip("this machine has nvidia-smi or an installed harness in /usr/bin")
    result = _gpu_check("bash", tmp_path, env)
    assert result.returncode == 2
    assert "gpu_check: no nvidia-smi: this check needs an NVIDIA GPU" in result.stderr
    env["GPU_CHECK_BACKENDS"] = "openai"
    result = _gpu_check("bash", tmp_path, env)
    assert "GPU_CHECK_BACKENDS must name hf, vllm or both, not 'openai'" in result.stderr


def test_gpu_check_names_an_unknown_benchmark(tmp_path):
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    env = {**os.environ, "GPU_CHECK_BENCHMARK": "mmlongbnech"}
    result = _gpu_check(bash, tmp_path, env)
    assert result.returncode == 2
    assert "GPU_CHECK_BENCHMARK must be mmneedle or mmlongbench, not 'mmlongbnech'" in result.stderr


def _wheel(folder: Path, name: str, payload: bytes) -> Path:
    """A real, installable wheel of one module holding `payload`."""
    import base64
    import hashlib
    import zipfile

    files = {
        f"{name}/__init__.py": b"DATA = " + repr(payload).encode() + b"\n",
        f"{name}-0.1.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n".encode(),
        f"{name}-0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [
        f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
        for path, data in files.items()
    ]
    files[f"{name}-0.1.dist-info/RECORD"] = ("\n".join([*record, f"{name}-0.1.dist-info/RECORD,,"]) + "\n").encode()
    path = folder / f"{name}-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:  # stored: the pieces split real bytes
        for member, data in files.items():
            zf.writestr(member, data)
    return path


@pytest.mark.slow  # pip in a child process
def test_carry_wheels_pack_stash_install(tmp_path, capsys, script_module):
    """Wheels split into checked pieces here, stashed one transfer at a time there, joined and installed;
    a damaged piece or a missing one stops with a message naming it."""
    carry = script_module("carry_wheels")
    index = tmp_path / "index"
    index.mkdir()
    payloads = {"tinya": os.urandom(40_000), "tinyb": os.urandom(5_000)}
    for name, payload in payloads.items():
        _wheel(index, name, payload)
    requirements = tmp_path / "req.txt"
    requirements.write_text("# two wheels\ntinyb==0.1\ntinya==0.1  # the larger\n")
    out = tmp_path / "out"
    assert (
        carry.main(["pack", str(requirements), "--out", str(out), "--piece-mib", "0.1", "--find-links", str(index)])
        == 0
    )
    folders = sorted(p for p in out.iterdir() if p.name.isdigit())
    assert [f.name for f in folders] == ["01", "02"]
    manifests = {(f / "manifest.json").read_text() for f in folders}
    assert len(manifests) == 1  # every transfer folder carries the whole manifest
    manifest = json.loads(manifests.pop())
    assert [w["name"] for w in manifest["wheels"]] == ["tinya-0.1-py3-none-any.whl", "tinyb-0.1-py3-none-any.whl"]
    assert all(p["size"] <= 0.1 * 2**20 for p in manifest["pieces"])
    assert sum(p["size"] for p in manifest["pieces"]) == manifest["bundle"]["size"]

    # There: the first transfer arrives damaged and is refused; sent again, it is held.
    hold, target = tmp_path / "hold", tmp_path / "site"
    sent = tmp_path / "sent"
    shutil.copytree(folders[0], sent / "01")
    piece = sent / "01" / "wheels.tar.part01"
    piece.write_bytes(piece.read_bytes()[:-1] + b"\0")
    capsys.readouterr()
    assert carry.main(["stash", str(sent / "01"), "--into", str(hold)]) == 2
    assert f"{piece}: size or sha256 differs from the manifest" in capsys.readouterr().err
    shutil.rmtree(sent / "01")
    shutil.copytree(folders[0], sent / "01")
    assert carry.main(["stash", str(sent / "01"), "--into", str(hold)]) == 0
    assert not (sent / "01" / "wheels.tar.part01").exists()  # moved out of the transfer folder
    assert carry.main(["install", str(hold), "--target", str(target), "--quiet"]) == 2
    assert "pieces still missing: wheels.tar.part02" in capsys.readouterr().err
    shutil.copytree(folders[1], sent / "02")
    assert carry.main(["stash", str(sent / "02"), "--into", str(hold)]) == 0
    assert carry.main(["install", str(hold), "--target", str(target), "--quiet"]) == 0
    for name, payload in payloads.items():
        namespace: dict = {}
        exec((target / name / "__init__.py").read_text(), namespace)
        assert namespace["DATA"] == payload


@pytest.mark.slow  # pip in a child process
def test_carry_wheels_refuses_unpinned_requirements(tmp_path, capsys, script_module):
    carry = script_module("carry_wheels")
    requirements = tmp_path / "req.txt"
    requirements.write_text("vllm==0.25.0\npydantic>=2\n")
    assert carry.main(["pack", str(requirements), "--out", str(tmp_path / "out")]) == 2
    assert (
        f"{requirements}:2: expected one pinned requirement 'name==version', got 'pydantic>=2'"
        in capsys.readouterr().err
    )


def test_compare_backends_counts_prompt_tokens_sample_by_sample(script_module):
    """Each side's screen count (`token_count`) against its engine's `usage.prompt_tokens`, and A's screen
    against B's engine; samples without a reported length are left out."""
    compare = script_module("compare_backends")

    def run(records):
        return compare.Run(Path("."), {}, {"t": {sid: {"sample_id": sid, **r} for sid, r in records.items()}})

    hf = run(
        {
            "1": {"token_count": 700, "usage": {"prompt_tokens": 700}},
            "2": {"token_count": 712, "usage": {"prompt_tokens": 712}},
            "3": {"token_count": 650},
        }
    )
    vllm = run(
        {
            "1": {"token_count": 540, "usage": {"prompt_tokens": 700}},
            "2": {"token_count": 760, "usage": {"prompt_tokens": 712}},
            "3": {"token_count": 600, "usage": {"prompt_tokens": 650}},
        }
    )
    tokens = compare.token_counts(hf, vllm)
    assert tokens == {
        "t": {
            "samples": 2,
            "a_screen_eq_a_engine": 2,
            "b_screen_eq_b_engine": 0,
            "b_screen_ge_b_engine": 1,
            "a_screen_eq_b_engine": 2,
            "b_screen_minus_engine": [-160, 48],
            "b_engine_tokens": [700, 712],
        }
    }
    table = "\n".join(compare.render_tokens(tokens, ("hf", "vllm")))
    assert "| t | 2 | 700-712 | 2 | 2 | 0 | 1 | -160 to +48 |" in table


@pytest.mark.slow  # a harness run end to end beside the bare loop's requests
def test_bare_loop_plans_the_runs_requests(mmneedle_dir, tmp_path, script_module):
    """The bare loop's requests are the ones `harness --model vllm` sends, as transformers chats with the
    images in place; beside a run of the same tasks it counts same answers and prompt lengths."""
    bare = script_module("vllm_bare_loop")
    settings, requests = bare.planned_requests(
        ["--tasks", TASKS, "--model_args", "pretrained=ckpt,max_model_len=4096", "--data_dir", str(mmneedle_dir)]
    )
    assert settings.pretrained == "ckpt" and settings.max_model_len == 4096
    assert len(requests) == 2 * MMNEEDLE_LIMIT
    chat = bare.chat_messages(requests[0])
    assert [p["type"] for p in chat[-1]["content"]] == ["image"] * requests[0].num_images + ["text"]
    assert chat[-1]["content"][-1]["text"].startswith("Given 1 image")

    ours = _run(mmneedle_dir, tmp_path / "ours", "-1")
    result = {
        "samples": [
            {
                "task": r.task,
                "sample_id": r.sample_id,
                "response": "-1" if i else "1, 1, 1",
                "prompt_tokens": 5,
                "screen_tokens": 5 + (i == 3),
                "completion_tokens": 2,
            }
            for i, r in enumerate(requests)
        ],
        "passes": [
            {
                "name": "per_task",
                "seconds": 2.0,
                "prepare_seconds": 0.5,
                "generate_seconds": 1.5,
                "engine_calls": 2,
                "prompt_tokens": 5 * len(requests),
                "cached_tokens": 0,
                "completion_tokens": 2 * len(requests),
            },
            {
                "name": "one_call",
                "seconds": 1.0,
                "prepare_seconds": 0.25,
                "generate_seconds": 0.75,
                "engine_calls": 1,
                "prompt_tokens": 5 * len(requests),
                "cached_tokens": 16,
                "completion_tokens": 7,
            },
        ],
        "engine_seconds": 3.0,
        "screened_out": [{"task": "t", "sample_id": "9", "screen_tokens": 140000}],
        "token_rule": "rule",
    }
    comparison = bare.against_ours(result, ours, exclude=0.0)
    assert comparison["compared"] == len(requests)
    assert comparison["same_answer"] == len(requests) - 1  # the constant answered -1 everywhere
    assert comparison["same_prompt_tokens"] == 0  # the constant backend reports no prompt length
    assert comparison["ours_screen_equals_engine"] == 0  # ... so no screen count equals it
    per_task, one_call = comparison["passes"]
    assert (per_task["samples_per_s"], one_call["samples_per_s"]) == (len(requests) / 2.0, len(requests) / 1.0)
    assert one_call["ours_ratio"] == per_task["ours_ratio"] / 2  # the one call took half the per-task time
    ours_side = comparison["ours"]
    assert (ours_side["prompt_tokens"], ours_side["cached_tokens"], ours_side["completion_tokens"]) == (0, 0, 0)
    assert "engine_calls" not in ours_side  # the constant backend makes no engine call to count
    screen = bare.screen_against_engine(result)
    assert (screen["samples"], screen["equal"]) == (len(requests), len(requests) - 1)
    assert screen["differing"] == [
        {"task": requests[3].task, "sample_id": requests[3].sample_id, "screen_tokens": 6, "prompt_tokens": 5}
    ]
    report = bare.render({"bare": result, "comparison": comparison})
    assert f"Same answer (decoded from the generated ids, U+FFFD kept): {len(requests) - 1}/{len(requests)}" in report
    assert f"Screen count (rule) against vLLM's `len(prompt_token_ids)`: {len(requests) - 1}/{len(requests)}" in report
    assert "screened out (never sent): t 9: screen 140000 tokens" in report
    assert (
        f"| bare pass 2: dataset order, the backend's chunks | 1 | {len(requests)} | 1.00 (generate 0.75) | "
        f"{len(requests):.2f} |"
    ) in report
    assert f"| {5 * len(requests):,} | 16 ({16 / (5 * len(requests)):.1%}) | 7 |" in report


def test_the_bare_loop_reads_an_answer_as_the_backend_does(script_module):
    """A sample of the bare loop is vLLM's output read as the backend reads it (`output_result`): the answer decoded
    from its generated ids, U+FFFD kept where it ends inside a character (vLLM's own text holds those bytes back),
    and its prompt ids by their sha256, so that both sides are compared on the same terms."""
    from types import SimpleNamespace

    from harness.sent import token_ids_sha256
    from tests.support.tiny_llava import tiny_tokenizer

    tokenizer = tiny_tokenizer()
    ids = tokenizer("answer é", add_special_tokens=False).input_ids[:-1]  # the last byte of "é" not generated
    completion = SimpleNamespace(text="answer ", token_ids=ids, finish_reason="length", stop_reason=None)
    output = SimpleNamespace(outputs=[completion], prompt_token_ids=[5, 6, 7], num_cached_tokens=2)
    request = make_request("s1", ["a question"], task="t")
    sample = script_module("vllm_bare_loop").bare_sample(request, output, tokenizer, 3)
    assert sample["response"] == "answer \N{REPLACEMENT CHARACTER}"
    assert sample["prompt_ids_sha256"] == token_ids_sha256([5, 6, 7])
    assert (sample["prompt_tokens"], sample["completion_tokens"], sample["cached_tokens"]) == (3, len(ids), 2)


def _sent(call: dict) -> tuple:
    """What one `LLM.generate` call was handed, image pixels included: the progress flag, then per request its prompt,
    its images (size, mode, a hash of the pixels), its processor kwargs and its `SamplingParams`."""
    return call["use_tqdm"], [
        (
            p["prompt"],
            [
                (i.size, i.mode, hashlib.sha256(i.tobytes()).hexdigest())
                for i in (p.get("multi_modal_data") or {}).get("image", [])
            ],
            p.get("mm_processor_kwargs"),
            repr(params),
        )
        for p, params in zip(call["prompts"], call["sampling"], strict=True)
    ]


@pytest.mark.slow  # a fixture build, a tiny checkpoint, a harness run and the bare loop, on vLLM's recording stand-in
def test_the_bare_loop_sends_generate_what_our_run_sends_request_by_request(tmp_path, script_module, monkeypatch):
    """The issue 21 gap (bench/RESULTS.md, the 8K rerun): the bare loop's `backend_order` pass hands `LLM.generate`
    exactly what a harness run of the vllm backend hands it (prompt text, image pixels, sizes and modes, sampling
    parameters, progress flag), in the same calls and order; its `one_call` pass the same requests in dataset order,
    which the backend's cache order changes on these rows."""
    vllm = pytest.importorskip("vllm")
    from builders.mmlongbench import build_mmlongbench
    from tests.support.tiny_llava import build_tiny_llava

    checkpoint = build_tiny_llava(tmp_path / "llava", image_size=336)  # renders: the backend calls LLM.generate
    configs = ("niah_vh_single_8k", "niah_mmniah_ret_image_8k")
    build_mmlongbench(source="fixture", out_dir=tmp_path / "data", configs=list(configs))
    args = [
        "--tasks",
        ",".join(f"mmlongbench_{c}" for c in configs),
        "--data_dir",
        str(tmp_path / "data"),
        "--model_args",
        f"pretrained={checkpoint},max_model_len=32768",
        "--no_progress",  # vLLM's bars off on both sides, as the run's backend is told
    ]
    monkeypatch.setattr(vllm, "LLM", fake_vllm.FakeLLM)  # both sides build their engine from vllm.LLM
    fake_vllm.CALLS.clear()
    assert main(["--model", "vllm", *args, "--no_cache", "--output_path", str(tmp_path / "ours")]) == 0
    ours = [_sent(call) for call in fake_vllm.CALLS]

    bare = script_module("vllm_bare_loop")
    settings, requests = bare.planned_requests(args)
    fake_vllm.CALLS.clear()
    result = bare.run_bare(settings, requests, ["backend_order", "one_call"])
    backend_order, dataset_order = [_sent(call) for call in fake_vllm.CALLS]
    assert len(ours) == 1 and len(ours[0][1]) == len(requests) == 36 and all(p[1] for p in ours[0][1])
    assert [backend_order] == ours
    assert dataset_order[0] == ours[0][0] and sorted(dataset_order[1]) == sorted(ours[0][1])
    assert dataset_order[1] != ours[0][1]  # the cache order runs these rows in another order
    assert [run["name"] for run in result["passes"]] == ["backend_order", "one_call"]
    assert [s["sample_id"] for s in result["samples"]] == [r.sample_id for r in requests]  # answers back in row order


def test_prefix_cache_measured_sets_orders_side_by_side_by_length(script_module):
    """Runs of the same requests in two orders: time less each run's own set-up (its results' backend_stats), and
    the prompt tokens vLLM's prefix cache served by length; samples that never reached the engine are left out."""
    measured = script_module("prefix_cache_measured")
    compare = script_module("compare_backends")

    def run(seconds, engine_seconds, cached):
        results = {
            "total_evaluation_time_seconds": str(seconds),
            "config": {
                "requests_sent": 3,
                "backend_stats": {"engine_seconds": engine_seconds, "count_seconds": 1.0, "engine_calls": 2},
            },
        }
        samples = {
            "mmlongbench_niah_vh_single_8k": {
                "a": {"sample_id": "a", "usage": {"prompt_tokens": 100, "cached_tokens": cached}},
                "b": {"sample_id": "b", "usage": {"prompt_tokens": 100, "cached_tokens": 0}},
            },
            "mmlongbench_niah_vh_single_128k": {
                "c": {"sample_id": "c", "usage": {"prompt_tokens": 1000, "cached_tokens": 10 * cached}},
                "d": {"sample_id": "d", "status": "over_length"},
            },
        }
        return measured.measured_run(compare.Run(Path("."), results, samples))

    cache, length = run(31.0, 20.0, 50), run(41.0, 30.0, 0)
    assert (
        cache["set_up_seconds"] == 21.0 and cache["speed"]["seconds"] == 10.0 and cache["speed"]["samples_per_s"] == 0.3
    )
    assert cache["served"]["8k"] == {"samples": 2, "prompt_tokens": 200, "cached_tokens": 50}
    assert cache["served"]["all"] == {"samples": 3, "prompt_tokens": 1200, "cached_tokens": 550}
    report = measured.render({"cache": cache, "length": length})
    assert "| cache | 3 | 2 | 10.00 | 21.0 | 0.300 | 550 of 1,200 (45.8%) |" in report
    assert "| 128k | 500 of 1,000 (50.0%) | 0 of 1,000 (0.0%) |" in report
    assert report.index("| 8k |") < report.index("| 128k |")  # lengths in order, not as strings sort
