"""VLMEvalKit's MMLongBench sets as a source: the TSVs and image archives the benchmark's first author published beside
the release (Hub repo `ZhaoweiWang/MMLongBench`, folder `vlmevalkit/`), read by open-compass/VLMEvalKit's
`vlmeval/dataset/mmlongbench.py` (PR #1592; cited at e8e78f05).

`MMLongBench_{32K,128K,256K,512K}.tsv` hold every row of one length (VRAG, NIAH, ICL, Summ and DocVQA together), each
with its user text (`question`, images marked `<image token>`), its images (`image_path`, a JSON list relative to
`mmlb_image/`) and `extra_info` (the release row it came from, with the typed gold). 256K and 512K keep 50 % of
VRAG/ICL/Summ/DocVQA and 25 % of NIAH (`mmlongbench.py:33-38`), drawn from raw files that are not public
(`scripts/build_mmlongbench_tsv.py:543-550`): the TSVs are the sample. They are read as published, one config per
leaf and length (`vlmevalkit_{category}_{dataset}_{length}`), never rebuilt.

- `layout`: where a folder or a Hub snapshot keeps the TSVs and the images, and the Hub files a build fetches;
- `tsv`: the TSV read record by record within bounds (`bounds`);
- `rows`: a record -> the data contract's row (the prompt with VLMEvalKit's interleaving, the gold, the ids);
- `images`: each image read once from its length's archive (or folder), with VLMEvalKit's lookup order;
- `fixture`: the offline stand-in, TSVs and image archives in VLMEvalKit's formats.
"""
