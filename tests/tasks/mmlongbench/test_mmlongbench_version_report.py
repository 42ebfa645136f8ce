"""`harness report`'s MMLongBench sections name the reference of every cell: the paper's numbers for the paper's tasks
(with a verdict), V1.1's or VLMEvalKit's published numbers for theirs (a verdict only against the same version; the
paper's beside V1.1 as context, marked, never judged), none for VLMEvalKit's rows scored the paper's way or for our
lengths past 128K."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.outputs.results.model_results import ModelResults
from tasks.mmlongbench import report, version_report
from tasks.mmlongbench.aggregation import load_paper_results
from tasks.mmlongbench.references import load_figures, load_reference, version_of

QWEN = "Qwen/Qwen2.5-VL-7B-Instruct"
SCORES = {"VRAG": 70.0, "NIAH": 40.0, "ICL": 55.0, "Summ": 20.0, "DocVQA": 30.0}


def groups(prefix: str, length: str) -> dict[str, dict[str, float]]:
    out = {
        f"mmlongbench_{prefix}{c.lower()}_{length}": {"score,none": v, "score_stderr,none": 2.0}
        for c, v in SCORES.items()
    }
    out[f"mmlongbench_{prefix}{length}"] = {"score,none": sum(SCORES.values()) / 5, "score_stderr,none": 1.0}
    return out


def test_each_task_knows_its_version() -> None:
    assert version_of("mmlongbench_v1_1_vrag_viquae_8k").key == "v1.1"
    assert version_of("mmlongbench_vlmevalkit_niah_256k").key == "vlmevalkit"
    assert version_of("mmlongbench_vlmevalkit_as_paper_niah_256k").key == "vlmevalkit_as_paper"
    assert version_of("mmlongbench_vrag_viquae_8k") is None and version_of("mmlongbench_niah_vh_single_256k") is None


def test_v1_1_is_set_beside_the_papers_numbers_as_context_never_judged(tmp_path: Path) -> None:
    data = ModelResults(groups=groups("v1_1_", "128k"))
    text = "\n".join(version_report.v1_1_section(QWEN, data, tmp_path))
    paper_vrag = load_paper_results()[("Qwen2.5-VL-7B", "VRAG", 131072)]
    assert "### MMLongBench V1.1 (EdinburghNLP/MMLongBench at 22b9f27" in text
    assert "Reference: V1.1's published numbers (tasks/mmlongbench/references/v1_1.csv); it holds no number" in text
    # every figure published since the paper, with its source; none of V1.1 at a stated length: all apart
    assert (
        "| Seed2.1 Pro | Avg | 128k | 78.3 | unknown | unknown | unknown | 2026-06-23 | https://seed.bytedance" in text
    )
    assert "| Seed2.0 Pro | Avg | unknown | 74.8 | unknown | v1.1 | unknown | 2026-02-14 | Seed2.0 Model Card" in text
    assert "| compared |" not in text and text.count("| apart |") == 5
    assert f"| VRAG | 70.0 [{paper_vrag:.1f}†] |" in text  # the paper's, marked as another version
    assert "another version: context only, no verdict" in text and "✓" not in text and "✗" not in text
    assert "### MMLongBench\n" not in text  # no paper task ran: no paper section


def test_a_same_version_reference_gives_a_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_path / "v1_1.csv"
    table.write_text(
        "# a note\nmodel,row,length_tokens,score,samples,version,judge,date,source\n"
        "Qwen2.5-VL-7B,VRAG,131072,71.0,900,v1.1,Doubao-Seed-1.8,2026-03-01,a model report\n"
        "Qwen2.5-VL-7B,NIAH,131072,90.0,2550,v1.1,unknown,2026-03-01,a model report\n"
        "Qwen2.5-VL-7B,ICL,131072,10.0,unknown,unknown,unknown,2026-04-01,another report\n"
    )
    assert load_reference(table, "v1.1")[("Qwen2.5-VL-7B", "VRAG", 131072)].score == 71.0
    assert ("Qwen2.5-VL-7B", "ICL", 131072) not in load_reference(table, "v1.1")  # of no stated version
    monkeypatch.setattr(version_report, "load_reference", lambda path, version: load_reference(table, version))
    monkeypatch.setattr(version_report, "load_figures", lambda path: load_figures(table))
    data = ModelResults(groups=groups("v1_1_", "128k"))
    lines = version_report.v1_1_section(QWEN, data, tmp_path)
    # no data recorded for these groups: the verdict is "not comparable" (–), as the paper's section gives it
    assert "| VRAG | 70.0 (71.0) – |" in lines and any(line.startswith("| ICL | 55.0 [") for line in lines)
    assert any(line.startswith("Verdict beside the paper:") for line in lines)
    # the figure of unknown version is listed apart with its source, never set beside our cell
    assert (
        "| Qwen2.5-VL-7B | ICL | 128k | 10.0 | unknown | unknown | unknown | 2026-04-01 | another report | apart |"
        in lines
    )
    assert (
        "| Qwen2.5-VL-7B | VRAG | 128k | 71.0 | 900 | v1.1 | Doubao-Seed-1.8 | 2026-03-01 | a model report | compared |"
        in lines
    )


def test_a_malformed_reference_is_one_line_naming_it(tmp_path: Path) -> None:
    table = tmp_path / "bad.csv"
    table.write_text("model,row,length_tokens,score,samples,version,judge,date,source\nm,VRAG,128k,x,1,v1.1,j,d,s\n")
    with pytest.raises(ValueError, match=r"bad.csv: data line 2"):
        load_figures(table)
    table.write_text("model,row,length_tokens,score,samples,source\nm,VRAG,131072,1,1,s\n")  # the old columns
    with pytest.raises(ValueError, match=r"bad.csv: no column version, judge, date"):
        load_figures(table)


def test_vlmevalkits_numbers_are_its_own_and_the_paper_scored_rows_have_no_reference(tmp_path: Path) -> None:
    data = ModelResults(
        groups={
            "mmlongbench_vlmevalkit_256k": {"score,none": 41.0},
            "mmlongbench_vlmevalkit_niah_256k": {"score,none": 33.0},
            **groups("vlmevalkit_as_paper_", "256k"),
        },
        results={"mmlongbench_vlmevalkit_as_paper_vrag_viquae_256k": {"score,none": 12.0}},
    )
    own = version_report.vlmevalkit_section(QWEN, data, tmp_path)
    text = "\n".join([*own, *version_report.as_paper_section(QWEN, data, tmp_path)])
    assert "as the paper's harness scores them" not in "\n".join(own)  # each version its own section
    assert "| overall | 41.0 |" in text and "| NIAH | 33.0 |" in text and "| vrag | not run |" in text
    assert "Reference: VLMEvalKit/OpenCompass-style numbers (tasks/mmlongbench/references/vlmevalkit.csv)" in text
    as_paper = text[text.index("as the paper's harness scores them") :]
    # no reference: ours alone, with its interval where an error was recorded (Wilson's on the effective n)
    assert "Reference: none." in as_paper and "| VRAG | 70.0 [65.9, 73.8] |" in as_paper
    assert "| viquae | 12.0 |" in as_paper
    assert "†" not in text  # the paper has no 256K number, and none of its numbers is these rows'


def test_our_lengths_past_128k_are_labelled_ours(tmp_path: Path) -> None:
    data = ModelResults(
        groups={"mmlongbench_256k": {"score,none": 25.0}, "mmlongbench_niah_256k": {"score,none": 30.0}}
    )
    text = "\n".join(report.section(QWEN, data, tmp_path))
    assert (
        "### MMLongBench past 128K (ours, not the paper's)" in text
        and "Reference: none. These configs are ours" in text
    )
    assert "| NIAH | 30.0 | N/A | N/A |" in text and "| Avg | 25.0 | N/A | N/A |" in text


def test_the_papers_section_reads_only_the_papers_tasks(tmp_path: Path) -> None:
    data = ModelResults(
        groups={**groups("", "128k"), **groups("v1_1_", "128k")},
        results={
            "mmlongbench_vrag_viquae_128k": {"score,none": 50.0},
            "mmlongbench_v1_1_vrag_viquae_128k": {"score,none": 60.0},
            "mmlongbench_vlmevalkit_vrag_viquae_32k": {"score,none": 1.0},
        },
    )
    paper = report.section(QWEN, data, tmp_path)
    assert not any(line.startswith("### MMLongBench V1.1") for line in paper)  # V1.1 declares its own section
    assert "| dataset | metric | 128k |" in paper  # VLMEvalKit's 32K task added no column
    assert any(line.startswith("| viquae | score | 50.0 (") for line in paper)


def test_each_version_declares_its_own_section_and_the_papers_models() -> None:
    """Each version's tasks and groups name its own declaration (`benchmark.py`), through its templates: `harness
    report` gives each its section; every declaration holds the paper's models."""
    from harness.config.benchmark import declared_benchmark
    from harness.config.task_index import TaskIndex

    index = TaskIndex()
    sections = {
        "BENCHMARK": "section",
        "V1_1": "v1_1_section",
        "VLMEVALKIT": "vlmevalkit_section",
        "VLMEVALKIT_AS_PAPER": "as_paper_section",
    }
    expected = {
        "mmlongbench_vrag_viquae_128k": "BENCHMARK",
        "mmlongbench_128k": "BENCHMARK",
        "mmlongbench_v1_1_vrag_viquae_128k": "V1_1",
        "mmlongbench_v1_1_docvqa_slidevqa_128k": "V1_1",
        "mmlongbench_v1_1_128k": "V1_1",
        "mmlongbench_v1_1": "V1_1",
        "mmlongbench_vlmevalkit_vrag_viquae_128k": "VLMEVALKIT",
        "mmlongbench_vlmevalkit_docvqa_slidevqa_128k": "VLMEVALKIT",
        "mmlongbench_vlmevalkit_128k": "VLMEVALKIT",
        "mmlongbench_vlmevalkit": "VLMEVALKIT",
        "mmlongbench_vlmevalkit_as_paper_vrag_viquae_128k": "VLMEVALKIT_AS_PAPER",
        "mmlongbench_vlmevalkit_as_paper_summ_govreport_128k": "VLMEVALKIT_AS_PAPER",
        "mmlongbench_vlmevalkit_as_paper_128k": "VLMEVALKIT_AS_PAPER",
        "mmlongbench_vlmevalkit_as_paper": "VLMEVALKIT_AS_PAPER",
    }
    papers = set()
    for name, declared in expected.items():
        ref = (index.tasks.get(name) or index.groups[name]).benchmark
        assert ref is not None and ref.spec == f"benchmark.{declared}", name
        benchmark = declared_benchmark(ref)
        assert benchmark is not None and benchmark.report.section.__name__ == sections[declared], name
        papers.add(tuple(model.name for model in benchmark.paper.models))
    assert len(papers) == 1 and len(next(iter(papers))) > 40  # the paper's models, every version alike
    names = [n for n in [*index.tasks, *index.groups] if n.startswith("mmlongbench_v1_1")]
    assert len(names) > 100
    assert {(index.tasks.get(n) or index.groups[n]).benchmark.spec for n in names} == {"benchmark.V1_1"}
