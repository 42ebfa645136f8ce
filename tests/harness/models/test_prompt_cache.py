"""Provider prompt caching (`harness.models.shared.api_client.prompt_cache`): which prefixes a request marks, which request
of its batch it waits for, and what a provider is sent, on requests made here and on MMLongBench fixture rows run
against loopback servers that check the marks and answer with cached-token usage."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from harness.api import GenerationSettings, ImagePart, ImageRef, Message, Request, TextPart
from harness.models.facts.pricing import PriceTable
from harness.models.shared.api_client.prompt_cache import MOST_MARKS, PrefixPlanner, in_turn, prompt_shape
from harness.running.budget import Budget

IMAGE = 300  # each image's tokens by the rows' figures


def needle_row(doc_id: int, haystack: str, depth: int, images: int = 8) -> Request:
    """A needle row: an instruction, `images` haystack images of one id, the needle inserted after `depth` of them."""
    shas = [f"{haystack}{k:04d}".ljust(64, "0") for k in range(images)]
    shas.insert(depth, "needle".ljust(64, "0"))
    parts = (
        TextPart("Look at the images."),
        *(ImagePart(ImageRef(s, lambda: b"")) for s in shas),
        TextPart(""),
        TextPart("Is there a cat?"),
    )
    return Request(
        "t",
        doc_id,
        f"{haystack}#{depth}",
        (Message("system", (TextPart("Answer briefly."),)), Message("user", parts)),
        GenerationSettings(),
        text_tokens=10,
        image_tokens=(IMAGE,) * len(shas),
    )


def test_a_row_marks_where_the_rows_sharing_its_haystack_branch_off() -> None:
    # One haystack at depths 2, 4 and 8 (the needle last), another at depth 4, and a row of a third haystack alone.
    rows = [needle_row(0, "aa", 2), needle_row(1, "aa", 4), needle_row(2, "aa", 8), needle_row(3, "bb", 4)]
    rows.append(needle_row(4, "cc", 0))
    plans = PrefixPlanner(min_tokens=1024).plan([prompt_shape(r) for r in rows])
    # aa#2 shares its first 2 images with aa#4 and aa#8, aa#4 its first 4 with aa#8: each marks where one branches
    # off (the first mark at 2 images is under 1,024 tokens, so aa#2 marks nothing past 600 tokens of its own).
    assert [m.part for m in plans[0].marks] == []
    assert [m.part for m in plans[1].marks] == [4] and [m.part for m in plans[2].marks] == [4]
    assert plans[1].leader is None and plans[2].leader == 1  # aa#8 reads what aa#4 writes, once aa#4 has answered
    assert plans[2].read == plans[1].marks[-1].tokens and plans[2].written == 0
    assert plans[3].marks == () and plans[4].marks == () and plans[4].key is None  # no other row shares them
    assert plans[1].key == plans[2].key is not None
    lower = PrefixPlanner(min_tokens=100).plan([prompt_shape(r) for r in rows])
    assert [m.part for m in lower[0].marks] == [2] and [m.part for m in lower[2].marks] == [2, 4]
    assert lower[0].key == lower[1].key == lower[2].key  # one key for the haystack: its shortest shared prefix
    assert lower[3].marks == () and lower[3].key is None  # bb shares only the instruction, under 100 tokens


def test_at_most_four_marks_the_longest_and_a_later_batch_reads_an_earlier_ones() -> None:
    rows = [needle_row(d, "aa", d) for d in range(1, 9)]  # one haystack, the needle after 1, 2, ..., 8 of its images
    planner = PrefixPlanner(min_tokens=1)
    first = planner.plan([prompt_shape(r) for r in rows[:-1]])
    deepest = first[-1]  # it shares 1, 2, ..., 6 images with the six before it: six places where one branches off
    assert len(deepest.marks) == MOST_MARKS
    assert [m.part for m in deepest.marks] == [3, 4, 5, 6]  # the longest shared prefixes
    # The last row comes in the next batch: it reads the longest prefix the first batch marked, waiting for nothing.
    (last,) = planner.plan([prompt_shape(rows[-1])])
    assert last.leader is None and last.read == deepest.marks[-1].tokens
    # A system turn is marked only at its end, an empty text never (no block is sent for it).
    shape = prompt_shape(rows[0])
    places = {(end.message, end.part) for end in map(shape.end, range(len(shape.prefixes)))}
    assert (0, 0) in places and (1, 0) in places and (1, 10) not in places


def test_a_follower_is_sent_once_its_leader_has_answered() -> None:
    started: dict[int, float] = {}
    ended: dict[int, float] = {}
    lock = threading.Lock()

    def send(request: Request) -> int:
        with lock:
            started[request.doc_id] = time.monotonic()
        time.sleep(0.05)
        with lock:
            ended[request.doc_id] = time.monotonic()
        return request.doc_id

    rows = [needle_row(i, "aa", 1) for i in range(5)]
    leaders = [None, 0, 0, None, 2]
    with ThreadPoolExecutor(4) as pool:
        done = [i for i, future in in_turn(pool, send, rows, leaders, 4) if future.result() == i]
    assert sorted(done) == list(range(5))
    assert started[1] >= ended[0] and started[2] >= ended[0] and started[4] >= ended[2]
    assert started[3] < ended[0]  # a request that waits for nothing is not held back


def test_the_budget_charges_cache_reads_and_writes_at_their_prices() -> None:
    sonnet = PriceTable.load().price_of("claude-3-7-sonnet-20250219")
    budget = Budget(1.0, sonnet)
    usage = {"input_tokens": 1000, "output_tokens": 0, "cache_read_input_tokens": 100_000}
    budget.charge({**usage, "cache_creation_input_tokens": 10_000})
    # 1,000 x $3 + 100,000 x $0.30 + 10,000 x $3.75 a million
    assert budget.spent == (3000 + 30_000 + 37_500) / 1e6


def test_claude_marks_no_prefix_shorter_than_anthropic_caches_for_the_model(harness) -> None:
    """Anthropic caches from 4,096 tokens on Opus 4.5 and 4.6 and Haiku 4.5 (issue 74): each Claude alias, and the
    bare model name, marks from its model's minimum; `prompt_cache_min_tokens` given is kept."""
    from harness.models.aliases import ALIASES
    from harness.models.backends.anthropic_messages.model import AnthropicSettings
    from harness.models.families.claude import cache_minimum

    claude = {name: a.args for name, a in ALIASES.items() if a.backend == "anthropic"}
    for args in claude.values():
        for given in (args, {"model": args["model"]}):
            rule = AnthropicSettings.from_args(given).cache_rule(1)
            assert rule is not None and rule.min_tokens == cache_minimum(str(args["model"]))
    assert cache_minimum(claude["claude-opus-4.6"]["model"]) == 4096
    assert cache_minimum(claude["claude-sonnet-4.6"]["model"]) == 1024
    given = AnthropicSettings.from_args({"model": "claude-opus-4-6", "prompt_cache_min_tokens": "50"})
    assert given.cache_rule(1) is not None and given.cache_rule(1).min_tokens == 50
    listed = harness("models", "claude-opus-4.6")
    assert "prompt_cache_min_tokens=4096" in listed.out
    assert "prompts cached from 4,096 tokens (Anthropic's prompt-caching guide, Cache limitations" in listed.out
