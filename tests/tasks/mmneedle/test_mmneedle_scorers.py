"""The MMNeedle scorers against the official parsing rules (spec §4.3 evaluate.py, §4.4
evaluate_multi.py), case by case for K = 1, 2 and 5, and their aggregation."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from harness.running.task.metrics import mean_by_key, ratio_of_sums
from tasks.mmneedle import utils


def pos_doc(answer: str) -> dict:
    triples = [tuple(int(x) for x in part.split(", ")) for part in answer.split("; ")]
    return {
        "K": len(triples),
        "M": 10,
        "N": 8,
        "is_positive": True,
        "answer": answer,
        "needle_index": [t[0] for t in triples],
        "needle_row": [t[1] for t in triples],
        "needle_col": [t[2] for t in triples],
    }


def neg_doc(k: int) -> dict:
    return {
        "K": k,
        "M": 10,
        "N": 8,
        "is_positive": False,
        "answer": "; ".join(["-1"] * k),
        "needle_index": [-1] * k,
        "needle_row": [-1] * k,
        "needle_col": [-1] * k,
    }


# ------------------------------------------------------------------------------------ K = 1
@pytest.mark.parametrize(
    ("response", "existence", "index", "exact"),
    [
        ("5, 2, 2", True, True, True),
        ("5, 2, 2.", True, True, True),  # a trailing period is stripped
        ("  5, 2, 2 \n", True, True, True),  # surrounding whitespace and newlines go
        ("5, 2,\n 2", True, True, True),  # a newline is deleted, the following space stays
        ("5,\n2, 2", True, False, False),  # ... so here the comma loses its space
        ("5,2,2", True, False, False),  # no ", ": index field is the whole string
        ("(5, 2, 2)", True, False, False),
        ("Answer: 5, 2, 2", True, False, False),
        ("5, 2, 2 (top right)", True, True, False),
        ("5, 3, 2", True, True, False),
        ("4, 2, 2", True, False, False),
        ("", True, False, False),  # empty on a positive: existence-correct (anything but "-1")
        ("gibberish", True, False, False),
        ("-1", False, False, False),
        ("-1.", False, False, False),
    ],
)
def test_single_needle_positive(response: str, existence: bool, index: bool, exact: bool) -> None:
    assert utils.official_single(response, "5, 2, 2") == {"existence": existence, "index": index, "exact": exact}


@pytest.mark.parametrize(
    ("response", "existence"),
    [
        ("-1", True),
        ("-1.", True),
        (" -1\n", True),
        ("-1, -1, -1", False),
        ("-1; -1", False),
        ("", False),
        ("1, 1, 1", False),
        ("No match. -1", False),
    ],
)
def test_single_needle_negative_existence(response: str, existence: bool) -> None:
    assert utils.official_single(response, "-1")["existence"] is existence


def test_single_needle_negative_index_uses_official_zero() -> None:
    # The official response files store a negative as "0, 0, 0": its index field is "0".
    assert utils.official_single("0, 5, 5", "-1")["index"] is True
    assert utils.official_single("-1", "-1") == {"existence": True, "index": False, "exact": True}


# ------------------------------------------------------------------------------------ K = 2
GT2 = "1, 2, 8; 10, 3, 5"


@pytest.mark.parametrize(
    ("response", "existence", "index", "exact", "indiv_index", "indiv_exact", "compared"),
    [
        ("1, 2, 8; 10, 3, 5", True, True, True, 2, 2, 2),
        ("1, 2, 8; 10, 3, 5.", True, True, True, 2, 2, 2),
        ("1, 2, 8 ;  10, 3, 5", True, True, True, 2, 2, 2),  # parts are stripped and re-joined
        ("1, 2, 8;\n10, 3, 5", True, False, False, 1, 0, 1),  # newline deleted: "1, 2, 8;10, 3, 5" is one part
        ("1, 2, 8;10, 3, 5", True, False, False, 1, 0, 1),  # "; " is the only separator
        ("1, 2, 8", True, False, False, 1, 1, 1),  # truncated: one position compared
        ("1, 2, 7; 10, 3, 5", True, True, False, 2, 1, 2),
        ("10, 3, 5; 1, 2, 8", True, False, False, 0, 0, 2),  # order matters
        ("1, 2, 8; 10, 3, 5; 4, 4, 4", True, False, False, 2, 2, 2),  # extra part: lists differ
        ("", True, False, False, 0, 0, 1),
        ("-1; -1", False, False, False, 0, 0, 2),
    ],
)
def test_two_needles_positive(response, existence, index, exact, indiv_index, indiv_exact, compared) -> None:
    out = utils.official_multi(response, GT2, 2)
    assert (out["existence"], out["index"], out["exact"]) == (existence, index, exact)
    assert (out["individual_index"], out["individual_exact"], out["compared"]) == (indiv_index, indiv_exact, compared)


# evaluate_multi.py's first_index_match / first_exact_match: the answer's first "; "-part against the first
# needle, whatever the other parts say (cases chosen where they differ from the all-needle metrics).
@pytest.mark.parametrize(
    ("response", "first_index", "first_exact"),
    [
        ("1, 2, 8; 10, 3, 5", True, True),
        ("1, 2, 8", True, True),  # truncated after the first needle: all-needle index and exact fail
        ("1, 2, 8; 9, 9, 9", True, True),
        ("1, 2, 7; 10, 3, 5", True, False),
        ("1, 2, 8;10, 3, 5", True, False),  # one part: its index field is still "1"
        (" 1, 2, 8 ;  4, 4, 4.", True, True),  # normalized and stripped as the official code does
        ("1,2,8; 10, 3, 5", False, False),  # no ", ": the index field is the whole part
        ("10, 3, 5; 1, 2, 8", False, False),  # the needles in the wrong order
        ("-1; 10, 3, 5", False, False),
        ("", False, False),
    ],
)
def test_first_needle_index_and_exact(response: str, first_index: bool, first_exact: bool) -> None:
    out = utils.official_multi(response, GT2, 2)
    assert (out["first_index"], out["first_exact"]) == (first_index, first_exact)
    metrics = utils.process_results_pos(pos_doc(GT2), [response])
    assert (metrics["first_index_acc"], metrics["first_exact_acc"]) == (float(first_index), float(first_exact))


def test_first_needle_metrics_come_beside_the_others_in_a_run(tmp_path, data_dir, rows, harness) -> None:
    """A constant answer through the runner: the K = 2 positives' results carry first_index_acc and
    first_exact_acc, the share of rows whose first needle the answer's first part names (index / whole)."""
    golds = [r["answer"] for r in rows("m10_n1_k2") if r["is_positive"] and r["in_paper_subset"]]
    guess = golds[0].split("; ")[0] + "; -1"  # the first needle of row 0, and never a second one
    run = harness(
        "--tasks",
        "mmneedle_m10_n1_k2_pos",
        "--model",
        "constant",
        "--model_args",
        f'answer="{guess}"',
        "--data_dir",
        data_dir,
        "--output_path",
        tmp_path,
    )
    assert run.code == 0, run.err
    entry = run.results("constant")["results"]["mmneedle_m10_n1_k2_pos"]
    firsts = [g.split("; ")[0] for g in golds]
    assert entry["first_exact_acc,none"] == pytest.approx(sum(f == guess.split("; ")[0] for f in firsts) / len(golds))
    assert entry["first_index_acc,none"] == pytest.approx(
        sum(f.split(", ")[0] == guess.split(", ")[0] for f in firsts) / len(golds)
    )
    assert entry["first_exact_acc,none"] > 0 and entry["exact_acc,none"] == 0.0


