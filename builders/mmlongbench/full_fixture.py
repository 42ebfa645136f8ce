"""A length-true stand-in for the authors' release (`--source fixture:full`): rows that reach their length labels.

`write_full_source(root, ids_per_file=1, lengths=LENGTHS, leaves=all 19)` writes, in the release's own formats
(the ones `fixture.py` writes and `plan.py` reads), one file per leaf and length whose rows count, under the
paper's rule (text tokens of the assembled prompt + one token per 28 x 28 block of each image, §3), at most their
length label and less than one unit short of it: a passage (VRAG), an image (VH), a passage or an image (MM-NIAH),
a demonstration (ICL: a round is cut short, as the paper does), a page (Summarization, DocVQA). Rows are filled
greedily from each id's own stream of units, in order, until the next unit does not fit, and every row is then
counted again through the official assembler to check it.

What it draws, and why (spec §2.7, §3.4):
- photos (VH haystacks, MM-NIAH's OBELICS images, VRAG's entity image): COCO sizes 640 x 480 and 640 x 427
  (391 and 345 tokens), noise-textured JPEGs of ~70 kB;
- ICL exemplars: one size per dataset, its typical photo, chosen so that a 128K row holds about Table 3's count
  (Stanford Cars 476 x 336, Food101 512 x 480, SUN397 448 x 336, iNat2021 500 x 375);
- pages: US Letter rendered at 144 DPI, as the paper renders PDFs: 1224 x 1584 (2,508 tokens; under Qwen's
  default pixel cap a model sees 1,280 of them); slides 1024 x 768 (999 tokens), as SlideVQA's `-1024.jpg` files;
- MM-NIAH's needle and option cartoons: 224 x 224 (64 tokens);
- passages: 100 plausible English words each.

As in the release, a longer length shows more of the same stream, and the depths (or permutations) of one id
share one haystack with the needle inserted into it: the units before the needle are the same at every depth,
so a prompt cache can reuse them. Same arguments, same bytes.

Pools past 128K (`pools`: leaf -> the longest length its family's configs past 128K need). The 256K-1M configs
grow each 128K row from what the family's other files show (`pools.py`), and one id per file shows too little.
Only when asked, the files then carry more, sized for that length (`pool_ids`, with a margin for what `pools.py`
leaves out near needles): VRAG, VH, MM-NIAH and DocVQA get pool ids in their 64K file (ids POOL_BASE,
POOL_BASE + POOL_STRIDE, ...: new passages, haystack images, OBELICS units and documents; 64K, as the longest
file that is not itself a row to grow); ICL gets more exemplar sets in its 128K file (the same 50 classes and
rounds, fresh exemplars: the unseen exemplars the extended class schedule draws). Pool ids' and sets' images are
flat colour fields at the realistic sizes (`full_images.flat`): only their pixel sizes are counted.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import count, permutations
from pathlib import Path
from typing import Any

from builders.core.contract import IMAGE_PLACEHOLDER, image_tokens
from builders.core.tokens import ApproxTokenCounter, TextTokenCounter
from builders.mmlongbench import full_images
from builders.mmlongbench.leaves import CLAIMS_FILES, DEPTHS, LEAVES, LENGTHS, Leaf
from builders.mmlongbench.pools import family
from builders.mmlongbench.prompts import ASSEMBLERS, PASSAGE_TEMPLATE, assemble_icl, page_label
from builders.mmlongbench.release import IMAGE_DIR, TEXT_DIR

FULL_FIXTURE_VERSION = "1"
PHOTO_SIZES = ((640, 480), (640, 427))  # COCO's two common landscape sizes
ICL_PHOTO_SIZES = {"stanford_cars": (476, 336), "food101": (512, 480), "sun397": (448, 336), "inat2021": (500, 375)}
PAGE_SIZE = (1224, 1584)  # US Letter at 144 DPI
SLIDE_SIZE = (1024, 768)
CARTOON_SIDE = 224
# The paper's classes per ICL row (§2.3); a length past 128K keeps 50 unless the caller's schedule says otherwise.
ICL_CLASSES = {"8k": 5, "16k": 10, "32k": 20, "64k": 40, "128k": 50}
MMNIAH_IMAGE_EVERY = 16  # one OBELICS image per 15 passages: Table 3's ~59 images in a 128K text-needle row
WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which but have an they "
    "you were her she there been one all we their has would when if so no will more what up out into year people "
    "after some time could two them other than first new may only over most made such city also many before "
    "through back years where much your way well down should because each just those how too little state good "
    "very make world still own see men work long here between both life being under never day same another know "
    "while last might great old year off come since against go came right used take three states himself few house "
    "use during without again place around however home small found thought went say part once general high upon "
    "school every government united almost hand enough took head yet public system better set told nothing night "
    "end why called eyes find going look asked later knew point next program city business give group toward young "
    "days let room president side social given present several order national possible rather second face per "
    "among form important often things early river north market harbour railway council village museum church "
    "castle bridge station island valley mountain library garden festival century population district"
).split()
POOL_BASE = 10_000  # pool ids' numbers start past any --fixture-ids, so their names never meet a regular id's
POOL_STRIDE = 100  # DocVQA pads id b with documents x{b}, x{b+1}, ...: pool ids this far apart share none
POOL_FILE = "64k"  # the file that carries the pool ids (ICL: its 128K file carries the pool sets)
POOL_MARGIN = 1.25  # pool material per token needed: room for what `pools.py` leaves out near needles
COUNTED = "lanterns"  # the counting needles' word, not in WORDS
SYLLABLES = ("vel", "mor", "an", "tri", "sel", "dor", "ka", "len", "bri", "os", "thal", "ru", "mes", "quin", "zor")

_Row = dict[str, Any]


def _name(rng: random.Random, parts: int = 3) -> str:
    """A made-up proper name (never one of WORDS, so no haystack passage names the entity or the answer)."""
    return "".join(rng.choice(SYLLABLES) for _ in range(parts)).capitalize()


def _passage(rng: random.Random, words: int = 100) -> str:
    """`words` words in sentences of 8 to 18."""
    out = rng.choices(WORDS, k=words)
    start = 0
    while start < words:
        out[start] = out[start].capitalize()
        start += rng.randint(8, 18)
        out[min(start, words) - 1] += "."
    return " ".join(out)


@dataclass
class _Source:
    """The images named so far (path -> how to draw it), those the rows show, and the token counts the filling
    needs."""

    counter: TextTokenCounter
    images: dict[str, tuple[str, int, int, bool]] = field(default_factory=dict)
    shown: set[str] = field(default_factory=set)  # what the files name: the images to draw
    flat: bool = False  # set by `drawn_flat`
    _text_cache: dict[str, int] = field(default_factory=dict)
    _streams: dict[str, _Stream] = field(default_factory=dict)

    def stream(self, key: str, make: Callable[[], _Stream]) -> _Stream:
        """The id's stream (`key`: leaf/id), kept across lengths so a longer length extends a shorter one."""
        if key not in self._streams:
            self._streams[key] = make()
        return self._streams[key]

    @contextmanager
    def drawn_flat(self) -> Iterator[None]:
        """Within it, the photos, pages and slides named are drawn flat (`full_images.flat`): pool ids and sets."""
        self.flat = True
        try:
            yield
        finally:
            self.flat = False

    def image(self, path: str, kind: str, size: tuple[int, int], mark: bool = False) -> str:
        if self.flat and kind != "cartoon":
            kind = "flat"
        self.images.setdefault(path, (kind, size[0], size[1], mark))
        return path

    def photo(self, path: str, mark: bool = False) -> str:
        return self.image(path, "photo", PHOTO_SIZES[full_images.seed_of(path) % len(PHOTO_SIZES)], mark)

    def image_tokens(self, path: str) -> int:
        _, width, height, _ = self.images[path]
        return image_tokens(width, height)

    def text_tokens(self, text: str) -> int:
        if text not in self._text_cache:
            self._text_cache[text] = self.counter.count(text)
        return self._text_cache[text]

    def counted(self, prompt: str, images: Sequence[str], shown: bool = False) -> int:
        """The row's length as the builder counts it (`rows.make_row`): prompt text + image tokens; `shown`: the
        row goes into a file, so its images are drawn."""
        if shown:
            self.shown.update(images)
        return self.counter.count(prompt.replace(IMAGE_PLACEHOLDER, "")) + sum(self.image_tokens(p) for p in images)

    def draw(self, path: str) -> bytes:
        kind, width, height, mark = self.images[path]
        seed = full_images.seed_of(path)
        if kind == "photo":
            return full_images.photo(width, height, seed, mark=mark)
        if kind == "page":
            return full_images.page(width, height, seed)
        if kind == "slide":
            return full_images.slide(width, height, seed)
        if kind == "flat":
            return full_images.flat(width, height, seed, "PNG" if path.endswith(".png") else "JPEG")
        return full_images.cartoon(width, seed)


