import io
import random
from pathlib import Path

import pytest
from PIL import Image

from builders.core.errors import BuildError
from builders.core.images import FileJpegEncoder, encode_jpeg, resize_tile, stitch
from builders.core.sampling import derive_rng, derive_seed, sample_excluding
from builders.core.store import encoded_store, tile_store
from builders.core.tokens import ApproxTokenCounter, image_tokens, make_text_counter, smart_resize


def test_derived_rngs_are_independent_of_order_and_global_state() -> None:
    first = [derive_rng(0, "row", "m1_n2_k1", i).random() for i in range(5)]
    random.seed(123)
    reverse = [derive_rng(0, "row", "m1_n2_k1", i).random() for i in reversed(range(5))]
    assert first == list(reversed(reverse))
    assert derive_seed(0, "a") != derive_seed(1, "a") != derive_seed(0, "b")
    assert derive_seed(0, "pool", 8, 3) == derive_seed(0, "pool", 8, 3)


def test_sample_excluding_respects_exclusion_and_distinctness() -> None:
    population = [f"img{i:03d}" for i in range(20)]
    excluded = set(population[:17])
    for seed in range(30):
        chosen = sample_excluding(derive_rng(seed, "x"), population, 3, excluded)
        assert sorted(chosen) == population[17:]
    with pytest.raises(ValueError):
        sample_excluding(derive_rng(0, "x"), population, 4, excluded)


def test_stitch_places_tiles_row_major() -> None:
    colours = [(10 * k, 255 - 10 * k, 7 * k) for k in range(16)]
    tiles = [Image.new("RGB", (256, 256), c) for c in colours]
    canvas = stitch(tiles, 4)
    assert canvas.size == (1024, 1024)
    for k, colour in enumerate(colours):
        row, col = divmod(k, 4)
        assert canvas.getpixel((col * 256 + 128, row * 256 + 128)) == colour
        assert canvas.getpixel((col * 256, row * 256)) == colour
        assert canvas.getpixel((col * 256 + 255, row * 256 + 255)) == colour
    # A reused canvas is fully overwritten.
    again = stitch(list(reversed(tiles)), 4, canvas=canvas)
    assert again.getpixel((10, 10)) == colours[-1]
    assert stitch(tiles[:1], 1) is tiles[0]


def test_resize_tile_ignores_aspect_ratio() -> None:
    image = Image.new("RGB", (640, 480), (1, 2, 3))
    image.paste((200, 0, 0), (0, 0, 320, 480))  # left half red
    tile = resize_tile(image)
    assert tile.size == (256, 256)
    assert tile.getpixel((60, 200))[0] > 190 and tile.getpixel((200, 200))[0] < 10


def test_jpeg_encoders_agree_and_record_metadata() -> None:
    rng = random.Random(0)
    image = Image.new("RGB", (512, 512))
    image.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(512 * 512)])
    plain = encode_jpeg(image)
    encoder = FileJpegEncoder()
    try:
        assert encoder.encode(image) == plain
        assert encoder.encode(image.resize((256, 256))).width == 256  # reusable
    finally:
        encoder.close()
    reference = io.BytesIO()
    image.save(reference, format="JPEG")  # Pillow's defaults are what the official code used
    assert plain.data == reference.getvalue()
    assert (plain.width, plain.height) == (512, 512)
    assert Image.open(io.BytesIO(plain.data)).format == "JPEG"


def test_stores_return_what_was_put_in_memory_and_spilled(tmp_path: Path) -> None:
    tiles = [Image.new("RGB", (256, 256), (k, 2 * k, 3 * k)) for k in range(5)]
    store = tile_store(tmp_path / "tiles.spill", budget_bytes=2 * 256 * 256 * 4)
    for k, tile in enumerate(tiles):
        store.put(k, tile)
    assert store.spilled_bytes == 3 * 256 * 256 * 3 and store.memory_bytes == 2 * 256 * 256 * 4
    assert [store.get(k).tobytes() for k in range(5)] == [t.tobytes() for t in tiles]
    scratch = Image.new("RGB", (256, 256))
    assert store.get_into(0, scratch) is tiles[0]  # in memory: the tile itself
    assert store.get_into(4, scratch) is scratch and scratch.tobytes() == tiles[4].tobytes()
    store.close()
    assert not (tmp_path / "tiles.spill").exists()

    encoded = encoded_store(tmp_path / "images.spool", budget_bytes=0)
    item = encode_jpeg(tiles[1])
    encoded.put(("n", 1), item)
    assert encoded.get(("n", 1)) == item
    encoded.close()


@pytest.mark.parametrize(
    ("side", "tokens"),
    [(256, 81), (512, 324), (1024, 1369), (2048, 5329)],  # spec §2.11 token table
)
def test_image_tokens_of_stitched_sizes(side: int, tokens: int) -> None:
    assert image_tokens(side, side) == tokens


def test_smart_resize_rounding_and_clamps() -> None:
    assert smart_resize(480, 640) == (476, 644)  # 17.1 -> 17, 22.9 -> 23 blocks
    assert image_tokens(640, 480) == 17 * 23
    assert smart_resize(10, 10) == (56, 56)  # min_pixels 56*56
    h, w = smart_resize(8000, 8000)  # max_pixels 28*28*16384
    assert h * w <= 28 * 28 * 16384 and h % 28 == 0 and w % 28 == 0
    assert image_tokens(8000, 8000) == 16384


def test_approx_counter_rule() -> None:
    counter = ApproxTokenCounter()
    # letters: ceil(len/6) per run; digits one each; punctuation one each; spaces free
    assert counter.count("A man riding a wave on top of a surfboard.") == 12
    assert counter.count("index_1, row_1") == 7  # index _ 1 , row _ 1
    assert counter.count("subimages") == 2
    assert counter.count("2048*2048") == 9
    assert counter.count("") == 0
    assert make_text_counter("approx").name == "approx-v1"


def test_hf_counter_loads_a_tokenizer_file(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {"[UNK]": 0, "given": 1, "image": 2, "caption": 3, ":": 4, ".": 5}
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    counter = make_text_counter(f"hf:{path}")
    assert counter.count("given image . caption : unknown words") == 7
    assert counter.name.startswith("hf:tokenizer.json@")
    with pytest.raises(BuildError, match="tokenizer file not found"):
        make_text_counter(f"hf:{tmp_path / 'missing.json'}")
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(BuildError, match="cannot load tokenizer"):
        make_text_counter(f"hf:{tmp_path / 'bad.json'}")
    with pytest.raises(BuildError, match="unknown text tokenizer"):
        make_text_counter("llama")


def test_rows_to_table_matches_pyarrow() -> None:
    import pyarrow as pa

    from builders.core.writer import rows_to_table
    from builders.mmneedle import FEATURES

    schema = pa.schema(
        [FEATURES.arrow_schema.field(name) for name in ("id", "images", "image_sizes", "all_locations")]
    )
    rows = [
        {
            "id": "a",
            "images": [{"bytes": b"\xff\xd8one", "path": "p1.jpg"}, {"bytes": b"", "path": None}],
            "image_sizes": [[1, 2], [3, 4]],
            "all_locations": [["1, 1, 1"], []],
        },
        {"id": "b", "images": [], "image_sizes": [], "all_locations": []},
        {
            "id": "c",
            "images": [{"bytes": b"x" * 1000, "path": "p3.jpg"}],
            "image_sizes": [[5, 6]],
            "all_locations": [[]],
        },
    ]
    assert rows_to_table(rows, schema).equals(pa.Table.from_pylist(rows, schema=schema))
