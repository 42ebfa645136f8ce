#!/usr/bin/env python
"""Benchmark: the named command, `harness --tasks mmlongbench_128k --model qwen2.5-vl`, on rows of MMLongBench's true
128K length (issue 19, section 2): what the screen decides, the harness's own time per 128K row, and its peak memory
at two id counts (memory must not grow with rows).

The source is release-shaped and length-true: `--source release` writes four of its leaves at 128K here with the
length-true fixture's generator (`builders.mmlongbench.full_fixture.write_full_source`: VH-Single, VH-Multi,
MM-NIAH-Ret (T) and ICL Food101; until the fixture landed, with `bench/build_mmlongbench.py`'s own writer and a
hand-made ICL file, which the figures in bench/RESULTS.md marked "release" were taken with); `--source fixture:full` builds
the builder's own length-true fixture (all 19 leaves) where the checkout has it, with `--fixture-args` passed to `builders build`. For each `--ids` count, each
command runs in a fresh process with a fresh hash cache (so each one hashes every file it reads, as a first run
does), and is measured by the kernel (`wait4`: CPU; the process's own VmHWM: peak RSS):

* `--screen_only` with `qwen2.5-vl` (Qwen's default pixel limits, no checkpoint here: the Qwen2-VL family's rule);
* `--model random` and `--model constant` end to end, with the results' `total_evaluation_time_seconds`;
* in this process, per row: building its request as the runner does, then reading each image, checking it against
  its row's sha256 and checking that it decodes (what the response cache does before any real backend sees it), and
  decoding it whole to RGB (what every backend's processor starts from).

`--baseline DIR` runs the same commands from another checkout (e.g. `git archive ff6f88c`), for before/after figures.

    .venv/bin/python bench/true_length.py --ids 1 3 [--baseline .scratch/base] [--write-results]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from results_file import publish

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))
from builders.mmlongbench.leaves import LEAVES  # noqa: E402

SECTION = "## MMLongBench at true length: the screen, baselines and memory per 128K row"  # then `: SOURCE`
RELEASE_TASKS = (
    "mmlongbench_niah_vh_single_128k",
    "mmlongbench_niah_vh_multi_128k",
    "mmlongbench_niah_mmniah_ret_text_128k",
    "mmlongbench_icl_food101_128k",
)
RELEASE_CONFIGS = tuple(t.removeprefix("mmlongbench_") for t in RELEASE_TASKS)


def measured(command: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """Wall and CPU seconds and `wait4`'s peak RSS (MiB) of one command in a fresh process, with its output."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {proc.returncode}:\n{stderr[-3000:]}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_mib": usage.ru_maxrss / 1024,
        "stdout": stdout,
        "stderr": stderr,
    }


# The harness's own peak: its VmHWM, written as it exits. Not `wait4`'s ru_maxrss, which Linux carries over from the
# forking parent (this script, grown by decoding images) into the child when it execs.
PEAK_MARK = "harness peak VmHWM kB:"
HARNESS_REPORTING_PEAK = (
    "import atexit, sys\n"
    "def peak():\n"
    "    hwm = [line for line in open('/proc/self/status') if line.startswith('VmHWM')][0].split()[1]\n"
    f"    sys.stderr.write('\\n{PEAK_MARK} ' + hwm + '\\n')\n"
    "atexit.register(peak)\n"
    "from harness.run.cli import main\n"
    "main()\n"
)