def _fit(budget: int, costs: Iterable[int]) -> int:
    """How many units of a stream, taken in order, fit in `budget` tokens (stopping at the first that does not)."""
    fitted = used = 0
    for cost in costs:
        if used + cost > budget:
            return fitted
        used += cost
        fitted += 1
    return fitted


class _Stream:
    """An id's units, made on first use and kept, so every length and depth of the id shows the same ones."""

    def __init__(self, make: Callable[[int], Any], cost: Callable[[Any], int]) -> None:
        self._make, self._cost = make, cost
        self._items: list[Any] = []

    def __getitem__(self, k: int) -> Any:
        while len(self._items) <= k:
            self._items.append(self._make(len(self._items)))
        return self._items[k]

    def costs(self) -> Iterator[int]:
        return (self._cost(self[k]) for k in count())

    def take(self, budget: int) -> list[Any]:
        return [self[k] for k in range(_fit(budget, self.costs()))]


def needle_positions(count: int, needles: int, variant: int, variants: int) -> list[int]:
    """Where an id's needles go among `count` haystack units: a single needle at depth DEPTHS[variant]; several,
    for permutation `variant` of `variants`, the j-th in the j-th of `needles` equal stretches, (variant + 0.5) /
    variants of the way through it (so each permutation moves every needle)."""
    if variants == len(DEPTHS) and needles == 1:
        return [round(DEPTHS[variant] * count)]
    return [round(count * (j + (variant + 0.5) / variants) / needles) for j in range(needles)]


