"""The cache order (`harness.models.shared.scheduling.prefix_order`): the longest request first, then requests sharing a prompt prefix
together, each group short to long, and the order never changes an answer or a results file (the `random` and tiny
`hf` models, both orders)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builders.mmlongbench import build_mmlongbench
from harness.api import GenerationSettings, ImagePart, ImageRef, Message, Request, TextPart
from harness.models.backends.baselines.random_guess import RandomModel
from harness.models.shared.scheduling.prefix_order import (
    CHARS_PER_TOKEN,
    TEXT_CHUNK_CHARS,
    cache_order,
    prompt_key,
    shared_tokens,
)

NIAH = ("niah_vh_single_8k", "niah_vh_multi_8k", "niah_mmniah_ret_text_8k")
TASKS = ",".join(f"mmlongbench_{c}" for c in NIAH)


def needle_request(
    doc_id: int, haystack: str, depth: int, parts: tuple[TextPart | ImagePart, ...], text_tokens: int, images: int
) -> Request:
    """The row `haystack#depth`: one user message of `parts`, `text_tokens` and `images` images of 100 tokens."""
    message = (Message("user", parts),)
    settings = GenerationSettings()
    return Request(
        "t", doc_id, f"{haystack}#{depth}", message, settings, text_tokens=text_tokens, image_tokens=(100,) * images
    )


def request(doc_id: int, haystack: str, images: int, depth: int) -> Request:
    """A needle row: `images` haystack images of one id with the needle image inserted after `depth` of them."""
    shas = [f"{haystack}{k:04d}".ljust(64, "0") for k in range(images)]
    shas.insert(depth, "needle".ljust(64, "0"))
    parts = (
        TextPart("Look at the images."),
        *(ImagePart(ImageRef(s, lambda: b"")) for s in shas),
        TextPart("Is there a cat?"),
    )
    return needle_request(doc_id, haystack, depth, parts, 10, len(shas))


def contiguous(rows: list[Request], order: list[int], haystack: str) -> bool:
    """Whether a haystack's rows (but its depth-0 rows, which share only the instruction) run one after another."""
    at = [
        k
        for k, i in enumerate(order)
        if rows[i].sample_id.startswith(haystack) and not rows[i].sample_id.endswith("#0")
    ]
    return at == list(range(at[0], at[0] + len(at)))