@pytest.mark.parametrize(
    "response", ["-1", "-1; -1", "-1, -1", "-1, -1, -1; -1, -1, -1", "-1-1", "-1; -1.", " -1, -1\n"]
)
def test_two_needles_each_accepted_negative_string(response: str) -> None:
    assert utils.official_multi(response, "-1; -1", 2)["existence"] is True
    assert utils.official_multi(response, GT2, 2)["existence"] is False  # on a positive they say "absent"


@pytest.mark.parametrize("response", ["-1;-1", "-1; -1; -1", "-1 -1", "none", "", "-1, -1, -1"])
def test_two_needles_other_strings_are_not_negative(response: str) -> None:
    assert utils.official_multi(response, "-1; -1", 2)["existence"] is False


def test_negative_strings_are_exactly_the_official_five() -> None:
    assert utils.negative_strings(2) == {"-1", "-1; -1", "-1, -1", "-1, -1, -1; -1, -1, -1", "-1-1"}
    assert utils.negative_strings(5) == {
        "-1",
        "-1; -1; -1; -1; -1",
        "-1, -1, -1, -1, -1",
        "-1, -1, -1; -1, -1, -1; -1, -1, -1; -1, -1, -1; -1, -1, -1",
        "-1-1-1-1-1",
    }


# ------------------------------------------------------------------------------------ K = 5
GT5 = "1, 1, 1; 2, 2, 2; 3, 3, 3; 4, 4, 4; 5, 5, 5"