def _insert(haystack: Sequence[Any], needles: Sequence[Any], positions: Sequence[int]) -> list[Any]:
    out = list(haystack)
    for needle, position in sorted(zip(needles, positions, strict=True), key=lambda pair: -pair[1]):
        out.insert(position, needle)
    return out


def _needle_order(needles: Sequence[Any], variant: int) -> list[Any]:
    orders = list(permutations(range(len(needles))))
    return [needles[k] for k in orders[variant % len(orders)]]


class _LengthError(RuntimeError):
    """A row the generator made does not fit its label as the builder counts it: a bug here, not bad input."""


def _check(where: str, tokens: int, counted: int, unit: int, exhausted: bool = False) -> None:
    if counted > tokens or (counted <= tokens - unit and not exhausted):
        raise _LengthError(f"{where}: {counted:,} counted tokens, expected within {unit:,} under {tokens:,}")


# ---------------------------------------------------------------------------------------------- the leaves


def _vrag(src: _Source, leaf: Leaf, tokens: int, base: int) -> list[_Row]:
    rng = random.Random(full_images.seed_of(f"{leaf.name}/{base}"))
    entity, city = f"{_name(rng)} Castle", _name(rng, 2)
    golds = [{"doc_id": f"{leaf.dataset}-{base}-gold{g}", "title": entity,
              "text": f"{entity} stands in {city}. " + _passage(rng, 90)} for g in range(2 if leaf.variants == 3 else 1)]
    row: _Row = {"id": f"{leaf.dataset}_{base}", "question": " Where is the castle in this picture?",
                 "original_question": f"Where is {entity}?", "answer": [city, f"{city} town"],
                 "image": src.photo(f"vrag/{leaf.dataset}/{base:04d}.jpg"), "positive_ctxs": golds}

    def negative(k: int) -> dict[str, str]:
        passage_rng = random.Random(full_images.seed_of(f"{leaf.name}/{base}/{k}"))
        return {"doc_id": f"{leaf.dataset}-{base}-{k}", "title": _name(passage_rng, 2), "text": _passage(passage_rng)}

    stream = src.stream(f"{leaf.name}/{base}",
                        lambda: _Stream(negative, lambda p: src.text_tokens(PASSAGE_TEMPLATE.format(**p))))
    fixed = _counted(src, leaf, {**row, "ctxs": golds})
    negatives = stream.take(tokens - fixed)
    rows = []
    for variant in range(leaf.variants):
        positions = needle_positions(len(negatives), len(golds), variant, leaf.variants)
        rows.append({**row, "ctxs": _insert(negatives, _needle_order(golds, variant), positions)})
    unit = max(src.text_tokens(PASSAGE_TEMPLATE.format(**p)) for p in [*negatives, *golds])
    return _checked(src, leaf, tokens, rows, unit)


