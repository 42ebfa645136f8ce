"""MMLongBench-Doc's hooks for `harness view`: the sample table filters and sorts by answer format, document type,
document and the pages shown (one task, so no group grid). A row's `f1` (and `unextracted_f1`) is no score of its own:
it holds the three fields generalized F1 is aggregated from (`utils.F1_FIELDS`: the row's score, whether its gold is
answerable, whether its prediction is), named on a sample's page; the page reads each row's value on the accuracy
beside it."""

from __future__ import annotations

from harness.view.view_hooks_api import ViewHooks
from tasks.mmlongbench_doc.utils import F1_FIELDS

SAMPLE_AXES = [
    ("format", "answer_format"),
    ("document type", "doc_type"),
    ("document", "doc_id"),
    ("pages", "num_images"),
]

VIEW_HOOKS = ViewHooks(
    sample_axes=SAMPLE_AXES,
    metric_fields={"f1": F1_FIELDS, "unextracted_f1": F1_FIELDS},
    row_scores={"f1": "acc", "unextracted_f1": "unextracted_acc"},
)
