"""Baselines that never look at the images: `constant` (one fixed answer) and `random` (the task's own guess for each
sample, `random_answer`), one module each with its declaration (`BACKEND`). They give floors to compare with and
exercise the whole harness at no model cost."""
