"""A task's samples in the viewer: the journal's one streaming pass (`journal_columns`) into a small index held
in Arrow columns (`sample_index`, `text_columns`), filtered, sorted and paged (`sample_table`), and the task's pages
(`sample_pages`)."""
