"""A task's samples as the viewer reads them, below its pages: which files of a results folder it may open and how,
each within a bound (`safe_files`), the journal's one streaming pass (`journal_columns`) into a small index held in
Arrow columns (`sample_index`, `text_columns`)."""