def _vh(src: _Source, leaf: Leaf, tokens: int, base: int) -> list[_Row]:
    needles = [src.photo(f"vh/needle/{leaf.dataset}/{base:04d}_{j}.jpg") for j in range(1 if leaf.variants == 6 else 2)]
    row: _Row = {"id": f"{leaf.dataset}_{base}", "question": "For the image with a cat, is there a dog?",
                 "answer": "Yes" if base % 2 == 0 else "No"}
    stream = src.stream(f"{leaf.name}/{base}", lambda: _Stream(
        lambda k: src.photo(f"vh/haystack/{leaf.dataset}/{base:04d}/{k:05d}.jpg"), src.image_tokens))
    haystack = stream.take(tokens - _counted(src, leaf, {**row, "ctxs": needles}))
    rows = [{**row, "ctxs": _insert(haystack, _needle_order(needles, variant),
                                    needle_positions(len(haystack), len(needles), variant, leaf.variants))}
            for variant in range(leaf.variants)]
    return _checked(src, leaf, tokens, rows, max(src.image_tokens(p) for p in [*haystack, *needles]))


def _interleaved(items: Sequence[tuple[str, str]]) -> tuple[list[dict[str, str]], list[str]]:
    """MM-NIAH's `ctxs` (passages, and `<image>` where an image goes) and `image_list`, from (kind, value) units."""
    ctxs = [{"text": IMAGE_PLACEHOLDER if kind == "image" else value} for kind, value in items]
    return ctxs, [value for kind, value in items if kind == "image"]


def _mmniah_needles(src: _Source, leaf: Leaf, base: int, rng: random.Random) -> tuple[list[tuple[str, str]], _Row]:
    """The id's needles (units to insert) and the row's question fields."""
    root = f"mm-niah/{leaf.dataset}/{base:04d}"
    many = 1 if leaf.variants == 6 else 3
    if leaf.loader == "mmniah_text":
        if "count" in leaf.dataset:  # the answer, in the needles' order in the row, is set by `_mmniah`
            needles = [("text", "Little penguins " + " and ".join([COUNTED] * rng.randint(1, 4)) + " were seen.")
                       for _ in range(many)]
            return needles, {"question": f"How many times are {COUNTED} mentioned in each needle? Answer as a list."}
        word = _name(rng, 2).lower()
        if "reason" in leaf.dataset:
            people = [_name(rng, 2) for _ in range(many + 1)]
            needles = [("text", f"{people[j]} is older than {people[j + 1]}.") for j in range(many)]
            return needles, {"question": f"Who is the oldest among {', '.join(sorted(people))}?", "answer": people[0]}
        return [("text", f"The secret word is {word}.")], {"question": "What is the secret word?", "answer": word}
    needles = [("image", src.photo(f"{root}/needle_{j}.jpg", mark=True)) for j in range(many)]
    if leaf.loader == "mmniah_image_count":
        cartoon = src.image(f"{root}/cartoon.png", "cartoon", (CARTOON_SIDE, CARTOON_SIDE))
        return needles, {"needle_image_list": [cartoon], "question": "How many times does this cartoon "
                         f"{IMAGE_PLACEHOLDER} appear in each image? Answer as a list."}
    choices = [src.image(f"{root}/choice_{c}.png", "cartoon", (CARTOON_SIDE, CARTOON_SIDE)) for c in "ABCD"]
    return needles, {"choices_image": choices, "answer": base % 4,
                     "question": "Which of the following images appears in a certain image of the above document?"}


