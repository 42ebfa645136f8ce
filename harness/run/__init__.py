"""The run: `harness --tasks ... --model ...` (and `simple_evaluate(...)`, the Python API) from the command line to
the results file, one module a step, in the order a run takes them:

1. `cli`: the `harness` command and its subcommands (`ls`, `models`, `report`, `view`, `merge`, `compare`, `power`);
   `process_exit`: the command's clean exit.
2. `run_file` (`--config FILE`), `lm_eval_flags` (the flags lm-eval's and lmms-eval's users type) and
   `declared_options` read into `arguments` (`EvaluationOptions`); `evaluator`: the same options as keywords.
3. `plan`: what the run will do, decided before anything loads; `requirements`: what it needs installed.
4. `models`: the backend, its judge and the response cache opened from the plan; `cost`: the screen's estimate and
   `--max_cost`'s budget.
5. `execute`: the run executed from its plan (`harness.running.runner` for each task's samples);
   `results_config`: what the results file's `config` records.

`image_asker` is the same machinery asked one question about one image, for a build step (the entry point
`mmlongeval.image_askers`)."""
