"""Comparing runs: `harness compare RESULTS [RESULTS_B] --models A B` (`command`) pairs two runs on the rows both
scored (`paired_runs`, `runs`), computes per task and group A - B with its interval and test (`stats`, `intervals`),
reads a swapped judge's agreement (`judge_agreement`), and writes compare.json (its keys: `harness.outputs.results.
compare_file`) and compare.md (`compare_md`, also the paired section of `harness report --paired`)."""
