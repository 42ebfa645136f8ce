#!/usr/bin/env python3
"""Carry Python wheels to a GPU machine that has no network and takes a limited size per transfer.

Here (with network), `pack` downloads the pinned wheels of a requirements file for the machine's Python and
platform, writes them as one tar and splits it into numbered piece folders, each under `--piece-mib` and each
holding a manifest of every piece's and every wheel's sha256. There (stdlib only), `stash` checks the pieces
that just arrived and moves them into a holding folder that outlives the transfer folder, and `install` joins
them, checks the whole tar and every wheel against the manifest, and installs the wheels with
`pip install --no-index --no-deps --target`.

    python3 scripts/carry_wheels.py pack scripts/vllm025_wheels.txt --out .whl/carry      # here
    # send .whl/carry/01, then 02, ... (one folder per transfer), and on the machine after each:
    python3 scripts/carry_wheels.py stash .whl/carry/01 --into /tmp/carry
    # once every piece has arrived:
    python3 scripts/carry_wheels.py install /tmp/carry --target /tmp/site && export PYTHONPATH=/tmp/site

`--no-deps` on both sides: the requirements file names every wheel that must travel (the machine's own
packages are not downloaded again), so its list is the whole of what is installed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

MANIFEST = "manifest.json"
BUNDLE = "wheels.tar"
MIB = 1 << 20
# pip matches manylinux tags exactly: name every glibc level a wheel of these packages is built for.
PLATFORMS = [
    "manylinux_2_39_x86_64",
    "manylinux_2_35_x86_64",
    "manylinux_2_34_x86_64",
    "manylinux_2_31_x86_64",
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
    "linux_x86_64",
]


class CarryError(Exception):
    """A user-facing failure: printed as one line, exit code 2."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(MIB), b""):
            digest.update(block)
    return digest.hexdigest()


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(path: Path) -> list[str]:
    """The distribution names of a requirements file (one `name==version` a line; `#` comments)."""
    names = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==[A-Za-z0-9.+!_-]+", line)
        if match is None:
            raise CarryError(f"{path}:{number}: expected one pinned requirement 'name==version', got {line!r}")
        names.append(normalise(match.group(1)))
    if len(set(names)) != len(names):
        raise CarryError(f"{path}: a package is listed twice (two versions of one package stop the install)")
    return names


def wheel_name(path: Path) -> str:
    return normalise(path.name.split("-", 1)[0])


def download(
    requirements: Path, dest: Path, python_version: str, pip: list[str], find_links: Path | None = None
) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    command = [
        *pip,
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        python_version,
        "--implementation",
        "cp",
        "-d",
        str(dest),
        "-r",
        str(requirements),
    ]
    if find_links is not None:  # wheels already at hand: no index asked
        command += ["--no-index", "--find-links", str(find_links)]
    for platform in PLATFORMS:
        command += ["--platform", platform]
    subprocess.run(command, check=True)
    wanted = requirement_names(requirements)
    wheels = {wheel_name(p): p for p in dest.glob("*.whl")}
    missing = [n for n in wanted if n not in wheels]
    if missing:
        raise CarryError(f"pip downloaded no wheel for {', '.join(missing)}")
    return [wheels[n] for n in sorted(wanted)]


def write_bundle(wheels: list[Path], bundle: Path) -> None:
    """One uncompressed tar of the wheels (already zip-compressed), byte-identical for the same wheels."""
    with tarfile.open(bundle, "w", format=tarfile.PAX_FORMAT) as tar:
        for wheel in sorted(wheels, key=lambda p: p.name):
            info = tar.gettarinfo(str(wheel), arcname=wheel.name)
            info.mtime, info.uid, info.gid, info.uname, info.gname, info.mode = 0, 0, 0, "", "", 0o644
            with wheel.open("rb") as f:
                tar.addfile(info, f)


