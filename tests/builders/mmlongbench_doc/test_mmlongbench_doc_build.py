"""MMLongBench-Doc's builder on its offline fixture and on release folders in the release's layouts."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from builders.core import contract
from builders.core.errors import BuildError
from builders.mmlongbench_doc import build_mmlongbench_doc
from builders.mmlongbench_doc.fixture import DOCUMENTS, PAGE_POINTS, PICTURE, SAMPLES, TEXT, write_fixture

PAGE_PIXELS = [2 * points for points in PAGE_POINTS]  # 144 dpi is twice the 72 points an inch


def rows(build: Path) -> list[dict]:
    return pq.read_table(sorted((build / "test").glob("*.parquet"))).to_pylist()


def parquet_digests(build: Path) -> dict[str, str]:
    return {
        str(p.relative_to(build)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(build.rglob("*.parquet"))
    }


@pytest.fixture(scope="module")
def fixture_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = build_mmlongbench_doc("fixture", tmp_path_factory.mktemp("doc"))
    assert path is not None
    return path


def test_the_fixture_builds_every_question_in_order_with_its_documents_pages(fixture_build: Path) -> None:
    built = rows(fixture_build)
    assert [r["question"] for r in built] == [s[1] for s in SAMPLES]
    assert [r["id"] for r in built] == [f"q{i:04d}" for i in range(len(SAMPLES))]
    first = built[0]
    pages = len(DOCUMENTS[first["doc_id"]][1])
    assert first["num_images"] == first["doc_pages"] == pages
    assert first["prompt"] == first["question"] + contract.IMAGE_PLACEHOLDER * pages  # the question, then the pages
    assert first["image_sizes"] == [PAGE_PIXELS] * pages
    assert built[1]["evidence_sources"] == ["Table"] and built[7]["evidence_pages"] == [2, 3]
    assert {r["answer_format"] for r in built} == {"Str", "Int", "Float", "List", "None"}
    # Pages are stored once (shared storage), however many questions show them.
    table = pq.read_table(sorted((fixture_build / "image_table").glob("*.parquet")))
    assert table.num_rows == sum(len(pages) for _, pages in DOCUMENTS.values())
    manifest = json.loads((fixture_build / "build_manifest.json").read_text())
    assert manifest["request"]["max_pages"] == 120 and manifest["request"]["resolution"] == 144
    assert "synthetic" in manifest["caveats"]
    assert manifest["request"]["renderer"].startswith("pymupdf ")


def test_a_second_build_is_byte_identical(fixture_build: Path, tmp_path: Path) -> None:
    again = build_mmlongbench_doc("fixture", tmp_path)
    assert again is not None
    assert parquet_digests(again) == parquet_digests(fixture_build)


def test_max_pages_and_resolution_are_the_official_flags(tmp_path: Path) -> None:
    path = build_mmlongbench_doc("fixture", tmp_path, max_pages=2, resolution=72)
    assert path is not None
    first = rows(path)[0]
    assert first["num_images"] == 2 and first["doc_pages"] == 4
    assert first["image_sizes"] == [[PAGE_PIXELS[0] // 2, PAGE_PIXELS[1] // 2]] * 2


def test_a_release_folder_in_the_code_repos_layout_builds(tmp_path: Path) -> None:
    release = write_fixture(
        tmp_path / "repo" / "data"
    )  # mayubo2333/MMLongBench-Doc: data/samples.json, data/documents/
    path = build_mmlongbench_doc(str(tmp_path / "repo"), tmp_path / "out", limit=3)
    assert path is not None
    assert [r["question"] for r in rows(path)] == [s[1] for s in SAMPLES[:3]]
    assert release.is_dir()


def assert_questions_refused(release: Path, samples: list[dict], out: Path, message: str) -> None:
    """`samples` written as the release's `samples.json`: the build from the release into `out` stops with a
    `BuildError` matching `message`."""
    (release / "samples.json").write_text(json.dumps(samples))
    with pytest.raises(BuildError, match=message):
        build_mmlongbench_doc(str(release), out)


def test_a_bad_release_is_one_line_naming_the_file_and_question(tmp_path: Path) -> None:
    release = write_fixture(tmp_path / "rel")
    samples = json.loads((release / "samples.json").read_text())
    samples[2]["answer_format"] = "Date"
    assert_questions_refused(release, samples, tmp_path / "out", r"samples\.json: question 2: .*answer_format 'Date'")
    samples[2]["answer_format"] = "Str"
    samples[0]["doc_id"] = "../outside.pdf"
    assert_questions_refused(release, samples, tmp_path / "out", "outside.pdf")
    samples[0]["doc_id"] = "missing.pdf"
    assert_questions_refused(release, samples, tmp_path / "out", "missing.pdf: the PDF a question names is missing")


def test_a_question_listed_twice_is_refused_naming_both_positions(tmp_path: Path) -> None:
    """`samples.json` listing a question twice, the same in every field (or every question twice), would build rows
    scored twice: refused in one line naming the file, the question and its two positions (issue 77, item 4). The
    same question with another answer (as the release asks one, "Not answerable" beside "46%") builds both."""
    release = write_fixture(tmp_path / "rel")
    samples = json.loads((release / "samples.json").read_text())
    question = re.escape(repr(samples[1]["question"])[:40])
    assert_questions_refused(
        release,
        [*samples, samples[1]],
        tmp_path / "out",
        rf"samples\.json: question {len(samples)} repeats question 1 .*{question}",
    )
    assert_questions_refused(
        release, samples + samples, tmp_path / "out", rf"question {len(samples)} repeats question 0 "
    )
    spaced = {**samples[1], "question": samples[1]["question"] + "  "}  # issue 87: built as a second question
    assert_questions_refused(
        release,
        [*samples, spaced],
        tmp_path / "out",
        rf"question {len(samples)} repeats question 1 in every field but for white space at the ends of its text",
    )
    other = {
        **samples[1],
        "answer": "Not answerable",
        "evidence_pages": "[]",
        "evidence_sources": "[]",
        "answer_format": "None",
    }
    (release / "samples.json").write_text(json.dumps([*samples, other]))
    built = build_mmlongbench_doc(str(release), tmp_path / "both")
    assert built is not None
    asked = [(r["question"], r["answer"]) for r in rows(built)]
    assert asked.count((samples[1]["question"], "Not answerable")) == 1 and len(asked) == len(samples) + 1


def test_the_fixture_pdfs_are_deterministic_and_hold_text_and_picture_pages(tmp_path: Path) -> None:
    import pymupdf

    first, second = write_fixture(tmp_path / "a"), write_fixture(tmp_path / "b")
    for doc_id, (_, pages) in DOCUMENTS.items():
        pdf = (first / "documents" / doc_id).read_bytes()
        assert pdf == (second / "documents" / doc_id).read_bytes()
        with pymupdf.open(stream=pdf, filetype="pdf") as doc:
            for page, (kind, lines) in zip(doc, pages, strict=True):
                assert bool(page.get_images()) == (kind == PICTURE)
                assert (lines[0] in page.get_text()) == (kind == TEXT)  # a picture page has no text layer
                # The official pixel size: 144 dpi renders a page of w x h points at 2w x 2h pixels.
                pixmap = page.get_pixmap(dpi=144)
                assert [pixmap.width, pixmap.height] == PAGE_PIXELS


def test_the_stored_pages_are_the_files_the_official_loop_writes(fixture_build: Path, tmp_path: Path) -> None:
    """`run_api.py:36-41`: `for page in pdf[:max_pages]: page.get_pixmap(dpi=144).save(f"{doc}_{i}.png")`."""
    import pymupdf

    release = write_fixture(tmp_path)
    official = set()
    for doc_id in DOCUMENTS:
        with pymupdf.open(release / "documents" / doc_id) as pdf:
            for index, page in enumerate(pdf[:120]):
                page.get_pixmap(dpi=144).save(tmp_path / f"{index}.png")
                official.add((tmp_path / f"{index}.png").read_bytes())
    stored = pq.read_table(sorted((fixture_build / "image_table").glob("*.parquet"))).column("image").to_pylist()
    assert {image["bytes"] for image in stored} == official


def test_a_missing_pymupdf_is_one_line_naming_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pymupdf", None)  # what an environment without the `pdf` extra imports
    with pytest.raises(BuildError, match=r"needs pymupdf: pip install -e '\.\[pdf\]'$"):
        build_mmlongbench_doc("fixture", tmp_path)


def test_a_pdf_pymupdf_cannot_read_is_named(tmp_path: Path) -> None:
    release = write_fixture(tmp_path / "rel")
    (release / "documents" / "fixture-report.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    with pytest.raises(BuildError, match="fixture-report.pdf: pymupdf could not render it"):
        build_mmlongbench_doc(str(release), tmp_path / "out")


def test_an_evidence_field_that_is_not_a_literal_is_named(tmp_path: Path) -> None:
    release = write_fixture(tmp_path / "rel")
    samples = json.loads((release / "samples.json").read_text())
    samples[4]["evidence_pages"] = "[1,"
    assert_questions_refused(
        release, samples, tmp_path / "out", r"question 4: evidence_pages: .*not a Python list literal"
    )


def test_a_hub_source_reads_the_questions_then_only_the_pdfs_they_name(tmp_path: Path, offline_hub: Path) -> None:
    from tests.support.hub_cache import fill_hub_cache

    release = write_fixture(tmp_path / "release")
    files = {"samples.json": release / "samples.json"}
    files |= {f"documents/{doc}": release / "documents" / doc for doc in DOCUMENTS}
    fill_hub_cache(offline_hub, "yubo2333/MMLongBench-Doc", files)
    path = build_mmlongbench_doc("hf://yubo2333/MMLongBench-Doc", tmp_path / "out", limit=2)
    assert path is not None
    assert [r["question"] for r in rows(path)] == [s[1] for s in SAMPLES[:2]]
    hub = json.loads((path / "build_manifest.json").read_text())["inputs"]["hub"]
    assert hub["questions"]["files"] == ["samples.json"]
    assert hub["documents"]["files"] == [f"documents/{SAMPLES[0][0]}"]  # the two questions' one document only


def test_a_page_too_large_to_render_and_a_fifo_for_a_pdf_are_one_line(tmp_path: Path) -> None:
    """A 14,400 pt page is past what mupdf renders (its own FzErrorLimit, not a RuntimeError); a FIFO in a PDF's place
    is said to be one, not missing (issue 77)."""
    import os

    import pymupdf

    release = write_fixture(tmp_path / "rel")
    with pymupdf.open() as doc:
        doc.new_page(width=14400, height=14400)
        (release / "documents" / "fixture-report.pdf").write_bytes(doc.tobytes())
    with pytest.raises(BuildError, match="fixture-report.pdf: pymupdf could not render it: .*Overly large image"):
        build_mmlongbench_doc(str(release), tmp_path / "out")
    (release / "documents" / "fixture-report.pdf").unlink()
    os.mkfifo(release / "documents" / "fixture-report.pdf")
    with pytest.raises(BuildError, match="fixture-report.pdf: is a FIFO, not a regular file"):
        build_mmlongbench_doc(str(release), tmp_path / "out2")


def test_a_pdf_cut_short_is_rendered_as_fitz_renders_it_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """mupdf repairs a PDF cut short, as the official run's fitz would: the build renders it and says so (issue 77)."""
    release = write_fixture(tmp_path / "rel")
    pdf = release / "documents" / "fixture-report.pdf"
    pdf.write_bytes(pdf.read_bytes()[:-200])
    build_mmlongbench_doc(str(release), tmp_path / "out")
    assert f"{pdf}: damaged (mupdf repaired it to render it" in capsys.readouterr().err
