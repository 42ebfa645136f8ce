"""docs/lm-eval.md's Python examples run as printed after the README's install (issue 54 item 10): in a fresh folder,
after the README's offline build (its `builders build ... --source synthetic` line, run as the README prints it), each
`python` block runs in a fresh interpreter of this install, whose extras need not hold lm-eval. Its first example
once named configs that build had not made, and `make_table` came from lm-eval.

This environment is the development one (`make install`: every extra, lm-eval among them), so the examples run with
what the README's `pip install -e '.[EXTRAS]'` does not install hidden: a `sitecustomize` on PYTHONPATH marks the
top-level modules of every other installed distribution absent (`sys.modules[name] = None`: `import` raises
ModuleNotFoundError and `importlib.util.find_spec` answers None, as where it is not installed), without a second
environment."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.harness.test_lm_eval_flags_on_every_benchmark import code_blocks
from tests.support.paths import PROJECT

# What `python3 -m venv` puts in an environment before the README's `pip install` runs.
VENV_OWN = frozenset({"pip", "setuptools", "wheel"})


def python_blocks() -> list[str]:
    text = (PROJECT / "docs" / "lm-eval.md").read_text(encoding="utf-8")
    return [block for language, block in code_blocks(text) if language == "python"]


def readme_offline_build() -> list[str]:
    """The README's offline `builders build` line (the block after "No GPU, no network?")."""
    text = (PROJECT / "README.md").read_text(encoding="utf-8")
    offline = text.split("No GPU, no network?", 1)[1]
    (block,) = [block for language, block in code_blocks(offline)[:1] if language == "sh"]
    (line,) = [line for line in block.splitlines() if line.startswith("builders build")]
    return shlex.split(line)


def readme_install_extras() -> set[str]:
    """The extras of the README's install line, `pip install -e '.[hf,view]'`."""
    text = (PROJECT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"pip install -e '\.\[([a-z,]+)\]'", text)
    assert found, "the README's install line"
    return set(found.group(1).split(","))


def installed_with(project: str, extras: set[str]) -> set[str]:
    """The installed distributions `pip install PROJECT[EXTRAS]` brings (canonical names): its requirements and theirs,
    each with the extras asked of it, as far as they are installed here."""
    brought: set[str] = set()
    done: set[tuple[str, str]] = set()
    todo = [(project, extra) for extra in {"", *extras}]
    while todo:
        name, extra = todo.pop()
        if (canonicalize_name(name), extra) in done:
            continue
        done.add((canonicalize_name(name), extra))
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:  # an optional requirement not installed here: nothing of it to hide
            continue
        brought.add(canonicalize_name(name))
        for text in requires:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": extra}):
                todo += [(requirement.name, wanted) for wanted in {"", *requirement.extras}]
    return brought


def hidden_modules() -> list[str]:
    """The top-level modules of every installed distribution that the README's install does not bring (a module that
    one it brings also provides, a namespace such as `google`, stays)."""
    kept = installed_with("mmlongeval", readme_install_extras()) | VENV_OWN
    return sorted(
        module
        for module, distributions in metadata.packages_distributions().items()
        if not {canonicalize_name(d) for d in distributions} & kept
    )


def readme_install_env(folder: Path) -> dict[str, str]:
    """The environment of a process that sees only what the README's install brings (and this checkout)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        "import sys\n\n"
        f"for name in {hidden_modules()!r}:\n"
        "    sys.modules.setdefault(name, None)  # not installed by the README's install\n",
        encoding="utf-8",
    )
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join([str(folder), str(PROJECT)]),
    }


def test_the_python_examples_are_the_ones_the_readmes_build_serves() -> None:
    build = readme_offline_build()
    configs = build[build.index("--configs") + 1]
    (example,) = [block for block in python_blocks() if "simple_evaluate(" in block]
    assert f"mmneedle_{configs}" in example and "from harness import make_table" in example
    assert "lm_eval" not in example  # the harness's own table: lm-eval is not installed by the README


def test_what_the_readmes_install_does_not_bring_is_hidden_and_what_it_brings_is_not() -> None:
    hidden = set(hidden_modules())
    assert {"torch", "transformers", "starlette", "uvicorn", "datasets", "PIL", "yaml"}.isdisjoint(hidden)
    assert {"pytest", "hypothesis", "mypy"} <= hidden  # the dev extra's
    if importlib.util.find_spec("lm_eval") is not None:
        assert "lm_eval" in hidden


@pytest.mark.slow  # the README's build and each example in a fresh interpreter (~10 s)
def test_each_python_example_runs_as_printed_after_the_readmes_install_and_offline_build(tmp_path: Path) -> None:
    env = {**readme_install_env(tmp_path / "readme_install"), "MMLONGEVAL_DATA_DIR": str(tmp_path / "no-data")}
    work = tmp_path / "work"
    work.mkdir()
    absent = subprocess.run(
        [sys.executable, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('lm_eval') is not None)"],
        cwd=work, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert absent.returncode == 0, f"lm_eval can be imported where the examples run\n{absent.stderr[-3000:]}"
    done = subprocess.run(
        [sys.executable, "-m", *readme_offline_build()], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    blocks = python_blocks()
    assert blocks
    for block in blocks:
        ran = subprocess.run(
            [sys.executable, "-c", block], cwd=work, env=env, capture_output=True, text=True, timeout=600
        )
        assert ran.returncode == 0, f"{block}\n{ran.stderr[-3000:]}"
        assert "| mmneedle_m10_n2_k1_pos | 1.0 | 2 | existence_acc |" in ran.stdout, ran.stdout
