"""Results, report and merge: sample metrics aggregated per task and group, the lm-eval-shaped results
file and sample logs, `harness report` (provenance, figures), `harness merge` of a run's shards, and
the upload of results to the Hub."""
