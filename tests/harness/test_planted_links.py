"""Issue 30, item 3: a symbolic link planted in an output folder, where the run writes a file of its own (the lock,
a journal, the temporary file a journal or the judge log is rewritten through, the response cache), is refused
with one line, and the file it points to is left as it was. Before the fix the run truncated and overwrote it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.file_writing import write_lines
from harness.running.journal.journal_file import journal_name
from tests.support.report_runs import evaluate
from tests.support.run_setups import answering_red

PRECIOUS = b"the user's own file: not the harness's to write\n"


def _run(harness, toy_dir: Path, toy_tasks: Path, out: Path, *extra: str):
    return harness(*answering_red("toy_colors", toy_tasks, toy_dir, out), *extra)


def _plant(link: Path, tmp_path: Path) -> Path:
    target = tmp_path / "precious.txt"
    target.write_bytes(PRECIOUS)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return target


def _damage_one_line(journal: Path) -> None:
    """A journal that is compacted (rewritten through its temporary file) when the run ends."""
    header, first, *rest = journal.read_text().splitlines()
    journal.write_text("\n".join([header, first, "not json", *rest]) + "\n")


PLANTED = {  # name of the link in the model folder -> what to do before the run that meets it
    "the lock": ("harness.lock", None),
    "a journal": (journal_name("toy_colors"), None),
    "a journal's temporary file": (journal_name("toy_colors") + ".tmp", _damage_one_line),
}


@pytest.mark.parametrize("case", sorted(PLANTED))
def test_a_link_planted_where_the_run_writes_is_refused_and_its_target_untouched(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness, case: str
) -> None:
    name, prepare = PLANTED[case]
    out = tmp_path / "out"
    if prepare is not None:
        first = _run(harness, toy_dir, toy_tasks, out)
        assert first.code == 0, first.err
        prepare(out / "constant" / journal_name("toy_colors"))
    link = out / "constant" / name
    target = _plant(link, tmp_path)
    run = _run(harness, toy_dir, toy_tasks, out)
    assert run.code == 2 and "Traceback" not in run.err, run.err
    assert run.err.strip().splitlines()[-1] == (
        f"harness: error: {link} is a symbolic link (to {target}): the harness writes this file itself and never "
        "through a link; remove the link, or give another --output_path"
    )
    assert target.read_bytes() == PRECIOUS and link.is_symlink()
    link.unlink()
    again = _run(harness, toy_dir, toy_tasks, out)  # without the link, the same command runs
    assert again.code == 0, again.err
    assert target.read_bytes() == PRECIOUS


def test_a_whole_file_writer_never_writes_through_a_link_at_its_temporary_file(tmp_path: Path) -> None:
    """The writer behind results, sample logs and the judge log (`judge_<task>.jsonl.tmp` is written by it)."""
    target = _plant(tmp_path / "judge_t.jsonl.tmp", tmp_path)
    with pytest.raises(UserError, match="judge_t.jsonl.tmp is a symbolic link"):
        write_lines(tmp_path / "judge_t.jsonl", [json.dumps({"sample_id": "s"})])
    assert target.read_bytes() == PRECIOUS and not (tmp_path / "judge_t.jsonl").exists()
    (tmp_path / "judge_t.jsonl.tmp").unlink()
    (tmp_path / "judge_t.jsonl.tmp").write_text("left by a killed run")  # a plain leftover is replaced
    write_lines(tmp_path / "judge_t.jsonl", ["{}"])
    assert (tmp_path / "judge_t.jsonl").read_text() == "{}\n" and not (tmp_path / "judge_t.jsonl.tmp").exists()


@pytest.mark.parametrize("name", ["cache.sqlite3", "cache.sqlite3-wal", "cache.sqlite3-shm"])
def test_a_link_at_the_response_cache_or_its_side_files_is_refused(tmp_path: Path, name: str) -> None:
    from harness.running.cache import ResponseCache

    target = _plant(tmp_path / "model" / name, tmp_path)
    with pytest.raises(UserError, match=f"^{tmp_path / 'model' / name} is a symbolic link"):
        ResponseCache(tmp_path / "model" / "cache.sqlite3")
    assert target.read_bytes() == PRECIOUS


@pytest.mark.slow  # a run and a report drawing its figures
def test_a_report_replaces_a_link_planted_at_a_figure_or_its_manifest_and_leaves_the_target(
    tmp_path: Path, data_dir: Path, harness
) -> None:
    """`harness report` writes its figures (PNG, SVG) and their manifest beside the results: matplotlib's own
    `savefig(path)` opened a link there and overwrote what it pointed to."""
    out = tmp_path / "results"
    evaluate(harness, out, data_dir, "random", tasks="mmneedle_m10_n1_k2_pos,mmneedle_m1_n2_k1_pos")
    names = ["mmneedle_cells_random.png", "mmneedle_depth_random.svg", ".report_figures.json"]
    targets = {}
    for name in names:
        target = tmp_path / f"precious-{name}"
        target.write_bytes(PRECIOUS)
        (out / name).symlink_to(target)
        targets[name] = target
    report = harness("report", out)
    assert report.code == 0, report.err
    for name, target in targets.items():
        assert target.read_bytes() == PRECIOUS, name
        assert not (out / name).is_symlink() and (out / name).stat().st_size > 0, name
    assert (out / names[0]).read_bytes().startswith(b"\x89PNG") and b"<svg" in (out / names[1]).read_bytes()
    assert json.loads((out / names[2]).read_text())[names[0]]["sha256"]
    assert not list(out.glob("*.tmp"))