@pytest.mark.parametrize(
    ("response", "exact", "index", "indiv_index", "indiv_exact", "compared"),
    [
        (GT5, True, True, 5, 5, 5),
        (GT5 + ".\n", True, True, 5, 5, 5),
        ("1, 1, 1; 2, 2, 2; 3, 3, 3", False, False, 3, 3, 3),  # truncated after three needles
        ("1, 1, 1; 2, 2, 9; 3, 3, 3; 4, 9, 4; 5, 5, 5", False, True, 5, 3, 5),
        ("1,1,1; 2,2,2; 3,3,3; 4,4,4; 5,5,5", False, False, 0, 0, 5),
    ],
)
def test_five_needles_positive(response, exact, index, indiv_index, indiv_exact, compared) -> None:
    out = utils.official_multi(response, GT5, 5)
    assert (out["exact"], out["index"]) == (exact, index)
    assert (out["individual_index"], out["individual_exact"], out["compared"]) == (indiv_index, indiv_exact, compared)
    assert out["existence"] is True


@pytest.mark.parametrize("response", sorted(utils.negative_strings(5)))
def test_five_needles_accepted_negatives(response: str) -> None:
    assert utils.official_multi(response, "-1; -1; -1; -1; -1", 5)["existence"] is True


@pytest.mark.parametrize("response", ["-1; -1", "-1-1", "-1, -1", "-1; -1; -1; -1"])
def test_five_needles_two_needle_negatives_rejected(response: str) -> None:
    assert utils.official_multi(response, "-1; -1; -1; -1; -1", 5)["existence"] is False


# --------------------------------------------------------------------------- aggregation
def test_individual_accuracy_is_a_ratio_of_sums_over_compared_positions() -> None:
    doc = pos_doc(GT2)
    truncated = utils.process_results_pos(doc, ["1, 2, 8"])  # 1 correct of 1 compared
    half = utils.process_results_pos(doc, ["9, 9, 9; 10, 3, 5"])  # 1 correct of 2 compared
    assert truncated["individual_exact_acc"] == [1, 1]
    assert half["individual_exact_acc"] == [1, 2]
    values = [truncated["individual_exact_acc"], half["individual_exact_acc"]]
    assert ratio_of_sums(values) == pytest.approx(2 / 3)  # not the mean of ratios, 0.75
    # The separately named variant counts every needle: (1/2 + 1/2) / 2.
    assert (truncated["lenient_individual_exact_acc"] + half["lenient_individual_exact_acc"]) / 2 == 0.5


def test_positive_metrics_single_needle() -> None:
    doc = pos_doc("3, 1, 2")
    out = utils.process_results_pos(doc, ["3, 1, 2."])
    assert {k: out[k] for k in ("existence_acc", "index_acc", "exact_acc", "format_valid_rate")} == {
        "existence_acc": 1.0,
        "index_acc": 1.0,
        "exact_acc": 1.0,
        "format_valid_rate": 1.0,
    }
    assert out["exact_acc_by_cell"] == [["1,2", 1.0]]
    assert out["exact_acc_by_depth"] == [["3", 1.0]]
    assert "individual_exact_acc" not in out


def test_negative_metrics() -> None:
    assert utils.process_results_neg(neg_doc(1), ["-1"]) == {
        "existence_acc": 1.0,
        "hallucination_rate": 0.0,
        "lenient_existence_acc": 1.0,
        "format_valid_rate": 1.0,
    }
    out = utils.process_results_neg(neg_doc(2), ["3, 1, 1; -1"])
    assert out["existence_acc"] == 0.0 and out["hallucination_rate"] == 1.0 and out["lenient_existence_acc"] == 0.0


def test_lenient_variants_are_separate_from_the_official_ones() -> None:
    doc = pos_doc("3, 1, 2")
    out = utils.process_results_pos(doc, ["Answer: (3,1,2)"])
    assert out["exact_acc"] == 0.0 and out["index_acc"] == 0.0
    assert out["lenient_exact_acc"] == 1.0 and out["lenient_index_acc"] == 1.0
    assert out["format_valid_rate"] == 0.0
    assert utils.lenient_parse("first 1 2 3\nthen -1") == [(1, 2, 3), None]
    assert utils.lenient_parse("no idea") == []
    # Lenient existence on a positive needs a location, unlike the official rule.
    assert utils.process_results_pos(doc, ["gibberish"])["lenient_existence_acc"] == 0.0
    assert utils.process_results_pos(doc, ["gibberish"])["existence_acc"] == 1.0


