"""The harness's run options, on the one option idiom the builders use too (`builders.core.contract.options`): one
dataclass field is at once a `harness` flag, a field of the checked options a run's plan reads
(`harness.run.plan.RunPlan.options`) and a keyword of the Python API (`harness.run.evaluator.simple_evaluate`, whose
signature and `Args:` are made from the fields).

    @dataclass(frozen=True, kw_only=True)
    class MyOptions(DeclaredOptions):
        limit: float | None = option(None, "first N documents", parse=read_limit, accepts="int | float | str | None")
        log_samples: bool = switch("also write samples_<task>_<date>.jsonl")

Here a bad value is a `UserError` (an `argparse.ArgumentTypeError` of a `parse` reads as argparse's usage error,
"argument --limit: ...") and a flag is spelled `--name`. Options made from keywords (`from_keywords`) name an unknown
one with suggestions; the command line a run records for them is spelled from the declarations (`command_line`),
never parsed.
"""

from __future__ import annotations

import inspect
import os
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, Field, dataclass
from typing import Any, Self

from builders.core.contract import FLAG, Flag, Parse, declared, default_of, option
from harness.errors import CommandOptions, UserError, suggest


@dataclass(frozen=True, kw_only=True)
class DeclaredOptions(CommandOptions):
    """The base of a run's declared options, which the Python API takes as keywords too."""

    @classmethod
    def from_keywords(cls, keywords: Mapping[str, object]) -> Self:
        """The options Python keywords gave; an unknown or missing keyword is a one-line `UserError`."""
        known = {item.name: item for item in declared(cls)}
        for name in keywords:
            if name not in known:
                raise UserError(suggest(name, set(known), "keyword"))
        for name, item in known.items():
            if item.default is MISSING and item.default_factory is MISSING and keywords.get(name) is None:
                raise UserError(f"{name}= is required")
        return cls(**keywords)


def _ordered(options: type[DeclaredOptions], groups: Sequence[str]) -> list[Field[Any]]:
    """The declared fields in `--help`'s order: the parser's own group, then `groups`."""
    order = {title: rank for rank, title in enumerate([None, *groups])}
    return sorted(declared(options), key=lambda item: order[item.metadata[FLAG].group])


def keyword_signature(
    options: type[DeclaredOptions], groups: Sequence[str], extra: Sequence[inspect.Parameter], returns: str
) -> inspect.Signature:
    """The Python API's signature: every option a keyword (its type what it `accepts`), in `--help`'s order, then
    `extra`."""
    parameters = [
        inspect.Parameter(
            item.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty
            if item.default is MISSING and item.default_factory is MISSING
            else default_of(item),
            annotation=item.metadata[FLAG].accepts or item.type,
        )
        for item in _ordered(options, groups)
    ]
    return inspect.Signature([*parameters, *extra], return_annotation=returns)


def keyword_docs(options: type[DeclaredOptions], groups: Sequence[str], indent: str = "    ") -> str:
    """`name: help` for every option, as a docstring's `Args:` lists them."""
    return "\n".join(
        textwrap.fill(
            f"{item.name}: {item.metadata[FLAG].help}",
            width=116,
            initial_indent=indent,
            subsequent_indent=indent + "    ",
        )
        for item in _ordered(options, groups)
    )


def command_line(options: type[DeclaredOptions], groups: Sequence[str], keywords: Mapping[str, Any]) -> list[str]:
    """The command line that Python keywords stand for, as a run records it (the lock file, the results' `argv`):
    True is a bare flag, False and None leave a flag out, a list is joined with commas (or repeats a repeatable
    flag), a dict is written as the option spells it."""
    argv: list[str] = []
    for item in _ordered(options, groups):
        flag: Flag = item.metadata[FLAG]
        value, name = keywords.get(item.name), options.flag(item.name)
        if value is None or value is False:
            continue
        if value is True:
            argv.append(name)
        elif flag.repeat:
            items = [value] if isinstance(value, str | os.PathLike) else list(value)
            argv += [part for one in items for part in (name, str(one))]
        elif isinstance(value, Mapping):
            argv += [name, flag.spell(value) if flag.spell is not None else str(dict(value))]
        elif isinstance(value, Sequence) and not isinstance(value, str):
            argv += [name, ",".join(str(one) for one in value)]
        else:
            argv += [name, str(value)]
    return argv


# ------------------------------------------------------------------------------------ readers several flags use


def spell_arguments(values: Mapping[str, object]) -> str:
    """`k=v,...` as `--model_args` reads it: a value holding a comma quoted."""
    return ",".join(f'{k}="{v}"' if "," in str(v) else f"{k}={v}" for k, v in values.items())


def arguments(flag: str, typed: bool = False) -> Parse:
    """The reader of a `k=v,...` flag (`--model_args`): its text, or a dict, as {name: text}; `typed`: each value
    as int, float, bool or None where it reads as one (`--gen_kwargs`)."""

    def read(value: object) -> Mapping[str, object]:
        from harness.models.facts.args import parse_kv
        from harness.models.facts.args import typed as as_typed

        given = {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else parse_kv(str(value), flag)
        return {k: as_typed(v) for k, v in given.items()} if typed else given

    read.__name__ = "arguments"
    return read


def arguments_option(
    help: str, flag: str, *, typed: bool = False, group: str | None = None, metavar: str | None = None
) -> Any:
    """A `k=v,...` option (`--model_args`), empty unless given: read by `arguments` (`typed` as it says), given in
    Python as its text or a mapping, and spelled back as it reads (`spell_arguments`)."""
    return option(
        {},
        help,
        group=group,
        metavar=metavar,
        parse=arguments(flag, typed),
        accepts="str | Mapping[str, object] | None",
        spell=spell_arguments,
    )
