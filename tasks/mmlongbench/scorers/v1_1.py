"""V1.1's scoring (EdinburghNLP/MMLongBench at 22b9f27; file:line at that commit): the answer parser that reads to the
end, and DocVQA's LLM judge. VLMEvalKit's port scores with the same functions (`mmlongbench_metrics.py` at e8e78f05:
`parse_output` `:125-137`, the judge `:360-484`), so `scorers.vlmevalkit` uses them too.

Departures, named: where the official code raises (a judge reply whose list counts divide by zero or compare a
non-number, an `answer_score` that is not a number, which `np.mean` then fails on) this raises too, and the harness
leaves that row unjudged where the official run would stop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TypedDict

from builders.core.contract import JsonValue

# --------------------------------------------------------------------------------------------- the parser


def parse_output_v1_1(output: str, prefix: str) -> str:
    """V1.1's `parse_output` (`utils.py:122-132`, commit 476fe86 made both patterns DOTALL).

    Everything after the first case-insensitive match of `prefix` (a regex, as official), to the END of the output;
    with no match, the whole output. Stripped, then one leading `prefix` (case-insensitive, literal) removed and
    stripped again. `"Answer: Paris\\nThe capital."` -> `"Paris\\nThe capital."`; `"Answer:\\nParis"` -> `"Paris"`;
    `"no prefix\\nB"` -> `"no prefix\\nB"`; `"x Answer: answer: B"` -> `"B"`. Official returns None only where no
    pattern matches, which cannot happen (the second always matches), so this returns a str.
    """
    after = re.search(f"(?:{prefix})(.*)", output, flags=re.IGNORECASE | re.DOTALL)
    text = after[1] if after is not None else output
    return re.sub(f"^{re.escape(prefix)}", "", text.strip(), flags=re.IGNORECASE).strip()


# ------------------------------------------------------------------------------------------ DocVQA's judge

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "judge_prompts"
JUDGE_MODEL = "Doubao-Seed-1.8"  # arguments.py:32 (--llm_judge_model)
JUDGE_MAX_TOKENS = 256  # utils.py:447, 475
LIST_FORMAT = "List"
_SCORE_LINE = re.compile(r"\[Score\]:\s*(\d+)\s*points?")  # utils.py:370
_JSON_START = re.compile(r"\[JSON\]:.*?(\{)", re.DOTALL)  # utils.py:404
ANSWER_KEYS = ("answer_score",)
LIST_KEYS = ("student_answer_count", "covered_count")


@cache
def judge_template(name: str) -> str:
    """The judge prompts, verbatim from `utils_prompt.py` at 22b9f27 (identical in VLMEvalKit's
    `mmlongbench_judge_prompt.py`), as data files beside the task (newline="" keeps their bytes)."""
    with open(PROMPTS_DIR / f"{name}.txt", encoding="utf-8", newline="") as handle:
        return handle.read()


def docvqa_judge_prompt(question: str, reference: object, prediction: str, answer_format: str) -> str:
    """The one user message the judge is sent (`utils.py:438-449, 466-477`): for a List gold,
    `DOC_QA_LIST_F1_JUDGE_PROMPT`, else `DOC_QA_JUDGE_PROMPT`, each followed by the current case filled with the
    question (with its "Based on Document ..." prefix), the gold as `str.format` writes it, and the parsed answer.
    The two templates are concatenated unformatted (their JSON braces stay single)."""
    head = judge_template("docqa_list_f1_judge" if answer_format == LIST_FORMAT else "docqa_judge")
    case = judge_template("docqa_current_case").format(question=question, reference=reference, prediction=prediction)
    return head + case


def robust_json(text: str, keys: Sequence[str]) -> dict[str, JsonValue]:
    """`robust_json_extraction` (`utils.py:402-425`): the first JSON value starting at the first `{` after "[JSON]:"
    (`json.JSONDecoder.raw_decode`: whatever follows it is ignored); where that is missing or fails, each key's first
    `"key": <number>` anywhere, as a float; keys not found are absent (so {} when none is)."""
    found = _JSON_START.search(text)
    if found is not None:
        try:
            value: dict[str, JsonValue] = json.JSONDecoder().raw_decode(text[found.start(1) :])[0]
            return value  # raw_decode from "{" gives an object
        except ValueError:  # official: `except Exception`, then the per-key search
            pass
    extracted: dict[str, JsonValue] = {}
    for key in keys:
        number = re.search(rf'"{key}"\s*:\s*(-?\d+(?:\.\d+)?)', text)
        if number is not None:
            extracted[key] = float(number[1])
    return extracted


class JudgeVerdict(TypedDict):
    """What one judge reply says: its `[Score]` line's number, and the JSON each official parser reads."""

    score: int | None
    answer_json: dict[str, JsonValue]
    list_json: dict[str, JsonValue]


def parse_docvqa_judge(reply: str) -> JudgeVerdict:
    """What `parse_judge_output` and `parse_list_judge_output` (`utils.py:353-399`) read of one reply, both, since
    which counts depends on the row's gold: the `[Score]: N point(s)` line's N (or None), and the JSON each reads."""
    line = _SCORE_LINE.search(reply)
    return {
        "score": int(line[1]) if line is not None else None,
        "answer_json": robust_json(reply, ANSWER_KEYS),
        "list_json": robust_json(reply, LIST_KEYS),
    }


def docvqa_final_score(verdict: JudgeVerdict, gold: str, answer_format: str) -> JsonValue:
    """The judge's `final_score` of one row as official computes it (0-1 when the judge keeps to its format).

    - Integer, Float, String, None (`utils.py:438-463`): the `[Score]` line's N, else the JSON's `answer_score` as the
      JSON has it (any value), else 0.0. Nothing is clipped: "[Score]: 2 points" gives 2.
    - List (`utils.py:466-495`): with both `student_answer_count` and `covered_count` in the JSON and covered > 0,
      recall = covered / len(json.loads(gold)), precision = covered / student count, F1 clipped to [0, 1]; else 0.0.
      A student count of 0 raises ZeroDivisionError and a count that is no number TypeError, as official.
    """
    if answer_format == LIST_FORMAT:
        counts = verdict["list_json"]
        if not isinstance(counts, dict) or not all(key in counts for key in LIST_KEYS):
            return 0.0
        covered, answered = _count(counts["covered_count"]), _count(counts["student_answer_count"])
        if not covered > 0:
            return 0.0
        recall, precision = covered / len(json.loads(gold)), covered / answered
        return max(min((2 * recall * precision) / (recall + precision), 1.0), 0.0)
    if verdict["score"] is not None:
        return verdict["score"]
    answer = verdict["answer_json"]
    if isinstance(answer, dict) and "answer_score" in answer:
        return answer["answer_score"]
    return 0.0


def _count(value: JsonValue) -> float:
    # official compares and divides whatever the JSON holds: anything but a number raises TypeError there
    if not isinstance(value, int | float):
        raise TypeError(f"the judge's count {value!r} is not a number")
    return value


def docvqa_judge_score(verdict: JudgeVerdict, gold: str, answer_format: str) -> float:
    """V1.1's `doc_qa_llm` of one row, 0-1: `docvqa_final_score`, which the file's `np.mean` averages; a value that
    is no number (true/false count as 1/0, as `np.mean` counts them) raises TypeError, where `np.mean` fails."""
    value = docvqa_final_score(verdict, gold, answer_format)
    if not isinstance(value, int | float):
        raise TypeError(f"the judge's answer_score {value!r} is not a number")
    return float(value)
