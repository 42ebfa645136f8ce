"""A task at run time (`task.Task`): its rows and their life (`rows`), the requests built from them (`requests`), its
`!function` hooks bound (`hook`), its samples scored and aggregated (`metrics`, `aggregation`, `metric_errors`: the
plain and clustered errors) and judged (`judge`: the judge model's calls and log; `judging`: its metrics joined to the
task's). The runner (`harness.running.runner`) drives it."""
