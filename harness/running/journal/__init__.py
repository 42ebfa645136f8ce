"""What a run writes as it goes, a line a sample, so that no finished work is lost, read without any task code:
the journal's format and the shapes of its sample values (`journal_file`), the append-only store a run resumes from
(`sample_store`), the texts as sent (`prompt_store`) and `--log_samples`' lm-eval-shaped sample log (`sample_log`)."""