def build(work: Path, ids: int, source: str, fixture_args: list[str], env: dict[str, str]) -> tuple[Path, list[str]]:
    """The data folder of `ids` ids per file, built once, and the tasks to run on it."""
    data = work / f"data_{ids}"
    builders = [sys.executable, "-c", "from builders.cli import main; main()", "build", "mmlongbench"]
    if source == "release":  # four leaves of the length-true fixture at 128K, written here
        from builders.mmlongbench.full_fixture import write_full_source

        release, images = work / f"release_{ids}", work / "images"
        images.mkdir(parents=True, exist_ok=True)
        release.mkdir(parents=True, exist_ok=True)
        if not (release / "mmlb_image").exists():
            (release / "mmlb_image").symlink_to(images.resolve())  # one image folder for every --ids
        if not (release / "mmlb_data").exists():
            write_full_source(
                release,
                ids_per_file=ids,
                lengths={"128k": 131072},
                leaves=[c.removesuffix("_128k") for c in RELEASE_CONFIGS],
                reuse_images=True,
            )
        # Configs already built are kept as they are; missing ones are added.
        measured(
            [*builders, "--source", str(release), "--configs", *RELEASE_CONFIGS, "--out", str(data), "--quiet"],
            env,
            ROOT,
        )
        return data, list(RELEASE_TASKS)
    if not (data / "mmlongbench").exists():
        configs = [f"{leaf.name}_128k" for leaf in LEAVES]  # the 19 leaves of `mmlongbench_128k`
        # Run from the builder's checkout: `python -c` puts the working folder ahead of PYTHONPATH.
        measured(
            [
                *builders,
                "--source",
                source,
                "--fixture-ids",
                str(ids),
                *fixture_args,
                "--configs",
                *configs,
                "--out",
                str(data),
                "--quiet",
            ],
            env,
            Path(env["PYTHONPATH"].split(os.pathsep)[0]),
        )
    return data, ["mmlongbench_128k"]


def harness_runs(checkout: Path, data: Path, tasks: list[str], work: Path, label: str) -> dict[str, Any]:
    """The screen and the two baselines from `checkout`, each with a fresh hash cache."""
    harness = [
        sys.executable,
        "-c",
        HARNESS_REPORTING_PEAK,
        "--tasks",
        ",".join(tasks),
        "--data_dir",
        str(data),
        "--no_progress",
    ]
    out: dict[str, Any] = {}
    for name, extra in (
        ("screen", ["--model", "qwen2.5-vl", "--screen_only"]),
        ("random", ["--model", "random"]),
        ("constant", ["--model", "constant", "--model_args", "answer=Yes"]),
    ):
        results = work / f"results_{label}_{name}"
        subprocess.run(["rm", "-rf", str(results)], check=True)
        env = {
            **os.environ,
            "PYTHONPATH": str(checkout),
            "HF_HUB_OFFLINE": "1",
            "MMLONGEVAL_HASH_CACHE": str(work / f"hashes_{label}_{name}.json"),
        }
        Path(env["MMLONGEVAL_HASH_CACHE"]).unlink(missing_ok=True)
        command = harness + extra + ([] if name == "screen" else ["--output_path", str(results)])
        run = measured(command, env, checkout)
        run["peak_mib"] = int(run["stderr"].rsplit(PEAK_MARK, 1)[1].split()[0]) / 1024
        if name != "screen":
            (results_file,) = results.glob("*/results_*.json")
            run["eval_s"] = float(json.loads(results_file.read_text())["total_evaluation_time_seconds"])
        out[name] = run
    return out


def screen_summary(stdout: str) -> dict[str, Any]:
    """The screen table's totals and each task's token range."""
    lines = [line for line in stdout.splitlines() if line.startswith("| mmlongbench_")]
    ranges = {cells[0]: cells[-1] for cells in ([c.strip() for c in line.strip("|").split("|")] for line in lines)}
    total = next(line for line in stdout.splitlines() if "samples would be sent" in line)
    return {"ranges": ranges, "total": total}


def per_row_images(data: Path, tasks: list[str], per_task: int = 2) -> dict[str, float]:
    """Median CPU ms per row: building its request (`Task.build_request`), reading + verifying + decode-checking its
    images (`image_problem`), and decoding them whole to RGB; with images per row. The first `per_task` rows of
    each task."""
    from harness.config.task_index import TaskIndex
    from harness.inputs.integrity import image_problem, release_mapped_pages
    from harness.running.task.task import Task

    index = TaskIndex([])
    names = [n for name in tasks for n in (index.select([name]).tasks)]
    build_ms, check_ms, decode_ms, images = [], [], [], []
    for name in names:
        task = Task(index.tasks[name])
        task.load(data)
        settings = task.generation_settings({}, 0)
        for doc_id, doc in task.iter_docs():
            if doc_id >= per_task:
                break
            start = time.process_time()
            request = task.build_request(doc_id, doc, settings)
            built = time.process_time()
            problems = [image_problem(image, k) for k, image in enumerate(request.images, start=1)]
            checked = time.process_time()
            for image in request.images:
                image.pil().convert("RGB")
            decoded = time.process_time()
            assert not any(problems), problems
            release_mapped_pages()
            build_ms.append(1000 * (built - start))
            check_ms.append(1000 * (checked - built))
            decode_ms.append(1000 * (decoded - checked))
            images.append(len(request.images))
        task.unload()
    return {
        "rows": len(images),
        "images": statistics.median(images),
        "build_ms": statistics.median(build_ms),
        "check_ms": statistics.median(check_ms),
        "decode_ms": statistics.median(decode_ms),
    }


