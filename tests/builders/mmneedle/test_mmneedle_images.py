"""MMNeedle's image operations: stitching, the official resize, and the store of decoded tiles."""

from pathlib import Path

from PIL import Image

from builders.core.store import TileStore
from builders.mmneedle.images import resize_tile, stitch


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


def test_tile_store_returns_what_was_put_in_memory_and_spilled(tmp_path: Path) -> None:
    tiles = [Image.new("RGB", (256, 256), (k, 2 * k, 3 * k)) for k in range(5)]
    store = TileStore(tmp_path / "tiles.spill", budget_bytes=2 * 256 * 256 * 4)
    for k, tile in enumerate(tiles):
        store.put(k, tile)
    assert store.spilled_bytes == 3 * 256 * 256 * 3 and store.memory_bytes == 2 * 256 * 256 * 4
    assert [store.get(k).tobytes() for k in range(5)] == [t.tobytes() for t in tiles]
    scratch = Image.new("RGB", (256, 256))
    assert store.get_into(0, scratch) is tiles[0]  # in memory: the tile itself
    assert store.get_into(4, scratch) is scratch and scratch.tobytes() == tiles[4].tobytes()
    store.close()
    assert not (tmp_path / "tiles.spill").exists()
