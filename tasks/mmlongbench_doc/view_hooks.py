"""MMLongBench-Doc's hooks for `harness view`: the sample table filters and sorts by answer format, document type,
document and the pages shown (one task, so no group grid)."""

from __future__ import annotations

from harness.view.view_hooks_api import ViewHooks

SAMPLE_AXES = [
    ("format", "answer_format"),
    ("document type", "doc_type"),
    ("document", "doc_id"),
    ("pages", "num_images"),
]

VIEW_HOOKS = ViewHooks(sample_axes=SAMPLE_AXES)