def _mmniah(src: _Source, leaf: Leaf, tokens: int, base: int) -> list[_Row]:
    rng = random.Random(full_images.seed_of(f"{leaf.name}/{base}"))
    needles, fields = _mmniah_needles(src, leaf, base, rng)
    root = f"mm-niah/{leaf.dataset}/{base:04d}"

    def unit(k: int) -> tuple[str, str]:
        if k % MMNIAH_IMAGE_EVERY == MMNIAH_IMAGE_EVERY - 1:
            return "image", src.photo(f"{root}/obelics_{k:05d}.jpg")
        return "text", _passage(random.Random(full_images.seed_of(f"{root}/{k}")))

    def cost(item: tuple[str, str]) -> int:
        return src.image_tokens(item[1]) if item[0] == "image" else src.text_tokens(item[1])

    stream = src.stream(f"{leaf.name}/{base}", lambda: _Stream(unit, cost))

    def row_of(items: Sequence[tuple[str, str]]) -> _Row:
        ctxs, image_list = _interleaved(items)
        row = {"id": f"{leaf.dataset}_{base}", "ctxs": ctxs, "image_list": image_list, **fields}
        if leaf.loader == "mmniah_image_count":  # one count per image of the document: 1 where a needle was pasted
            row["answer"] = [int(item in needles) for item in items if item[0] == "image"]
        elif "answer" not in row:  # text counting: the needles' counts in the order they appear
            row["answer"] = [item[1].split().count(COUNTED) for item in items if item in needles]
        return row

    haystack = stream.take(tokens - _counted(src, leaf, row_of(needles)))
    rows = [row_of(_insert(haystack, _needle_order(needles, variant),
                           needle_positions(len(haystack), len(needles), variant, leaf.variants)))
            for variant in range(leaf.variants)]
    return _checked(src, leaf, tokens, rows, max(cost(item) for item in [*haystack, *needles]))


def _icl(src: _Source, leaf: Leaf, length: str, tokens: int, ids: int, pool_sets: int = 0) -> dict[str, Any]:
    """`{domain: {exemplar_list, test_example}}`: two exemplar sets of the same rounds (one exemplar per class,
    the last round cut short where the next exemplar would not fit), so whichever set a row draws, it counts the
    same; `ids` test examples per domain. `pool_sets`: more sets of the same shape, each of fresh (flat)
    exemplars, `pool/set{s}/...`: the unseen exemplars per class that the configs past 128K add rounds from."""
    classes = ICL_CLASSES.get(length, max(ICL_CLASSES.values()))
    size = ICL_PHOTO_SIZES[leaf.dataset]
    data: dict[str, Any] = {}
    for domain in ("Birds", "Plants") if leaf.dataset == "inat2021" else ("all",):
        root = f"icl/{leaf.dataset}/{domain}"
        tests = [{"image": src.image(f"{root}/test_{t:04d}.jpg", "photo", size), "answer": t % classes}
                 for t in range(ids)]

        def shot(k: int, folder: str = root) -> dict[str, Any]:  # the k-th demonstration: round k // classes
            return {"image": src.image(f"{folder}/class{k % classes:02d}_{k // classes:03d}.jpg", "photo", size),
                    "id": k % classes}

        def cost(item: dict[str, Any]) -> int:
            return src.text_tokens(f"label: {item['id']}") + src.image_tokens(item["image"])

        def rounds_of(folder: str, budget: int) -> list[list[dict[str, Any]]]:
            shots = _Stream(lambda k: shot(k, folder), cost).take(budget)
            return [shots[r:r + classes] for r in range(0, len(shots), classes)]

        fixed = src.counted(assemble_icl(tests[0], [], root).prompt, [tests[0]["image"]])
        rounds = rounds_of(root, tokens - fixed)
        # The second set holds the same rounds in another order (the short one moved), so the two sets differ as
        # the release's do and count the same.
        sets = [rounds, rounds[1:] + rounds[:1]]
        with src.drawn_flat():
            sets += [rounds_of(f"{root}/pool/set{s:02d}", tokens - fixed) for s in range(pool_sets)]
        data[domain] = {"exemplar_list": sets, "test_example": tests}
        where = f"{leaf.file(length) if length in LENGTHS else leaf.name} ({domain})"
        for test in tests:
            for exemplars in sets:
                flat = [item for rnd in exemplars for item in rnd]
                assembled = assemble_icl(test, flat, where)
                _check(where, tokens, src.counted(assembled.prompt, assembled.images, shown=True),
                       max(cost(item) for item in flat))
    return data


