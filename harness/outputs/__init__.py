"""What a run leaves and the commands that read it, a package each: the results file (`results`), `harness
report` (`report`), `harness compare` (`compare`), `harness power` (`power`) and `harness merge` (`merge`)."""