@pytest.mark.parametrize(
    ("response", "k", "valid"),
    [
        ("1, 2, 3", 1, True),
        ("-1", 1, True),
        ("1,2,3", 1, False),
        ("1, 2, 3; 4, 5, 6", 1, False),
        ("1, 2, 3; -1", 2, True),
        ("-1-1", 2, True),
        ("1, 2, 3", 2, False),
        ("1, 2, 3;4, 5, 6", 2, False),
    ],
)
def test_format_valid(response: str, k: int, valid: bool) -> None:
    assert utils.format_valid(response, k) is valid


def test_breakdowns_group_by_cell_and_depth() -> None:
    rows = [
        utils.process_results_pos(pos_doc("1, 1, 1"), ["1, 1, 1"]),
        utils.process_results_pos(pos_doc("2, 1, 1"), ["2, 2, 2"]),
        utils.process_results_pos(pos_doc("2, 2, 2"), ["2, 2, 2"]),
    ]
    cells = mean_by_key([r["exact_acc_by_cell"] for r in rows])
    depths = mean_by_key([r["exact_acc_by_depth"] for r in rows])
    assert cells["1,1"]["mean"] == 0.5 and cells["1,1"]["n"] == 2 and cells["2,2"]["mean"] == 1.0
    assert depths["1"]["mean"] == 1.0 and depths["2"]["mean"] == 0.5 and depths["2"]["n"] == 2
    assert cells["1,1"]["stderr"] == pytest.approx(math.sqrt(0.5 / 2))  # values 1 and 0: sample variance 0.5, n 2


def test_multi_needle_breakdown_counts_unanswered_needles_wrong() -> None:
    out = utils.process_results_pos(pos_doc(GT2), ["1, 2, 8"])
    assert out["exact_acc_by_cell"] == [["2,8", 1.0], ["3,5", 0.0]]
    assert out["exact_acc_by_depth"] == [["1", 1.0], ["10", 0.0]]


def test_answer_space_lists_every_location_and_minus_one() -> None:
    space = utils.answer_space({"M": 10, "N": 2, "K": 5})
    assert space["slots"] == 5 and space["separator"] == "; "
    assert len(space["choices"]) == 10 * 4 + 1 and space["choices"][-1] == "-1"
    assert space["choices"][0] == "1, 1, 1" and "10, 2, 2" in space["choices"]


def test_subset_selection_paper_and_full() -> None:
    ds = pa.table({"is_positive": [True, True, False, False], "in_paper_subset": [True, False, True, False]})
    assert len(utils.positives(ds)) == 1 and len(utils.negatives(ds)) == 1
    assert len(utils.positives(ds, metadata={"subset": "full"})) == 2
    with pytest.raises(ValueError, match="subset"):
        utils.positives(ds, metadata={"subset": "some"})


@pytest.mark.parametrize("column", ["needle_index", "needle_col"])
def test_a_positive_row_without_its_needles_is_refused_in_one_line(
    tmp_path: Path, data_dir: Path, harness, column: str
) -> None:
    """Issue 106, item 4: a positive row whose needle column holds no value beside its answer (its file re-hashed in
    the manifest) stops the run before a sample, in one line naming the column and the row (before, every such
    sample failed on `zip() argument 2 is shorter than argument 1`, naming neither)."""
    from tests.conftest import rewrite_columns
    from tests.support.run_setups import run_args

    root = tmp_path / "data"
    shutil.copytree(data_dir / "mmneedle", root / "mmneedle")
    rewrite_columns(root / "mmneedle", "m1_n2_k1", **{column: lambda values: [[], *values[1:]]})  # row 0: a positive
    run = harness(*run_args("mmneedle_m1_n2_k1_pos", "random", data_dir=root, out=tmp_path / "out"))
    assert run.code == 2 and "Traceback" not in run.err, run.err
    (line,) = [line for line in run.err.splitlines() if line.startswith("harness: error")]
    assert line == (
        "harness: error: task 'mmneedle_m1_n2_k1_pos': process_docs: row 'm1_n2_k1-00000': "
        f"column '{column}' holds 0 values, where its K is 1 (one per needle)"
    )
