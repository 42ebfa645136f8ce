#!/usr/bin/env python
"""Simulation: how much of a run's prefill a block prefix cache (vLLM's) serves, for three request orders.

The requests are the harness's own: each task is loaded and each row turned into a `Request` by
`Task.build_request`, as the runner does. A request's prompt becomes the token sequence a model would prefill:
chat markers per message, each text part by an in-memory word tokenizer (words and punctuation, one token
each: fewer tokens than a BPE gives, so text weighs a little less than in a real model), each image as its row
figure's count of placeholder tokens keyed by the image's sha256 and the token's offset in it.

The cache works as vLLM's (v1 KV cache manager, automatic prefix caching): only full blocks are cached, a
block's hash chains its parent's hash with its tokens (and, for tokens of an image, the image's content hash),
a request reuses the longest run of cached blocks from its start (never its last token: at least one is
computed), and blocks are evicted least recently used, a request's blocks released tail first (so a prefix
outlives its tail). Requests prefill one after another: vLLM's scheduler gives running requests the step's
token budget first, so with long prompts a request's prefill ends before the next one's starts; an engine
that prefills several at once shares less, so these figures are an upper bound for each order.

Orders: `dataset` (tasks in turn, rows in dataset order), `length` (the runner without the cache order: each task
long first, tasks in turn), `cache` (`harness.models.shared.scheduling.prefix_order.cache_order` over every task's requests together,
as `Runner.run_together` hands them to vLLM: the longest request first, then each group of requests sharing a prefix
short to long), and `cache, grow=False` (`cache_order(..., grow=False)`, the group order before: each group
from its longest length down).

Sources: `--data DIR --tasks ...` (a built data dir), or `--mmlongbench-ids N` (builds the length-true MMLongBench
fixture, `--source fixture:full`, of `--categories` (default niah) at 8K-128K: each id one haystack shown at every
depth and growing with length, as in the release).

    .venv/bin/python bench/prefix_cache.py --mmlongbench-ids 2 --work /tmp/pc [--write-results]
    .venv/bin/python bench/prefix_cache.py --data DIR --tasks mmneedle_m10_n2_k1_neg ... [--label NAME]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))
from harness.api import ImagePart, Request  # noqa: E402
from harness.models.shared.scheduling.prefix_order import cache_order, prompt_key  # noqa: E402

# A cache the size of an H100's KV for a 7B VLM (Qwen2.5-VL-7B) under vLLM's gpu_memory_utilization 0.9:
KV_BYTES_PER_TOKEN = 2 * 28 * 4 * 128 * 2  # K and V x 28 layers x 4 KV heads x head dim 128 x bf16 = 57,344 B
GPU_BYTES = 80 * 10**9  # H100 80 GB
WEIGHT_BYTES = int(8.29e9 * 2)  # 8.29 B parameters in bf16
ACTIVATION_BYTES = 5 * 10**9  # vLLM's profiled peak (vision encoder on a many-image prompt), assumed
H100_KV_TOKENS = (int(GPU_BYTES * 0.9) - WEIGHT_BYTES - ACTIVATION_BYTES) // KV_BYTES_PER_TOKEN  # ~876,000
BLOCK_TOKENS = 16  # vLLM's default block size
WORD = re.compile(r"\w+|[^\w\s]")

Run = tuple[object, int]  # (token key, length): a text token (length 1) or an image's placeholder tokens


def token_runs(request: Request) -> list[Run]:
    """The prompt as a model prefills it: per message a role marker, its text tokens and its images."""
    runs: list[Run] = []
    for message in request.messages:
        runs += [("<|im_start|>", 1), (message.role, 1)]
        for part in message.content:
            if isinstance(part, ImagePart):
                runs.append((("image", part.image.sha256), 0))  # length filled below, in image order
            else:
                runs += [(word, 1) for word in WORD.findall(part.text)]
        runs.append(("<|im_end|>", 1))
    runs += [("<|im_start|>", 1), ("assistant", 1)] + [(w, 1) for w in WORD.findall(request.assistant_prefix)]
    counts = iter(request.image_tokens)
    return [(key, next(counts)) if length == 0 else (key, length) for key, length in runs]


def block_hashes(runs: Sequence[Run], block: int) -> tuple[list[int], int]:
    """Chained hashes of the full blocks, and the prompt's length in tokens."""
    hashes: list[int] = []
    parent: int | None = None
    current: list[object] = []
    fill = total = 0
    for key, length in runs:
        offset = 0
        while offset < length:
            take = min(length - offset, block - fill)
            current.append(key if length == 1 else (key, offset, take))  # an image's tokens by hash and offset
            fill, offset = fill + take, offset + take
            if fill == block:
                parent = hash((parent, tuple(current)))
                hashes.append(parent)
                current, fill = [], 0
        total += length
    return hashes, total


