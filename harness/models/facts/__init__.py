"""What is known of a model before anything loads it, whatever the backend, at the bottom of the model layer: the
arguments it was given (`args`: `--model_args` and `--gen_kwargs`, and the parser every backend builds its settings
with), an alias (`alias`), what a family declares (`family`: its image-token rule, names and aliases), a checkpoint's
files and config (`checkpoint`), whether its own code may run (`remote_code`), how its reasoning is taken out of an
answer (`reasoning`), the chat shape an official wrapper sent (`prompt_style`), what an API model's tokens cost
(`pricing`, `prices.json`) and a paper's models (`paper_models`)."""
