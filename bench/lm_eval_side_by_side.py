#!/usr/bin/env python3
"""lm-eval 0.4.13 `hf-multimodal` beside `harness --model hf` on the same rows, whole processes, interleaved.

The setting of PERFORMANCE.md ("Evaluating, beside lm-eval in one run"): a synthetic MMNeedle build of
`m10_n2_k1` (`--limit 50`: 50 positive + 50 negative rows, 10 JPEG images of 512 x 512 each), the tests' tiny
random LLaVA (`tests/support/tiny_llava.py`), 16 new tokens, greedy, the chat template, torch on one thread
(`OMP_NUM_THREADS=1`, and `threads=1` for ours), offline. Each tool runs in a virtualenv of its own that this
script builds under `--work` (kept between invocations; ours gets this checkout reinstalled every time):

* ours: `torch==2.13.0` (the package index's build, CUDA libraries included: ~6 GB a virtualenv) and this checkout with its `hf` extra (no lm-eval, no scikit-learn);
* lm-eval: `torch==2.13.0`, `lm-eval[hf]==0.4.13`, and transformers, tokenizers, Pillow and datasets at the
  versions ours resolved.

lm-eval reads the same Parquet file through a task YAML written here (`dataset_path: parquet`, the row's
`prompt` with its `<image>` placeholders as `doc_to_text`, its images as `doc_to_image`, `--apply_chat_template`).
Each tool runs once untimed first (caches, page cache), then `--rounds` rounds; in each round every (batch size,
tool) pair runs once, the tools' order alternating from round to round. Per run: wall seconds, CPU seconds
(user + sys of the process, from `wait4`) and peak RSS. Reported: medians, and each round's ratio lm-eval / ours.
On a busy machine wall times swing; CPU seconds much less (treat both as provisional there): each run records the
machine's 1-minute load average as it starts (`load`), which the table shows.

`--python PYTHON` runs both tools from one environment that holds them both instead of building two (the project's
`.venv` holds lm-eval through the `dev` extra; ours then runs this checkout, first on `PYTHONPATH`): the same torch,
transformers and datasets on both sides, and nothing to install; this checkout's modules are compiled to bytecode
first, as pip compiled lm-eval's at its install.

Usage (one command; about 15 minutes at the defaults once the virtualenvs exist, ~5 minutes to build them):
    python3 bench/lm_eval_side_by_side.py --rounds 3
    python3 bench/lm_eval_side_by_side.py --short        # 24 rows, one round: a check that everything runs
    python3 bench/lm_eval_side_by_side.py --python .venv/bin/python --batches 8 --rounds 5 --work /tmp/side_by_side
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCH = "torch==2.13.0"  # the package index's build (it carries CUDA's libraries; it runs on the CPU)
LM_EVAL = "lm-eval[hf]==0.4.13"
CONFIG = "m10_n2_k1"
OURS_TASKS = f"mmneedle_{CONFIG}_pos,mmneedle_{CONFIG}_neg"
MAX_GEN_TOKS = 16

LM_EVAL_YAML = """\
task: mmneedle_side_by_side
dataset_path: parquet
dataset_kwargs:
  data_files:
    test: {files}
test_split: test
output_type: generate_until
doc_to_image: !function utils.doc_to_image
doc_to_text: "{{{{prompt}}}}"
doc_to_target: answer
generation_kwargs:
  max_gen_toks: {max_gen_toks}
  do_sample: false
  temperature: 0.0
  until: []
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""

LM_EVAL_UTILS = '''\
def doc_to_image(doc):
    """The row's images (datasets decodes them to PIL), as RGB."""
    return [image.convert("RGB") for image in doc["images"]]
'''


def sh(cmd: list[str], **kwargs: object) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kwargs)  # type: ignore[call-overload]


