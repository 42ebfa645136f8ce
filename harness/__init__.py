"""mmlongeval's evaluation harness: `harness --tasks ... --model ...` (`harness.run`), or from Python
`simple_evaluate(...)` (`harness.run.evaluator`), and `make_table(results)`, the table the CLI prints. The modules at
its root are the base every package uses: the request/response contract between the runner and the backends, with the
sample statuses (`api`), a request as its backend sent it (`sent`), the file formats the harness writes, validated by
pydantic (`schema`), the rows' token rule (`row_tokens`), where a row's context stands in its prompt (`fit_context`),
errors (`errors`), secrets kept out of everything written (`redact`) and files written whole (`file_writing`).

Nothing is imported until asked for, so `harness --help` stays instant."""

from __future__ import annotations

__all__ = ["evaluate", "make_table", "simple_evaluate"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from harness.run import evaluator

        return getattr(evaluator, name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
