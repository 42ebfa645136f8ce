"""What a run writes as it goes, a line a sample, so that no finished work is lost: the journal's format
(`journal_file`), the append-only store a run resumes from (`sample_store`), each sample's record (`sample_records`),
the texts as sent (`prompt_store`) and `--log_samples`' lm-eval-shaped sample log (`sample_log`)."""
