#!/usr/bin/env python
"""What Triton's on-disk cache saves when a kernel is compiled while generating: vLLM's vision rotary kernel
(`vllm_flash_attn/ops/triton/rotary.py`, which Qwen2.5-VL's vision tower runs and vLLM 0.25 logs as "Triton kernel JIT
compilation during inference: rotary_kernel" on its first `generate`) compiled for an H100 (sm_90) on this CPU, in
a fresh process each time, on an empty cache and on the cache a first process filled (issue 21's 8K gap,
bench/RESULTS.md). No GPU is needed: Triton compiles for a target without one. Two specialisations are compiled per
process, as a changing sequence length gives (Triton specialises an integer argument on divisibility by 16).

    .venv/bin/python bench/triton_compile_cache.py [--repeats 3] [--rotary PATH_TO_rotary.py]

The rotary kernel comes from the installed vLLM (read by path: vLLM itself is not imported); the figures are this
machine's Triton and CPU, not a GPU machine's.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONSTANTS = {
    "BLOCK_K": 32,
    "IS_SEQLEN_OFFSETS_TENSOR": False,
    "IS_VARLEN": False,
    "INTERLEAVED": False,
    "CONJUGATE": False,
    "BLOCK_M": 8,
    "CU_SEQLENS": None,
}
POINTERS = ("OUT", "X", "COS", "SIN")


def installed_rotary() -> Path:
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("triton_compile_cache: vLLM is not installed here; pass --rotary PATH")
    return Path(spec.submodule_search_locations[0]) / "vllm_flash_attn" / "ops" / "triton" / "rotary.py"


def compile_rotary(rotary: Path, seqlen_divisible: bool) -> float:
    """Seconds to compile the rotary kernel for sm_90 (bf16, not varlen), `seqlen` specialised or not."""
    from triton import compile as triton_compile
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    spec = importlib.util.spec_from_file_location("vllm_rotary", rotary)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = module.rotary_kernel
    signature, constants, attrs = {}, {}, {}
    for i, name in enumerate(kernel.arg_names):
        if name in CONSTANTS:
            signature[name] = "constexpr"
            constants[(i,)] = CONSTANTS[name]
        elif name in POINTERS:
            signature[name] = "*bf16"
            attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            signature[name] = "i32"
            if seqlen_divisible and name in ("seqlen", "seqlen_ro"):
                attrs[(i,)] = [["tt.divisibility", 16]]
    started = time.perf_counter()
    triton_compile(
        ASTSource(fn=kernel, signature=signature, constexprs=constants, attrs=attrs), target=GPUTarget("cuda", 90, 32)
    )
    return time.perf_counter() - started


def child(rotary: Path) -> dict[str, float]:
    return {"first": compile_rotary(rotary, False), "second": compile_rotary(rotary, True)}


def one_process(rotary: Path, cache: Path) -> dict[str, float]:
    env = {"TRITON_CACHE_DIR": str(cache), "TRITON_DEFAULT_FP_FUSION": "1"}
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--rotary", str(rotary)],
        env={**os.environ, **env},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rotary", type=Path, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    rotary = args.rotary or installed_rotary()
    if args.child:
        print(json.dumps(child(rotary)))
        return 0
    runs: dict[str, list[dict[str, float]]] = {"empty cache": [], "filled cache": []}
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as cache:
            runs["empty cache"].append(one_process(rotary, Path(cache)))
            runs["filled cache"].append(one_process(rotary, Path(cache)))
    import triton

    print(f"Triton {triton.__version__}, {rotary}; median of {args.repeats} fresh processes each:\n")
    print("| cache | first compile in the process s | second specialisation s |\n|---|---|---|")
    for name, timings in runs.items():
        first = statistics.median(t["first"] for t in timings)
        second = statistics.median(t["second"] for t in timings)
        print(f"| {name} | {first:.2f} | {second:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