def split(bundle: Path, out: Path, piece_bytes: int) -> list[dict]:
    """Cut `bundle` into pieces of equal size (the last one shorter), each in a folder 01, 02, ..."""
    size = bundle.stat().st_size
    count = max(1, -(-size // piece_bytes))
    each = -(-size // count)  # as even as possible: no last piece of a few bytes
    pieces = []
    with bundle.open("rb") as src:
        for index in range(1, count + 1):
            folder = out / f"{index:02d}"
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{BUNDLE}.part{index:02d}"
            digest, written = hashlib.sha256(), 0
            with path.open("wb") as dst:
                while written < each:
                    block = src.read(min(MIB, each - written))
                    if not block:
                        break
                    dst.write(block)
                    digest.update(block)
                    written += len(block)
            pieces.append({"folder": folder.name, "name": path.name, "size": written, "sha256": digest.hexdigest()})
    return pieces


def pack(args: argparse.Namespace) -> int:
    out: Path = args.out
    if out.exists() and any(out.iterdir()):
        if not args.overwrite:
            raise CarryError(f"{out} is not empty (--overwrite replaces it)")
        shutil.rmtree(out)
    wheels = download(
        args.requirements,
        out / "wheels",
        args.python_version,
        args.pip or [sys.executable, "-m", "pip"],
        args.find_links,
    )
    bundle = out / BUNDLE
    write_bundle(wheels, bundle)
    pieces = split(bundle, out, int(args.piece_mib * MIB))
    manifest = {
        "requirements": args.requirements.name,
        "python_version": args.python_version,
        "bundle": {"name": BUNDLE, "size": bundle.stat().st_size, "sha256": sha256_file(bundle)},
        "pieces": pieces,
        "wheels": [{"name": w.name, "size": w.stat().st_size, "sha256": sha256_file(w)} for w in wheels],
    }
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    for piece in pieces:
        (out / piece["folder"] / MANIFEST).write_text(text)
    bundle.unlink()  # the pieces hold it; keep the downloaded wheels for a repack
    print(f"{len(wheels)} wheels, {manifest['bundle']['size'] / MIB:.1f} MiB in {len(pieces)} pieces:")
    for piece in pieces:
        print(f"  {out / piece['folder']}  {piece['size'] / MIB:.1f} MiB")
    return 0


def read_manifest(folder: Path) -> dict:
    path = folder / MANIFEST
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise CarryError(f"{path}: no manifest (is this a piece folder written by 'pack'?)") from None
    except json.JSONDecodeError as err:
        raise CarryError(f"{path}: not a JSON manifest: {err}") from None


def check_piece(path: Path, entry: dict) -> None:
    if path.stat().st_size != entry["size"] or sha256_file(path) != entry["sha256"]:
        raise CarryError(f"{path}: size or sha256 differs from the manifest (a broken transfer: send it again)")


def stash(args: argparse.Namespace) -> int:
    """Check the pieces in a transfer folder and move them (and the manifest) into the holding folder."""
    manifest = read_manifest(args.folder)
    hold: Path = args.into
    hold.mkdir(parents=True, exist_ok=True)
    held = hold / MANIFEST
    if held.exists() and json.loads(held.read_text())["bundle"] != manifest["bundle"]:
        raise CarryError(f"{args.folder}: its pieces belong to another bundle than the ones in {hold}")
    moved = 0
    for entry in manifest["pieces"]:
        path = args.folder / entry["name"]
        if path.exists():
            check_piece(path, entry)
            shutil.move(str(path), hold / entry["name"])
            moved += 1
    if not moved:
        raise CarryError(f"{args.folder}: none of the bundle's pieces is here")
    shutil.copyfile(args.folder / MANIFEST, held)
    have = sum((hold / e["name"]).exists() for e in manifest["pieces"])
    print(f"stash: {moved} piece(s) checked into {hold}; {have} of {len(manifest['pieces'])} there")
    return 0


def install(args: argparse.Namespace) -> int:
    hold: Path = args.hold
    manifest = read_manifest(hold)
    missing = [e["name"] for e in manifest["pieces"] if not (hold / e["name"]).exists()]
    if missing:
        raise CarryError(f"{hold}: pieces still missing: {', '.join(missing)}")
    bundle = hold / BUNDLE
    digest = hashlib.sha256()
    with bundle.open("wb") as dst:
        for entry in manifest["pieces"]:
            path = hold / entry["name"]
            check_piece(path, entry)
            with path.open("rb") as src:
                for block in iter(lambda s=src: s.read(MIB), b""):
                    dst.write(block)
                    digest.update(block)
    if digest.hexdigest() != manifest["bundle"]["sha256"]:
        raise CarryError(f"{bundle}: the joined pieces do not give the bundle's sha256")
    for entry in manifest["pieces"]:
        (hold / entry["name"]).unlink()  # the bundle holds them now; halve the disk used
    wheels = hold / "wheels"
    wheels.mkdir(exist_ok=True)
    expected = {w["name"]: w for w in manifest["wheels"]}
    with tarfile.open(bundle) as tar:
        for member in tar.getmembers():
            if member.name not in expected or not member.isfile():
                raise CarryError(f"{bundle}: unexpected member {member.name!r}")
        tar.extractall(wheels, filter="data")
    for name, entry in expected.items():
        check_piece(wheels / name, entry)
    bundle.unlink()
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-index",
        "--no-deps",
        "--no-compile",
        "--no-cache-dir",
        "--upgrade",
        "--target",
        str(args.target),
        *sorted(str(wheels / n) for n in expected),
    ]
    if not args.quiet:
        print(" ".join(command[:10]), f"... ({len(expected)} wheels)")
    subprocess.run([*command[:4], "-q", *command[4:]] if args.quiet else command, check=True)
    print(f"install: {len(expected)} wheels, each checked against its sha256, installed into {args.target}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="here: download the wheels, split them into piece folders with a manifest")
    p.add_argument("requirements", type=Path, help="pinned requirements, one 'name==version' a line")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--piece-mib", type=float, default=58.0, help="largest piece (default 58 MiB)")
    p.add_argument("--python-version", default="3.12", help="the GPU machine's Python (default 3.12)")
    p.add_argument("--pip", nargs="+", help="pip command (default: this interpreter's -m pip)")
    p.add_argument("--find-links", type=Path, help="take the wheels from this folder, not from the index")
    p.add_argument("--overwrite", action="store_true")
    s = sub.add_parser("stash", help="there: check a transfer folder's pieces and move them into a holding folder")
    s.add_argument("folder", type=Path)
    s.add_argument("--into", type=Path, required=True)
    i = sub.add_parser("install", help="there: join the held pieces, check every sha256, pip install --target")
    i.add_argument("hold", type=Path)
    i.add_argument("--target", type=Path, required=True)
    i.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        return {"pack": pack, "stash": stash, "install": install}[args.command](args)
    except CarryError as err:
        print(f"carry_wheels: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
