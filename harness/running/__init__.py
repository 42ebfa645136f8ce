"""Running and journals: one run from its arguments (`run`), a task's requests and scoring (`task`), the
loop that screens, batches, generates and journals every sample (`runner`, `sample_store`), and what
serves it: batching, the prefix-cache order, shards, the response cache, the judge, the output lock,
progress bars, `--screen_only` and `--write_out`."""
