"""Running a task: the loop that screens, batches, generates, scores and journals every sample (`runner`), the
requests made ready for it (`request_building`), each sample's journal record (`sample_records`), and what serves it:
the response cache (`cache`), the output lock (`lock`), shards (`sharding`), progress bars (`progress`),
`--max_cost`'s budget (`budget`), the cost before a run (`cost_estimate`) and `--screen_only` (`screen_only`). A task
at run time is `running.task`; what a run writes as it goes, `running.journal`, below both."""
