"""The plumbing the backends share: an engine's own arguments (`engine_args`), what the offline engines do alike
around a call (`engine_calls`) and how they count a prompt (`engine_count`); how a transformers processor counts a
prompt (`hf_counting`, `hf_expansion`, `hf_image_only`, `processor_settings`); lm-eval's model names and arguments
(`foreign_args`); generation that survives one bad request (`generation`); what stands in for a backend under
`--screen_only` (`screen_model`) or in front of a pool (`front_view`); how requests are batched and ordered
(`scheduling`); and the `harness` command's garbage collector while a backend imports its libraries (`library_gc`)."""
