"""`harness view RESULTS_DIR`: a local web page over a results folder's runs, their samples and the images each
prompt held, read from the builds the runs verified (`catalog`: what the folder holds; `task_data`: prompts and images
rebuilt from verified data; `app`: the pages; `server`: the command; a task's samples as a table: `samples`)."""