def _pages(src: _Source, root: str, doc: str, count: int, slides: bool = False) -> list[str]:
    if slides:
        return [src.image(f"{root}/{doc}/{doc}-{p + 1}-1024.jpg", "slide", SLIDE_SIZE) for p in range(count)]
    return [src.image(f"{root}/{doc}/{doc}_page{p}.png", "page", PAGE_SIZE) for p in range(count)]


def _page_cost(src: _Source, path: str, split_index: int) -> int:
    """A page's label (as the official loader writes it) and its image."""
    return src.text_tokens(page_label(path, split_index).replace(IMAGE_PLACEHOLDER, "")) + src.image_tokens(path)


def govreport_pages(base: int) -> int:
    """Pages of the id's report: 52-60, long enough for 128K and within the paper's 128K + 24K cut (§2.4)."""
    return 52 + (base * 5) % 9


def _summ_docs(leaf: Leaf, ids: int) -> list[str]:
    return [f"gao-{12 + base}-{156 + base}" if leaf.loader == "govreport" else f"case-{base}" for base in range(ids)]


def _summ(src: _Source, leaf: Leaf, tokens: int, base: int) -> list[_Row]:
    """The document's pages from its start, cut from the end (Multi-LexSum: its two documents cut evenly)."""
    rng = random.Random(full_images.seed_of(f"{leaf.name}/{base}"))
    root = f"summ/{leaf.dataset}"
    doc = _summ_docs(leaf, base + 1)[base]
    if leaf.loader == "govreport":
        docs = [_pages(src, root, doc, govreport_pages(base))]
        row: _Row = {"id": f"{leaf.dataset}_{doc}", "summary": [
            {"section_title": "Why GAO Did This Study", "paragraphs": [_passage(rng, 60)]},
            {"section_title": "What GAO Found", "paragraphs": [_passage(rng, 80), _passage(rng, 50)]},
            {"section_title": "What GAO Recommends", "paragraphs": [_passage(rng, 30)]}]}
    else:
        docs = [_pages(src, root, f"{doc}-d{d}", 27 + (base * 3 + d) % 8) for d in range(2)]
        row = {"id": f"{leaf.dataset}_{doc}", "summary": _passage(rng, 220)}
    # Pages join in turn from each document's start, so a cut falls evenly on the documents' ends.
    order = [doc_pages[k] for k in range(max(map(len, docs))) for doc_pages in docs if k < len(doc_pages)]
    fixed = _counted(src, leaf, {**row, "image_list": []})
    shown = set(order[:_fit(tokens - fixed, (_page_cost(src, p, 1) for p in order))])
    row["image_list"] = [p for doc_pages in docs for p in doc_pages if p in shown]
    exhausted = len(shown) == len(order)
    return _checked(src, leaf, tokens, [row], max(_page_cost(src, p, 1) for p in order), exhausted)


DOC_PREFIX = {"mmlongbench_doc": "mmdoc", "longdocurl": "ldurl", "slidevqa": "deck"}  # no "page": see page_label
_DOCQA_ANSWERS = (("3", "Integer"), ("12.5", "Float"), ("harbour council", "String"), ("Not answerable", "None"),
                  ('["railway", "2019"]', "List"))


