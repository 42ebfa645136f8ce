"""`harness report RESULTS_DIR` (`report_md`): report.md, the runs' provenance (`run_provenance`), each benchmark's
section (`hooks`: what a benchmark gives the report), figures (`figures`, `figure_batch`) and the verdicts beside a
paper's numbers (`verdict`, `verdict_family`, `run_to_run`: the spread between two runs of one model that the
verdicts read)."""
