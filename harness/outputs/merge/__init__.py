"""`harness merge OUT SHARD_DIR...` (`runs`): the shards of one run (`--shard i/n`) combined into one results
folder, their journals and prompt stores merged and checked (`journals`)."""