def _docqa(src: _Source, leaf: Leaf, tokens: int, base: int) -> list[_Row]:
    """The id's document around its answer page, cut evenly from both sides; a document too short for the length
    is padded with other documents, alternately on the left and the right, the last one cut at a page."""
    slides = leaf.dataset == "slidevqa"
    root = f"docqa/{leaf.dataset}"
    own_pages = 20 if slides else (24 + (base * 7) % 20 if leaf.dataset == "mmlongbench_doc" else 30 + (base * 11) % 30)
    prefix = DOC_PREFIX[leaf.dataset]
    doc = f"{prefix}-{base:04d}"
    pages = _pages(src, root, doc, own_pages, slides)
    answer_page = (base * 5 + 3) % own_pages
    answer, answer_format = _DOCQA_ANSWERS[base % len(_DOCQA_ANSWERS)]
    row: _Row = {"id": doc, "doc_name": doc, "question": f"What does the table on page {answer_page + 1} report?",
                 "answer": answer, "answer_format": answer_format, "ans_page_list": [answer_page]}
    # Growth events: ("L" | "R", page); the row shows the answer page and the first events that fit.
    events: list[tuple[str, str]] = []
    left, right = answer_page - 1, answer_page + 1
    while left >= 0 or right < own_pages:
        if right < own_pages and (left < 0 or len(events) % 2 == 1):
            events.append(("R", pages[right]))
            right += 1
        else:
            events.append(("L", pages[left]))
            left -= 1

    def padding() -> Iterator[tuple[str, str]]:
        # Other documents of the dataset (shared by the ids: id b starts at the b-th), left, right, left, ...;
        # a left one joins from its end, so whichever side a cut falls on, the pages shown are contiguous.
        for j in count():
            neg = f"{prefix}-x{base + j:03d}"
            neg_pages = _pages(src, root, neg, 20 if slides else 8 + ((base + j) * 5) % 17, slides)
            side = "L" if j % 2 == 0 else "R"
            yield from ((side, p) for p in (reversed(neg_pages) if side == "L" else neg_pages))

    split = -1
    fixed = _counted(src, leaf, {**row, "page_list": [pages[answer_page]]})

    def all_events() -> Iterator[tuple[str, str]]:
        yield from events
        yield from padding()

    chosen: list[tuple[str, str]] = []
    used = 0
    for side, path in all_events():
        cost = _page_cost(src, path, split)
        if used + cost > tokens - fixed:
            break
        chosen.append((side, path))
        used += cost
    lefts = [p for side, p in chosen if side == "L"]
    rights = [p for side, p in chosen if side == "R"]
    row["page_list"] = lefts[::-1] + [pages[answer_page]] + rights
    unit = max(_page_cost(src, p, split) for p in row["page_list"])
    return _checked(src, leaf, tokens, [row], unit)


# ------------------------------------------------------------------------------------------------ plumbing


def _counted(src: _Source, leaf: Leaf, row: _Row, shown: bool = False) -> int:
    assembled = ASSEMBLERS[leaf.loader](row, leaf.name)
    return src.counted(assembled.prompt, assembled.images, shown)


def _checked(src: _Source, leaf: Leaf, tokens: int, rows: list[_Row], unit: int, exhausted: bool = False
             ) -> list[_Row]:
    for row in rows:
        _check(f"{leaf.name} {row['id']}", tokens, _counted(src, leaf, row, shown=True), unit, exhausted)
    return rows


_ROW_WRITERS: dict[str, Callable[[_Source, Leaf, int, int], list[_Row]]] = {
    "vrag": _vrag, "vh": _vh, "mmniah_text": _mmniah, "mmniah_image_count": _mmniah, "mmniah_image_mc": _mmniah,
    "govreport": _summ, "multilexsum": _summ, "docqa": _docqa,
}


def pool_ids(tokens: int, members: int, per_id: int) -> int:
    """Pool ids (ICL: exemplar sets) of about `per_id` tokens each, over a family of `members` leaves, that give
    a 128K row `tokens` to grow to, with POOL_MARGIN; 0 at 128K and below."""
    need = tokens - LENGTHS["128k"]
    return math.ceil(need * POOL_MARGIN / (per_id * members)) + 1 if need > 0 else 0


