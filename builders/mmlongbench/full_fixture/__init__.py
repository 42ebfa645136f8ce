"""A length-true stand-in for the authors' release (`--source fixture:full`): rows that reach their length labels.

One module per leaf family's generator (`vrag`, `vh`, `mmniah`, `icl`, `summ`, `docqa`), what they are made of
(`units`), and the files they make (`files`).

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

from builders.mmlongbench.full_fixture.files import full_source_files, pool_ids, write_full_source
from builders.mmlongbench.full_fixture.units import FULL_FIXTURE_VERSION

__all__ = ["FULL_FIXTURE_VERSION", "full_source_files", "pool_ids", "write_full_source"]