def venv(path: Path, packages: list[list[str]]) -> Path:
    """A virtualenv at `path` with `packages` installed (one pip call per list); built once, reused after."""
    python = path / "bin" / "python"
    done = path / ".installed.json"
    if done.is_file() and json.loads(done.read_text()) == packages:
        return python
    if not python.exists():
        sh([sys.executable, "-m", "venv", str(path)])
        sh([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"])
    for group in packages:
        sh([str(python), "-m", "pip", "install", "-q", *group])
    done.write_text(json.dumps(packages))
    return python


def version_in(python: Path, package: str) -> str:
    out = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def prepare(work: Path, limit: int, env: dict[str, str], python: Path | None) -> dict[str, Path]:
    """The two virtualenvs (or `python`'s one environment), the build, the tiny LLaVA and lm-eval's task folder."""
    if python is not None:
        ours = lm_eval = python
        env = dict(env, PYTHONPATH=str(ROOT))  # the build and the tiny LLaVA by this checkout's code
        # pip compiled lm-eval's modules as it installed them; this checkout's are compiled alike, so that neither tool
        # compiles its sources in a timed run (where PYTHONDONTWRITEBYTECODE is set, a run writes no bytecode).
        sh(
            [
                str(python),
                "-m",
                "compileall",
                "-q",
                *(str(ROOT / package) for package in ("harness", "builders", "tasks")),
            ]
        )
    else:
        ours = venv(work / "venv-ours", [[TORCH], [f"{ROOT}[hf]"]])
        # This checkout as it is now (the virtualenv may hold an older one): no dependency changes, just the code.
        sh([str(ours), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(ROOT)])
        # The libraries both tools share at ours' versions (lm-eval's hf extra does not bring Pillow, which its image
        # processor needs).
        shared = [f"{name}=={version_in(ours, name)}" for name in ("transformers", "tokenizers", "pillow", "datasets")]
        lm_eval = venv(work / "venv-lmeval", [[TORCH], [LM_EVAL, *shared]])
    data = work / f"data_{limit}"
    if not (data / "mmneedle" / CONFIG).is_dir():
        sh(
            [
                str(ours.parent / "builders"),
                "build",
                "mmneedle",
                "--source",
                "synthetic",
                "--configs",
                CONFIG,
                "--limit",
                str(limit),
                "--out",
                str(data),
                "--quiet",
                "--overwrite",
            ],
            env=env,
        )
    model = work / "tiny-llava"
    if not (model / "config.json").is_file():
        sh(
            [
                str(ours),
                "-c",
                "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
                "from tiny_llava import build_tiny_llava; build_tiny_llava(Path(sys.argv[2]))",
                str(ROOT / "tests" / "support"),
                str(model),
            ],
            env=env,
        )
    tasks = work / f"lmeval_tasks_{limit}"
    tasks.mkdir(exist_ok=True)
    files = sorted((data / "mmneedle" / CONFIG).glob("*.parquet"))
    (tasks / "mmneedle_side_by_side.yaml").write_text(
        LM_EVAL_YAML.format(files=json.dumps([str(f) for f in files]), max_gen_toks=MAX_GEN_TOKS)
    )
    (tasks / "utils.py").write_text(LM_EVAL_UTILS)
    return {"ours": ours, "lm_eval": lm_eval, "data": data, "model": model, "tasks": tasks}


def command(tool: str, batch: int, setup: dict[str, Path], out: Path) -> list[str]:
    if tool == "ours":
        return [
            str(setup["ours"].parent / "harness"),
            "--tasks",
            OURS_TASKS,
            "--model",
            "hf",
            "--model_args",
            f"pretrained={setup['model']},threads=1",
            "--data_dir",
            str(setup["data"]),
            "--batch_size",
            str(batch),
            "--gen_kwargs",
            f"max_gen_toks={MAX_GEN_TOKS}",
            "--output_path",
            str(out),
            "--no_progress",
        ]
    return [
        str(setup["lm_eval"].parent / "lm_eval"),
        "--model",
        "hf-multimodal",
        "--model_args",
        f"pretrained={setup['model']},dtype=float32",
        "--tasks",
        "mmneedle_side_by_side",
        "--include_path",
        str(setup["tasks"]),
        "--batch_size",
        str(batch),
        "--apply_chat_template",
        "--output_path",
        str(out),
    ]


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> dict[str, float]:
    """Wall seconds, CPU seconds (user + sys) and peak RSS (MiB) of one process, and the load as it starts."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{err[-3000:]}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mib": usage.ru_maxrss / 1024,
        "load": load,
    }


def run_once(tool: str, batch: int, setup: dict[str, Path], work: Path, env: dict[str, str]) -> dict[str, float]:
    out = work / "out" / f"{tool}_b{batch}"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    # Ours runs this checkout: from its environment, or first on the path where both tools share one (`--python`).
    own = dict(env, PYTHONPATH=str(ROOT)) if tool == "ours" and setup["ours"] == setup["lm_eval"] else env
    figures = timed(command(tool, batch, setup, out), own, work)
    if tool == "ours":  # the runner alone (screen, generation, scoring), from the results file
        (results,) = out.glob("*/results_*.json")
        figures["evaluation_s"] = float(json.loads(results.read_text())["total_evaluation_time_seconds"])
    return figures


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def report(runs: dict[tuple[str, int], list[dict[str, float]]], batches: list[int], rows: int) -> str:
    lines = [
        f"{rows} rows of {CONFIG}, {MAX_GEN_TOKS} new tokens; medians of {len(runs[('ours', batches[0])])} "
        "interleaved rounds (wall / CPU user+sys), peak RSS the largest",
        "",
        "| batch | lm-eval wall | ours wall | ratio per round (wall) | lm-eval CPU | ours CPU | ratio (CPU) "
        "| peak RSS lm-eval / ours | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for b in batches:
        lm, ours = runs[("lm_eval", b)], runs[("ours", b)]
        per_round = " / ".join(f"{x['wall_s'] / y['wall_s']:.1f}x" for x, y in zip(lm, ours, strict=True))
        lines.append(
            f"| {b} | {median(lm, 'wall_s'):.1f} s | {median(ours, 'wall_s'):.1f} s | {per_round} | "
            f"{median(lm, 'cpu_s'):.1f} s | {median(ours, 'cpu_s'):.1f} s | "
            f"{median(lm, 'cpu_s') / median(ours, 'cpu_s'):.1f}x | "
            f"{max(r['peak_rss_mib'] for r in lm):,.0f} / {max(r['peak_rss_mib'] for r in ours):,.0f} MiB | "
            f"{min(r['load'] for r in lm + ours):.1f}-{max(r['load'] for r in lm + ours):.1f} |"
        )
    if len(batches) > 1:
        small, large = batches[0], batches[-1]
        for key in ("wall_s", "cpu_s"):
            speedup = 1 - median(runs[("ours", large)], key) / median(runs[("ours", small)], key)
            lines.append(f"\nours, batch {large} against batch {small} ({key[:-2]}): {100 * speedup:.0f} % faster")
        evals = ", ".join(f"batch {b} {median(runs[('ours', b)], 'evaluation_s'):.1f} s" for b in batches)
        lines.append(f"ours, the runner alone (results' total_evaluation_time_seconds, median): {evals}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=ROOT / ".scratch" / "bench_lm_eval")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=50, help="positive (and negative) rows: 2 x limit rows in all")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--short", action="store_true", help="12 + 12 rows, one round: a quick check")
    parser.add_argument("--python", type=Path, help="run both tools from this environment's Python (it holds lm-eval)")
    args = parser.parse_args()
    if args.short:
        args.limit, args.rounds = 12, 1
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
        HF_DATASETS_CACHE=str(work / "hf_datasets_cache"),
        MMLONGEVAL_HASH_CACHE=str(work / "file_hashes.json"),
    )
    env.pop("PYTHONPATH", None)  # each tool runs from its own virtualenv, never from a checkout on the path
    setup = prepare(work, args.limit, env, args.python.absolute() if args.python else None)
    tools = ["lm_eval", "ours"]
    for tool in tools:  # untimed: lm-eval's Arrow cache, both tools' page cache
        print(f"warm-up: {tool}", flush=True)
        run_once(tool, args.batches[-1], setup, work, env)
    runs: dict[tuple[str, int], list[dict[str, float]]] = {}
    for index in range(args.rounds):
        order = tools if index % 2 == 0 else tools[::-1]
        for batch in args.batches:
            for tool in order:
                figures = run_once(tool, batch, setup, work, env)
                runs.setdefault((tool, batch), []).append(figures)
                print(
                    f"round {index + 1} batch {batch} {tool}: " + ", ".join(f"{k} {v:.2f}" for k, v in figures.items()),
                    flush=True,
                )
    table = report(runs, args.batches, 2 * args.limit)
    print("\n" + table)
    (work / "side_by_side.json").write_text(
        json.dumps(
            {
                "rows": 2 * args.limit,
                "rounds": args.rounds,
                "machine": f"{os.cpu_count()} CPUs",
                "versions": {
                    "transformers": version_in(setup["ours"], "transformers"),
                    "lm_eval": version_in(setup["lm_eval"], "lm_eval"),
                },
                "runs": {f"{tool} b{b}": v for (tool, b), v in runs.items()},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