def full_source_files(ids_per_file: int = 1, lengths: Mapping[str, int] | None = None,
                      leaves: Iterable[str] | None = None, counter: TextTokenCounter | None = None,
                      only: Collection[tuple[str, str]] | None = None, pools: Mapping[str, int] | None = None
                      ) -> tuple[dict[str, bytes], _Source]:
    """(text files under mmlb_data/ by relative path, the source whose `shown` images they name, not yet
    drawn)."""
    pools = pools or {}
    lengths = dict(LENGTHS if lengths is None else lengths)
    chosen = _leaves(leaves)
    src = _Source(counter or ApproxTokenCounter())
    texts: dict[str, bytes] = {}
    for length, tokens in lengths.items():
        for leaf in chosen:
            if only is not None and (leaf.name, length) not in only:
                continue
            name = leaf.pattern.format(k=tokens // 1024)
            pool = pools.get(leaf.name, 0)
            if leaf.loader == "icl":
                sets = pool_ids(pool, 1, LENGTHS["128k"]) if length == "128k" else 0
                texts[name] = json.dumps(_icl(src, leaf, length, tokens, ids_per_file, sets), indent=1).encode()
                continue
            rows = [row for base in range(ids_per_file) for row in _ROW_WRITERS[leaf.loader](src, leaf, tokens, base)]
            if length == POOL_FILE:
                with src.drawn_flat():
                    rows += [row for i in range(pool_ids(pool, len(family(leaf)), tokens))
                             for row in _ROW_WRITERS[leaf.loader](src, leaf, tokens, POOL_BASE + POOL_STRIDE * i)]
            texts[name] = "".join(json.dumps(row) + "\n" for row in rows).encode()
    for leaf in chosen:
        if leaf.dataset in CLAIMS_FILES and any(leaf.pattern.format(k=t // 1024) in texts for t in lengths.values()):
            rng = random.Random(full_images.seed_of(f"{leaf.name}/claims"))
            ids = [f"{leaf.dataset}_{doc}" for doc in _summ_docs(leaf, ids_per_file)]
            texts[CLAIMS_FILES[leaf.dataset]] = "".join(
                json.dumps({"id": row_id, "claims": [_passage(rng, 12) for _ in range(5)]}) + "\n" for row_id in ids
            ).encode()
    return texts, src


def _leaves(names: Iterable[str] | None) -> list[Leaf]:
    by_name = {leaf.name: leaf for leaf in LEAVES}
    if names is None:
        return list(LEAVES)
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"unknown MMLongBench leaves {unknown}: expected names from {', '.join(by_name)}")
    return [by_name[n] for n in names]


def write_full_source(root: str | Path, *, ids_per_file: int = 1, lengths: Mapping[str, int] | None = None,
                      leaves: Iterable[str] | None = None, counter: TextTokenCounter | None = None,
                      only: Collection[tuple[str, str]] | None = None, reuse_images: bool = False,
                      pools: Mapping[str, int] | None = None) -> Path:
    """Write the length-true release into `root` (`mmlb_data/`, `mmlb_image/`) and return `root`.

    `ids_per_file`: ids per leaf file (ICL: test examples per domain); `lengths`: label -> tokens (default the
    paper's five, 8K-128K; files are named `K{tokens // 1024}` as the release names them); `leaves`: leaf names
    (`niah_vh_single`, ...; default all 19); `counter`: the text counter the rows must fit under (default the
    builder's `approx`); `only`: (leaf, length) pairs, to write just those files of leaves x lengths. A file's
    bytes do not depend on which others are written. `reuse_images`: keep an image file already in
    `root/mmlb_image/` rather than draw it again (an image's path fixes its bytes, so a folder this function
    filled before, for other ids or lengths, can be shared; `mmlb_image` may be a link to it). `pools`: leaf ->
    the longest length past 128K (tokens) its family's configs grow to: its 64K file (ICL: 128K file) then also
    carries the pool they grow from (see the module's doc), which changes those files; without it, none.
    """
    if ids_per_file < 1:
        raise ValueError(f"ids_per_file should be at least 1, got {ids_per_file}")
    root = Path(root)
    texts, src = full_source_files(ids_per_file, lengths, leaves, counter, only, pools)
    for rel, data in texts.items():
        path = root / TEXT_DIR / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for rel in sorted(src.shown):
        path = root / IMAGE_DIR / rel
        if reuse_images and path.is_file():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(src.draw(rel))
    return root
