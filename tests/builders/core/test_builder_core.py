import hashlib
import io
import random
from pathlib import Path

import pytest
from PIL import Image

from builders.core.contract import image_tokens, smart_resize
from builders.core.errors import BuildError
from builders.core.images import FileJpegEncoder
from builders.core.sampling import derive_rng, derive_seed, sample_excluding
from builders.core.store import encoded_store
from builders.core.tokens import ApproxTokenCounter, make_text_counter


def test_derived_rngs_are_independent_of_order_and_global_state() -> None:
    first = [derive_rng(0, "row", "cfg_a", i).random() for i in range(5)]
    random.seed(123)
    reverse = [derive_rng(0, "row", "cfg_a", i).random() for i in reversed(range(5))]
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


def test_jpeg_encoders_agree_and_record_metadata() -> None:
    rng = random.Random(0)
    image = Image.new("RGB", (512, 512))
    image.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(512 * 512)])
    encoder = FileJpegEncoder()
    try:
        plain = encoder.encode(image)
        assert encoder.encode(image.resize((256, 256))).width == 256  # reusable
        assert encoder.encode(image) == plain
    finally:
        encoder.close()
    reference = io.BytesIO()
    image.save(reference, format="JPEG")  # Pillow's defaults are what the official code used
    assert plain.data == reference.getvalue()
    assert plain.sha256 == hashlib.sha256(reference.getvalue()).hexdigest()
    assert (plain.width, plain.height) == (512, 512)
    assert Image.open(io.BytesIO(plain.data)).format == "JPEG"


def test_encoded_store_spools_to_disk(tmp_path: Path) -> None:
    encoder = FileJpegEncoder()
    try:
        item = encoder.encode(Image.new("RGB", (64, 48), (1, 2, 3)))
    finally:
        encoder.close()
    encoded = encoded_store(tmp_path / "images.spool", budget_bytes=0)
    encoded.put(("n", 1), item)
    assert encoded.spilled_bytes == len(item.data) and encoded.memory_bytes == 0
    assert encoded.get(("n", 1)) == item
    encoded.close()
    assert not (tmp_path / "images.spool").exists()


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

    from builders.core.parquet_writer import rows_to_table
    from builders.mmneedle import FEATURES

    schema = pa.schema([FEATURES.arrow_schema.field(name) for name in ("id", "images", "image_sizes", "all_locations")])
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


def test_image_bytes_survive_the_reused_row_group_buffer(tmp_path: Path) -> None:
    """The writer copies each row group's image bytes into one buffer it reuses for the next row group:
    every row group read back holds its own images, for an image column and a list of images."""
    import pyarrow.parquet as pq
    from datasets import Features, Image, List, Value

    from builders.core.parquet_writer import ShardedParquetWriter

    features = Features({"id": Value("string"), "image": Image(), "images": List(Image())})
    rows = [
        {
            "id": str(i),
            "image": {"bytes": bytes([i]) * (300 + 97 * i), "path": None},
            "images": [{"bytes": bytes([i, k]) * (50 + i), "path": f"{i}_{k}.jpg"} for k in range(i % 3)],
        }
        for i in range(40)
    ]
    with ShardedParquetWriter(
        tmp_path, "cfg", features, lambda row: row["id"].encode(), row_group_bytes=2000
    ) as writer:
        for row in rows:
            writer.write(row, len(row["image"]["bytes"]))
        result = writer.close()
    (written,) = result.files
    parquet = pq.ParquetFile(tmp_path / written.path)
    assert parquet.metadata.num_row_groups > 10
    assert parquet.read().to_pylist() == rows
    assert written.sha256 == hashlib.sha256((tmp_path / written.path).read_bytes()).hexdigest()