QWEN_SPLIT = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"""
    r"""\s*[\r\n]+|\s+(?!\S)|\s+"""
)  # Qwen2's pre-tokenizer
QWEN_TEMPLATE_TOKENS = 21  # Qwen2.5-VL's default system turn and the user and assistant role markers


def qwen_text_check(data: Path, configs: list[str], vocab: Path) -> list[dict[str, Any]]:
    """Each config's first row: its `text_tokens` (the build's approx-v1 counter) against Qwen's own byte-level BPE
    (the ranks of `qwen.tiktoken`, e.g. from the dashscope wheel; needs `tiktoken`), placeholders left out and
    Qwen2.5-VL's template added: how far the family estimate's text part is from what Qwen counts."""
    import base64

    import pyarrow.parquet as pq
    import tiktoken

    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in vocab.read_text().splitlines() if line)
    }
    qwen = tiktoken.Encoding("qwen", pat_str=QWEN_SPLIT, mergeable_ranks=ranks, special_tokens={})
    out = []
    for config in configs:
        first = sorted((data / "mmlongbench" / config).glob("*.parquet"))[0]
        row = pq.read_table(first, columns=["prompt", "text_tokens"]).slice(0, 1).to_pylist()[0]
        text = row["prompt"].replace("<image>", "")
        out.append(
            {
                "config": config,
                "rows": row["text_tokens"],
                "qwen": len(qwen.encode(text, disallowed_special=())) + QWEN_TEMPLATE_TOKENS,
            }
        )
    return out


def section(results: list[dict[str, Any]], command: str, source: str) -> str:
    lines = [
        f"{SECTION}: {source}",
        "",
        f"Source: `{source}` (see the script's docstring): "
        + (
            "VH-Single, VH-Multi, MM-NIAH-Ret (T) and ICL Food101 at 128K, rows of ~95% of 131,072 tokens"
            if source == "release"
            else "all 19 leaves at 128K, each row within one unit of its length"
        )
        + " under the paper's counting. Each command in a fresh process with a "
        "fresh hash cache (it hashes every file it reads); peak RSS: the harness process's own VmHWM. 2 vCPU shared with other "
        "developers' work: wall times are noisy, CPU seconds less so.",
        "",
        f"```\n{command}\n```",
        "",
        "| checkout | ids per file | rows | command | wall s | CPU s | evaluation s | peak RSS MiB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for name in ("screen", "random", "constant"):
            run = r["runs"][name]
            evaluation = f"{run['eval_s']:.2f}" if "eval_s" in run else "-"
            lines.append(
                f"| {r['label']} | {r['ids']} | {r['rows']} | {name} | {run['wall_s']:.1f} | "
                f"{run['cpu_s']:.1f} | {evaluation} | {run['peak_mib']:.0f} |"
            )
    ours = [r for r in results if r["label"] == "this branch"]
    if ours:
        lines += [
            "",
            "The screen's verdicts (this branch, most ids): " + ours[-1]["screen"]["total"],
            "",
            "| task | prompt tokens (min-max) |",
            "|---|---|",
        ]
        lines += [f"| {task} | {span} |" for task, span in ours[-1]["screen"]["ranges"].items()]
    if ours and ours[-1].get("qwen_text"):
        lines += [
            "",
            "Text tokens of each config's first row: the rows' figure (approx-v1, what the Qwen2-VL family "
            "estimate adds the images to) against Qwen's own BPE (`--qwen-vocab`, placeholders out, Qwen2.5-VL's "
            f"{QWEN_TEMPLATE_TOKENS} template tokens in):",
            "",
            "| config | rows' text_tokens | Qwen BPE + template | difference |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {c['config']} | {c['rows']:,} | {c['qwen']:,} | {c['qwen'] - c['rows']:+,} |"
            for c in ours[-1]["qwen_text"]
        ]
    if len(ours) >= 2:
        first, last = ours[0], ours[-1]
        added = last["rows"] - first["rows"]
        lines += ["", f"Per added 128K row (this branch, {first['ids']} -> {last['ids']} ids, {added} rows):"]
        for name in ("screen", "random", "constant"):
            a, b = first["runs"][name], last["runs"][name]
            cpu = (b["cpu_s"] - a["cpu_s"]) / added * 1000
            mem = (b["peak_mib"] - a["peak_mib"]) / added
            lines.append(f"- {name}: {cpu:.0f} ms of CPU, {mem:+.2f} MiB of peak RSS")
        rows = first["images"]
        lines += [
            "",
            f"Per 128K row, in process, CPU time (median over {rows['rows']} rows, {rows['images']:.0f} images each): "
            f"building the request {rows['build_ms']:.1f} ms; reading, hash-checking and decode-checking its "
            f"images {rows['check_ms']:.0f} ms; decoding them whole to RGB {rows['decode_ms']:.0f} ms.",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--source", default="release", help="release (written here) or fixture:full")
    parser.add_argument("--fixture-args", nargs="*", default=[], help="more `builders build` arguments for a fixture")
    parser.add_argument("--baseline", type=Path, help="another checkout to run the same commands from")
    parser.add_argument("--builder", type=Path, help="the checkout whose builder builds the data (default: this one)")
    parser.add_argument("--work", type=Path)
    parser.add_argument("--qwen-vocab", type=Path, help="qwen.tiktoken: check the rows' text counts against Qwen's BPE")
    parser.add_argument("--render", type=Path, nargs="+", help="logs of earlier runs: their figures, one section")
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    if args.render:  # the JSON lines the runs printed, e.g. one run per id count
        results = [
            json.loads(line) for log in args.render for line in log.read_text().splitlines() if line.startswith("{")
        ]
        command = (
            f".venv/bin/python bench/true_length.py --ids {' '.join(str(r['ids']) for r in results)} "
            f"--source {args.source}"
        )
        publish(f"{SECTION}: {args.source}", section(results, command, args.source), args.write_results)
        return
    work = (args.work or Path(tempfile.mkdtemp(prefix="bench_true_"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str((args.builder or ROOT).resolve())}
    results = []
    for ids in args.ids:
        data, tasks = build(work, ids, args.source, args.fixture_args, env)
        checkouts = [("this branch", ROOT)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
        for label, checkout in checkouts:
            runs = harness_runs(checkout, data, tasks, work, f"{label.replace(' ', '_')}_{ids}")
            summary = screen_summary(runs["screen"]["stdout"])
            rows = int(summary["total"].split(" of ")[1].split()[0])
            entry = {"label": label, "ids": ids, "rows": rows, "runs": runs, "screen": summary}
            if label == "this branch" and ids == args.ids[0]:
                entry["images"] = per_row_images(data, tasks)
            if label == "this branch" and args.qwen_vocab:
                configs = RELEASE_CONFIGS if args.source == "release" else [f"{leaf.name}_128k" for leaf in LEAVES]
                entry["qwen_text"] = qwen_text_check(data, list(configs), args.qwen_vocab)
            results.append(entry)
            print(
                json.dumps(
                    {k: v for k, v in entry.items() if k != "runs"}
                    | {
                        "runs": {
                            n: {k: v for k, v in r.items() if k not in ("stdout", "stderr")} for n, r in runs.items()
                        }
                    },
                    default=str,
                ),
                flush=True,
            )
    command = (
        ".venv/bin/python bench/true_length.py --ids "
        + " ".join(map(str, args.ids))
        + (f" --source {args.source}" if args.source != "release" else "")
        + (" --fixture-args " + " ".join(args.fixture_args) if args.fixture_args else "")
        + (" --builder FULL" if args.builder else "")
        + (" --baseline BASE" if args.baseline else "")
        + (" --qwen-vocab qwen.tiktoken" if args.qwen_vocab else "")
        + (" --write-results" if args.write_results else "")
    )
    publish(f"{SECTION}: {args.source}", section(results, command, args.source), args.write_results)


if __name__ == "__main__":
    main()