def test_rows_of_one_haystack_run_together_and_long_first() -> None:
    # Two ids, each at three depths and at two lengths (a longer length shows more of the same haystack), and one
    # unrelated long row; the dataset interleaves them as a long-first sort would.
    rows = []
    for images in (40, 24):
        for haystack in ("aa", "bb"):
            rows += [request(len(rows), haystack, images, depth) for depth in (0, images // 2, images)]
    rows.append(request(len(rows), "cc", 45, 0))
    order = cache_order([r.token_count for r in rows], [prompt_key(r) for r in rows])
    assert sorted(order) == list(range(len(rows)))
    assert order[0] == len(rows) - 1  # the longest request still runs first
    ids = [rows[i].sample_id[:2] for i in order]
    for haystack in ("aa", "bb"):  # depth-0 rows share nothing but the instruction: they may run apart
        assert contiguous(rows, order, haystack), ids
    # A long-first order scatters them (so a bounded cache may have evicted a haystack when its next row runs).
    length_first = sorted(range(len(rows)), key=lambda i: (-rows[i].token_count, i))
    assert not contiguous(rows, length_first, "aa")


def test_a_haystack_grows_short_to_long_after_the_longest_request() -> None:
    # One id at three lengths (a longer length shows more of the same haystack), three depths each, listed long
    # first as a dataset sorted by length would, and an unrelated row longer than all of them.
    rows = []
    for images in (64, 40, 24):
        rows += [request(len(rows), "aa", images, depth) for depth in (images // 2, images, 3 * images // 4)]
    rows.append(request(len(rows), "zz", 70, 0))
    keys = [prompt_key(r) for r in rows]
    order = cache_order([r.token_count for r in rows], keys)
    assert order[0] == len(rows) - 1  # the longest request of the run first, so an out-of-memory shows at once
    # Then the haystack short to long, each length extending the shorter one's prefix: first the row whose needle
    # comes last (its whole haystack cached), then the rows that reuse most of it.
    shape = [(len(rows[i].image_tokens) - 1, int(rows[i].sample_id.split("#")[1])) for i in order[1:]]
    assert shape == [(24, 24), (24, 18), (24, 12), (40, 40), (40, 30), (40, 20), (64, 64), (64, 48), (64, 32)]
    # The order before (grow=False) ran the group from its longest length, so that length reused nothing shorter.
    old = [len(rows[i].image_tokens) - 1 for i in cache_order([r.token_count for r in rows], keys, grow=False)]
    assert old[:2] == [70, 64]


def text_request(doc_id: int, haystack: str, passages: int, depth: int) -> Request:
    """A text-only needle row (VRAG's shape): one text part, passages joined by blank lines, the needle passage
    after `depth` of them, the question image last."""
    texts = [f"Document {haystack}{k}: " + f"{haystack} words {k} " * 40 for k in range(passages)]
    texts.insert(depth, "Document gold: the castle stands in Velmor. " * 10)
    parts = (
        TextPart("Use the documents.\n\n" + "\n\n".join(texts) + "\n\nQuestion: "),
        ImagePart(ImageRef("q".ljust(64, "0"), lambda: b"")),
        TextPart(" Where is it?"),
    )
    return needle_request(doc_id, haystack, depth, parts, passages * 100, 1)


def test_rows_sharing_text_passages_run_together() -> None:
    # A text part is keyed by chunks of whole passages, so rows whose haystack is one long text (no image between
    # passages) are seen to share it: each id's depths run together though the dataset interleaves the ids.
    rows: list[Request] = []
    for depth in (30, 60, 45):
        rows += [text_request(len(rows) + k, haystack, 60, depth) for k, haystack in enumerate(("aa", "bb"))]
    keys = [prompt_key(r) for r in rows]
    assert len(keys[0]) > 5  # role, image, question and the context text cut into chunks
    order = cache_order([r.token_count for r in rows], keys)
    for haystack in ("aa", "bb"):
        assert contiguous(rows, order, haystack), [rows[i].sample_id for i in order]
    # Two depths of one id are keyed alike up to the chunk holding the earlier needle (30 passages, ~13,600 chars).
    assert 2 * TEXT_CHUNK_CHARS // CHARS_PER_TOKEN < shared_tokens(keys[0], keys[2]) < 13_600 // CHARS_PER_TOKEN


def test_no_shared_prefix_keeps_the_long_first_order() -> None:
    rows = [request(i, f"h{i}", 5 + i % 3, 5 + i % 3) for i in range(7)]
    length_first = sorted(range(len(rows)), key=lambda i: (-rows[i].token_count, i))
    assert cache_order([r.token_count for r in rows], [prompt_key(r) for r in rows]) == length_first


def test_the_random_model_takes_its_order_in_its_constructor() -> None:
    assert RandomModel.from_args({"request_order": "cache"}).facts.request_order == "cache"
    assert RandomModel(seed=1).facts.request_order == "length"
    with pytest.raises(ValueError, match="random backend: request_order must be one of length, cache, got 'x'"):
        RandomModel(request_order="x")


def test_cache_order_rejects_mismatched_inputs() -> None:
    with pytest.raises(ValueError, match="2 token counts for 1 keys"):
        cache_order([1, 2], [()])


@pytest.fixture(scope="module")
def mmlb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mmlb_niah")
    build_mmlongbench(source="fixture", out_dir=root, configs=list(NIAH))
    return root


def journal(out: Path, model: str, task: str) -> list[dict]:
    lines = (out / model / f"journal_{task}.jsonl").read_text().splitlines()[1:]
    return [json.loads(line) for line in lines]


def runs_in_both_orders(harness, tmp_path: Path, data: Path, model: list[str], name: str, extra: str = "") -> dict:
    """{order: (results 'results', {task: journal records in generation order})} for length and cache orders."""
    out = {}
    for order in ("length", "cache"):
        args = f"{extra},request_order={order}" if extra else f"request_order={order}"
        run = harness(
            "--tasks",
            TASKS,
            *model,
            "--model_args",
            args,
            "--data_dir",
            data,
            "--gen_kwargs",
            "max_gen_toks=4",
            "--output_path",
            tmp_path / order,
            "--seed",
            "3",
        )
        assert run.code == 0, run.err
        out[order] = (
            run.results(name)["results"],
            {f"mmlongbench_{c}": journal(tmp_path / order, name, f"mmlongbench_{c}") for c in NIAH},
        )
    return out


def assert_same_results_in_another_order(out: dict) -> None:
    (results_a, journals_a), (results_b, journals_b) = out["length"], out["cache"]
    assert results_a == results_b
    moved = 0
    for task, records in journals_a.items():
        key = [(r["sample_id"], r["response"], r["metrics"], r["input_sha256"]) for r in records]
        other = [(r["sample_id"], r["response"], r["metrics"], r["input_sha256"]) for r in journals_b[task]]
        assert sorted(key) == sorted(other) and len(key) > 0
        moved += [r["sample_id"] for r in records] != [r["sample_id"] for r in journals_b[task]]
    assert moved  # the orders differ (journals are written in generation order)


@pytest.mark.slow  # a run in each order
def test_random_answers_and_results_do_not_depend_on_the_order(harness, tmp_path: Path, mmlb_dir: Path) -> None:
    assert_same_results_in_another_order(
        runs_in_both_orders(harness, tmp_path, mmlb_dir, ["--model", "random"], "random")
    )


@pytest.mark.slow  # a tiny LLaVA's run in each order
def test_hf_greedy_answers_do_not_depend_on_the_order(
    harness, tmp_path: Path, mmlb_dir: Path, tiny_llava: Path
) -> None:
    out = runs_in_both_orders(
        harness,
        tmp_path,
        mmlb_dir,
        ["--model", "hf", "--batch_size", "4"],
        str(tiny_llava).replace("/", "__"),
        f"pretrained={tiny_llava},threads=1",
    )
    assert_same_results_in_another_order(out)


def test_an_unknown_order_is_a_clear_error(harness, tmp_path: Path, mmlb_dir: Path) -> None:
    run = harness(
        "--tasks",
        TASKS,
        "--model",
        "random",
        "--model_args",
        "request_order=fastest",
        "--data_dir",
        mmlb_dir,
        "--output_path",
        tmp_path,
    )
    assert run.code != 0 and "request_order must be one of length, cache, got 'fastest'" in run.err
