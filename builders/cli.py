"""`builders`: build benchmark datasets and push them to the Hugging Face Hub.

    builders list
    builders build mmneedle --source synthetic --limit 4 --out data/
    builders push data/mmneedle --repo ORG/mmneedle --tag v1.0.0 --dry-run

User mistakes end with exit code 2 and a one-line message naming the file or value.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from builders.core.errors import BuildError

BENCHMARKS = ("mmneedle",)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="builders", description="Build benchmark datasets and push them to the Hub."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{list,build,push}")

    commands.add_parser("list", help="list the benchmarks and their configs")

    build = commands.add_parser(
        "build",
        help="build a benchmark into OUT/<benchmark>",
        description="Build a benchmark into OUT/<benchmark>, a folder laid out like a Hub dataset repo "
        "(load it with datasets.load_dataset(folder, config)).",
    )
    build.add_argument("benchmark", choices=BENCHMARKS)
    build.add_argument(
        "--source",
        default="synthetic",
        help="captioned images: 'synthetic' (drawn scenes, offline; 'synthetic:COUNT' for COUNT images, "
        "default 10000) or 'coco=DIR' (DIR/annotations/captions_val2014.json + DIR/val2014/*.jpg). Default: synthetic",
    )
    build.add_argument(
        "--official-metadata",
        metavar="DIR",
        help="rebuild the paper's exact samples from the authors' metadata_stitched/ folder (needs --source coco=DIR)",
    )
    build.add_argument(
        "--configs", nargs="+", metavar="NAME", help="configs to build, e.g. m10_n4_k1 (default: all 21)"
    )
    build.add_argument("--full", action="store_true", help="all 5,000 positives + 5,000 negatives per config")
    build.add_argument(
        "--limit",
        type=int,
        metavar="L",
        help="at most L positives and L negatives per config (default: the paper's subset, 1,000 + 1,000 for K=1, 100 + 100 for K>1)",
    )
    build.add_argument("--seed", type=int, default=0, help="sampling seed for regenerate mode (default 0)")
    build.add_argument(
        "--num-proc", type=int, default=2, help="worker threads for decode/resize/encode (default 2)"
    )
    build.add_argument(
        "--text-tokenizer",
        default="approx",
        metavar="SPEC",
        help="'approx' (offline, default) or 'hf:<tokenizer.json path or hub name>' for the text_tokens column",
    )
    build.add_argument(
        "--strip-captions", action="store_true", help="strip white space around captions (default: raw)"
    )
    build.add_argument(
        "--overwrite", action="store_true", help="replace OUT/<benchmark> even if it holds a different build"
    )
    build.add_argument(
        "--memory-budget-mb",
        type=int,
        default=4096,
        metavar="MB",
        help="memory for decoded source images (256x256 tiles); beyond it they go to a temporary spill file (default 4096)",
    )
    build.add_argument("--quiet", action="store_true", help="no progress bars")
    build.add_argument(
        "--out", required=True, metavar="DIR", help="output folder; the dataset goes to DIR/<benchmark>"
    )

    push = commands.add_parser("push", help="upload a built folder to the Hub and tag the commit")
    push.add_argument("folder", help="a built dataset folder, e.g. data/mmneedle")
    push.add_argument("--repo", required=True, metavar="ORG/NAME", help="Hub dataset repository")
    push.add_argument(
        "--tag", required=True, metavar="vX.Y.Z", help="semantic version tag for the upload's commit"
    )
    push.add_argument("--private", action="store_true", help="create the repository as private")
    push.add_argument("--dry-run", action="store_true", help="list what would be uploaded; no network")
    push.add_argument("--token", help="Hub token (default: the logged-in token or HF_TOKEN)")
    return parser


def _list() -> None:
    from builders.mmneedle import CONFIGS

    print(f"mmneedle: {len(CONFIGS)} configs (M images of N x N sub-images, K needles)")
    for name, cfg in CONFIGS.items():
        print(
            f"  {name:<10}  M={cfg.M:<2} N={cfg.N} K={cfg.K}  paper subset {cfg.paper_count}+{cfg.paper_count} rows"
        )


def _build(args: argparse.Namespace) -> None:
    from builders.mmneedle import build_mmneedle

    path = build_mmneedle(
        source=args.source,
        out_dir=args.out,
        configs=args.configs,
        official_metadata=args.official_metadata,
        full=args.full,
        limit=args.limit,
        seed=args.seed,
        num_proc=args.num_proc,
        text_tokenizer=args.text_tokenizer,
        strip_captions=args.strip_captions,
        overwrite=args.overwrite,
        progress=not args.quiet,
        memory_budget_mb=args.memory_budget_mb,
    )
    from builders.core.output import read_manifest

    manifest = read_manifest(path) or {}
    for name, info in manifest.get("configs", {}).items():
        print(
            f"{name}: {info['rows']} rows ({info['positives']} positive, {info['negatives']} negative), {info['num_bytes']:,} bytes"
        )
    print(f"built {path} (content {manifest.get('content_hash')})")
    first = next(iter(manifest.get("configs", {})), "m1_n2_k1")
    print(f'load with: datasets.load_dataset("{path.resolve()}", "{first}", split="test")')


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            _list()
        elif args.command == "build":
            _build(args)
        elif args.command == "push":
            from builders.core.push import push

            push(
                args.folder, args.repo, args.tag, private=args.private, dry_run=args.dry_run, token=args.token
            )
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: nothing was left that looks like a complete dataset", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
