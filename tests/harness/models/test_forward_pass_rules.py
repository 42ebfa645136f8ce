"""A forward pass for every input rule of every `hf` alias at every length, with each benchmark's arguments (issue
51): the first fixture row of a task, resolved for the alias as a run resolves it (its own rules, its paper run's on
that benchmark, the benchmark's model arguments: MileBench's `llava_llama_2` prompt style and the model's own
context), sent through the `hf` backend to the family's tiny model with its real processor class and published
template. The image tokens in the text must equal the image features the pixels make, generation must be reached, and
where the backend calls its count exact, the count before sending must be the input ids it sent.

Cases are deduplicated (`tests.support.forward_rules.rule_cases`): one per distinct (family, benchmark, processor
settings and other input policy, prompt style and other model arguments), the longest row of the group, of the kind
with the most images, standing for the rest; each case's id names the family, the row that stands for the group and
the settings, and `stands_for` says which aliases, kinds of row and lengths it covers (shown where a case fails).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.models.aliases import ALIASES, index_benchmarks
from harness.models.facts.paper_models import papers
from tests.support.forward_families import FAMILIES
from tests.support.forward_pass import forward_pass
from tests.support.forward_rules import RuleCase, build_fixtures, hf_aliases, policy_request, rule_cases

CASES = rule_cases()
pytestmark = pytest.mark.slow  # builds six benchmarks' fixtures and runs about 180 forward passes


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fixtures(tmp_path_factory.mktemp("forward-rules"))


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_every_rule_of_every_alias_reaches_generation_with_its_image_tokens_its_features(
    case: RuleCase, rows: Path
) -> None:
    request = policy_request(case.policy, case.slot.task, rows)
    assert request.processor_kwargs == case.policy.processor_kwargs and request.num_images > 0
    result = forward_pass(case.family, request, **dict(case.args))
    assert result.error is None and result.answer is not None, case.stands_for
    assert result.image_tokens == result.image_features > 0, case.stands_for
    if result.exact:
        assert result.counted == result.prompt_tokens, case.stands_for


KEEPS = [case for case in CASES if case.policy.keep_last_images is not None]  # each stood for by a row of many images


@pytest.mark.parametrize("case", KEEPS, ids=[case.id for case in KEEPS])
def test_a_keep_rule_that_drops_images_keeps_the_text_and_the_pixels_in_step(case: RuleCase, rows: Path) -> None:
    """The official `--max_image_num 400` drops the earliest images with their places; a fixture row holds fewer than
    400, so the rule is made to bite here: the last half of the row's images kept."""
    whole = policy_request(replace(case.policy, keep_last_images=None), case.slot.task, rows)
    kept = max(1, whole.num_images // 2)
    request = policy_request(replace(case.policy, keep_last_images=kept), case.slot.task, rows)
    assert request.num_images == kept < whole.num_images
    result = forward_pass(case.family, request, **dict(case.args))
    assert result.error is None and result.answer is not None
    assert result.image_tokens == result.image_features > 0
    if result.exact:
        assert result.counted == result.prompt_tokens


def test_every_rule_and_paper_argument_of_an_hf_alias_that_runs_here_is_in_a_case() -> None:
    """Each rule an alias declares (its own, and its paper runs' on each benchmark) matches a task some case stands
    for the alias, and each paper run's arguments reach a case of that benchmark: a rule on rows no slot holds fails
    here rather than go without a forward pass."""
    tables = papers(index_benchmarks())
    for family in FAMILIES:
        for alias in hf_aliases(family) if family.runs else ():
            runs = [(b.name.lower(), run) for b, table in tables if (run := table.run_by(alias))]
            for rule in (*ALIASES[alias].rules, *(r for _, run in runs for r in run.rules)):
                assert any(a == alias and rule.matches(task) for case in CASES for a, task in case.covers), (
                    f"{alias}: no case holds a task of its rule {rule.tasks} ({rule.why})"
                )
            for benchmark, run in runs:
                assert any(
                    case.slot.benchmark == benchmark
                    and any(a == alias for a, _ in case.covers)
                    and dict(run.args).items() <= dict(case.args).items()
                    for case in CASES
                ), f"{alias}: no {benchmark} case runs with its paper arguments {dict(run.args)}"
