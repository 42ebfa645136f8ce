"""`harness view RESULTS_DIR`: a local web page over a results folder's runs, their samples and the images each
prompt held, read from the builds the runs verified (`catalog`: what the folder holds; `task_data`: prompts and images
rebuilt from verified data; `sample_pages`, `sample_table`, `groups`, `pairs`, `pages`: the pages; `app`: their routes;
`server`: the command; `samples`: a task's journal indexed, and the files the viewer may open)."""
