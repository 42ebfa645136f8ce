"""The files a run leaves and what reads them back, below every command that reads a results folder: the results
file, `results_<date>.json`, shaped like lm-eval's (`results`: built from a run, with its terminal table;
`results_file`: its keys declared), compare.json's declaration (`compare_file`), group scores (`groups`), a reported
number with its errors and interval (`estimates`, its bounds as text: `interval_bounds`), where a task's data came from (`provenance`), tokens and cost
(`cost_record`), the scored rows behind a task (`journal_rows`), every results file of a folder read back per model
(`model_results`), which task folders a reader of a results folder may take code from (`trusted_tasks`), and the
upload to the trackers lm-eval publishes to (`publish`)."""