class PrefixCache:
    """Full blocks by chained hash, least recently used evicted first."""

    def __init__(self, block: int, capacity_tokens: int) -> None:
        if capacity_tokens < block:
            raise ValueError(f"capacity {capacity_tokens} tokens holds no block of {block}")
        self.block = block
        self.max_blocks = capacity_tokens // block
        self.blocks: OrderedDict[int, None] = OrderedDict()

    def prefill(self, hashes: Sequence[int], total: int) -> int:
        """Run one request; returns its tokens served from the cache."""
        hit = 0
        for h in hashes:
            if h not in self.blocks:
                break
            hit += 1
        if hit * self.block >= total:  # at least the last token is computed
            hit -= 1
        for h in reversed(hashes[: self.max_blocks]):  # released tail first: the prefix is the most recent
            self.blocks[h] = None
            self.blocks.move_to_end(h)
        while len(self.blocks) > self.max_blocks:
            self.blocks.popitem(last=False)
        return hit * self.block


@dataclass
class Tally:
    prefill: int = 0
    cached: int = 0

    @property
    def ratio(self) -> float:
        return self.cached / self.prefill if self.prefill else 0.0


@dataclass(frozen=True)
class Prompt:
    task: str
    doc_id: int
    tokens: int  # the row figures' count (the runner's long-first key)
    hashes: tuple[int, ...]
    length: int  # simulated tokens
    key: tuple


def load_prompts(data: Path, tasks: Sequence[str], block: int) -> list[Prompt]:
    """Every row of each task as the runner builds its request (task order, dataset order)."""
    from harness.config.task_index import TaskIndex
    from harness.running.task.task import Task

    index = TaskIndex()
    prompts = []
    for name in tasks:
        task = Task(index.tasks[name])
        task.load(data)
        settings = task.generation_settings()
        for doc_id, doc in task.iter_docs():
            request = task.build_request(doc_id, doc, settings)
            if not isinstance(request, Request):
                raise SystemExit(f"{name} row {doc_id}: {request.reason}")
            hashes, length = block_hashes(token_runs(request), block)
            prompts.append(Prompt(name, doc_id, request.token_count, tuple(hashes), length, prompt_key(request)))
    return prompts


def orders(prompts: Sequence[Prompt]) -> dict[str, list[int]]:
    tasks = list(dict.fromkeys(p.task for p in prompts))
    by_task = {t: [i for i, p in enumerate(prompts) if p.task == t] for t in tasks}
    tokens, keys = [p.tokens for p in prompts], [p.key for p in prompts]
    return {
        "dataset": list(range(len(prompts))),
        "length": [i for t in tasks for i in sorted(by_task[t], key=lambda i: (-prompts[i].tokens, prompts[i].doc_id))],
        "cache, grow=False": cache_order(tokens, keys, grow=False),
        "cache": cache_order(tokens, keys),
    }


def simulate(prompts: Sequence[Prompt], order: Sequence[int], block: int, capacity: int) -> dict[str, Tally]:
    cache = PrefixCache(block, capacity)
    tallies: dict[str, Tally] = {}
    for i in order:
        p = prompts[i]
        tally = tallies.setdefault(p.task, Tally())
        tally.prefill += p.length
        tally.cached += cache.prefill(p.hashes, p.length)
    return tallies


