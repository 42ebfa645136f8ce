"""mmlongeval's evaluation harness: `harness --tasks ... --model ...`, or from Python `simple_evaluate(...)`
(`harness.evaluator`), and `make_table(results)`, the table the CLI prints. Nothing is imported until asked for,
so `harness --help` stays instant."""

from __future__ import annotations

__all__ = ["evaluate", "make_table", "simple_evaluate"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from harness import evaluator

        return getattr(evaluator, name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