def _rows(results: dict[str, dict[str, Tally]], groups: dict[str, list[str]], rows: dict[str, int]) -> list[str]:
    """One line per group of tasks: rows, prefill tokens, then tokens served (and the ratio) in each order."""
    lines = []
    for name, tasks in groups.items():
        sums = {
            order: Tally(sum(tallies[t].prefill for t in tasks), sum(tallies[t].cached for t in tasks))
            for order, tallies in results.items()
        }
        first = next(iter(sums.values()))
        cells = " | ".join(f"{t.cached:,} ({t.ratio:.1%})" for t in sums.values())
        lines.append(f"| {name} | {sum(rows[t] for t in tasks)} | {first.prefill:,} | {cells} |")
    return lines


def table(prompts: Sequence[Prompt], block: int, capacity: int) -> list[str]:
    """Per task, then per length (a task named ..._<N>k) where there are several, then the total."""
    results = {name: simulate(prompts, order, block, capacity) for name, order in orders(prompts).items()}
    tasks = list(dict.fromkeys(p.task for p in prompts))
    rows = {t: sum(1 for p in prompts if p.task == t) for t in tasks}
    header = [
        "| task | rows | prefill tokens | " + " | ".join(f"cached: {name} order" for name in results) + " |",
        "|---|---:|---:|" + "---:|" * len(results),
    ]
    by_length: dict[str, list[str]] = {}
    for task in tasks:
        length = re.search(r"_(\d+k)$", task)
        if length:
            by_length.setdefault(length.group(1), []).append(task)
    lines = header + _rows(results, {t: [t] for t in tasks}, rows)
    if len(by_length) > 1:
        lines += _rows(results, {f"**{length}**": names for length, names in by_length.items()}, rows)
    return lines + _rows(results, {"**total**": tasks}, rows)


def build_mmlongbench(work: Path, ids: int, categories: Sequence[str]) -> tuple[Path, list[str]]:
    """The length-true fixture (`builders build mmlongbench --source fixture:full`) of the leaves of `categories` at
    8K-128K, `ids` ids per file."""
    from builders.mmlongbench.leaves import LEAVES, LENGTHS

    out = work / f"data_{ids}_{'_'.join(categories)}"
    configs = [f"{leaf.name}_{length}" for length in LENGTHS for leaf in LEAVES if leaf.category in categories]
    if not (out / "mmlongbench").is_dir():
        subprocess.run(
            [
                sys.executable,
                "-c",
                "from builders.cli import main; main()",
                "build",
                "mmlongbench",
                "--source",
                "fixture:full",
                "--fixture-ids",
                str(ids),
                "--configs",
                ",".join(configs),
                "--out",
                str(out),
                "--overwrite",
                "--quiet",
            ],
            check=True,
        )
    return out, [f"mmlongbench_{c}" for c in configs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="a built data dir (with --tasks)")
    parser.add_argument("--tasks", nargs="*", default=[])
    parser.add_argument("--mmlongbench-ids", type=int, help="build the length-true MMLongBench fixture, N ids per file")
    parser.add_argument("--categories", nargs="+", default=["niah"], help="its categories (vrag niah icl summ docvqa)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/prefix_cache"))
    parser.add_argument("--block", type=int, default=BLOCK_TOKENS)
    parser.add_argument("--capacity", type=int, default=H100_KV_TOKENS, help="cache size in tokens")
    args = parser.parse_args()
    if args.mmlongbench_ids:
        data, tasks = build_mmlongbench(args.work, args.mmlongbench_ids, args.categories)
    elif args.data and args.tasks:
        data, tasks = args.data, args.tasks
    else:
        parser.error("give --mmlongbench-ids N, or --data DIR --tasks ...")
    prompts = load_prompts(data, tasks, args.block)
    print(
        f"block {args.block} tokens, capacity {args.capacity:,} tokens; simulated tokens per prompt: "
        f"{min(p.length for p in prompts):,}-{max(p.length for p in prompts):,}"
    )
    print("\n".join(table(prompts, args.block, args.capacity)))


if __name__ == "__main__":
    main()
