"""Run options declared once, as the builders declare theirs (`builders.core.options`): one dataclass field is at once
a `harness` flag (its spelling, lm-eval's short alias, help, parser, default, choices and metavar), a field of the
checked options a run's plan reads (`harness.run_plan.RunPlan.options`) and a keyword of the Python API
(`harness.evaluator.simple_evaluate`, whose signature and `Args:` are made from the fields).

    @dataclass(frozen=True, kw_only=True)
    class MyOptions(DeclaredOptions):
        limit: float | None = option(None, "first N documents", parse=read_limit, accepts="int | float | str | None")
        log_samples: bool = switch("also write samples_<task>_<date>.jsonl")

A field's `parse` reads what was given, the flag's text or a Python value (a number, a list, a dict: `accepts` names
what the keyword takes where it is more than the field's type), into the field's value. It is argparse's `type=` on
the command line and runs again whenever the options are made (`DeclaredOptions.__post_init__`; it leaves a value it
made as it is), so a value is checked however the options are made, with the same one-line error: a
`argparse.ArgumentTypeError` reads as argparse's usage error ("argument --limit: ..."), a `UserError` is the
option's own. `check` then names what is wrong with a parsed value in a message of its own. Options made from
keywords (`from_keywords`) name an unknown one with suggestions; the command line a run records for them is spelled
from the declarations (`command_line`), never parsed.
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, TypeVar

from harness.errors import UserError, suggest

FLAG = "flag"  # the field metadata key of an option's declaration
REQUIRED: Any = MISSING  # `option(REQUIRED, ...)`: a flag that must be given (`--tasks`)
Parse = Callable[[Any], Any]  # what was given -> the option's value (argparse's `type=`)
Check = Callable[[Any], "str | None"]  # an option's value -> the one-line error, or None


@dataclass(frozen=True)
class Flag:
    """How an option shows on the command line and is read from it or from a keyword."""

    help: str
    group: str | None = None  # the title of its `--help` group; None: the parser's own ("options:")
    short: str | None = None  # lm-eval's one-letter alias (`-o`)
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    parse: Parse | None = None
    check: Check | None = None
    bare: object = None  # the value of the flag given without one (`--ray`); None: the flag takes exactly one value
    repeat: bool = False  # the flag may be repeated (`--include_path A --include_path B`), a keyword takes a list
    switch: bool = False  # a flag without a value (`--log_samples`), a keyword True or False
    accepts: str | None = None  # the keyword's type, where it takes more than the field's (a list of names, a dict)
    spell: Callable[[Any], str] | None = None  # how a dict given as a keyword is written on the recorded command line

    def names(self, name: str) -> list[str]:
        return [self.short, f"--{name}"] if self.short else [f"--{name}"]

    def read(self, name: str, value: object) -> object:
        """`value` (the flag's text, a keyword's value, or a value this read made) as the option's value, or the
        option's one-line error."""
        if self.switch:
            if not isinstance(value, bool):
                raise UserError(f"{name}: expected True or False, got {value!r:.40}")
            return value
        if value is True and self.bare is not None:
            value = self.bare
        if self.repeat:
            items = [value] if isinstance(value, str | os.PathLike) or not isinstance(value, Iterable) else list(value)
            value = tuple(self._parsed(name, item) for item in items)
        else:
            value = self._parsed(name, value)
        problem = self.check(value) if self.check is not None else None
        if problem:
            raise UserError(problem)
        return value

    def _parsed(self, name: str, value: object) -> object:
        """One value through `parse` and `choices`, failing with argparse's words for the flag."""
        where = f"argument {'/'.join(self.names(name))}"
        if self.parse is not None:
            try:
                value = self.parse(value)
            except argparse.ArgumentTypeError as err:
                raise UserError(f"{where}: {err}") from None
            except (TypeError, ValueError):
                kind = getattr(self.parse, "__name__", repr(self.parse))
                raise UserError(f"{where}: invalid {kind} value: {value!r}") from None
        if self.choices is not None and value not in self.choices:
            shown = ", ".join(map(repr, self.choices))
            raise UserError(f"{where}: invalid choice: {value!r} (choose from {shown})")
        return value

    def argparse_settings(self, default: object) -> dict[str, Any]:
        """`add_argument`'s keywords. Every flag not given reads as None (False for a switch): the field's default."""
        if self.switch:
            return {"action": "store_true", "help": self.help}
        settings: dict[str, Any] = {"help": self.help, "metavar": self.metavar}
        if self.parse is not None:
            settings["type"] = self.parse
        if self.repeat:
            return {**settings, "action": "append"}
        if self.bare is not None:
            settings.update(nargs="?", const=self.bare)
        return {**settings, "choices": self.choices, "required": default is MISSING}


def option(
    default: object,
    help: str,
    *,
    group: str | None = None,
    short: str | None = None,
    metavar: str | None = None,
    choices: Sequence[str] | None = None,
    parse: Parse | None = None,
    check: Check | None = None,
    bare: object = None,
    repeat: bool = False,
    accepts: str | None = None,
    spell: Callable[[Any], str] | None = None,
) -> Any:
    """A dataclass field that is also a flag and a keyword (a dict default is made afresh for each options)."""
    flag = Flag(
        help,
        group,
        short,
        metavar,
        tuple(choices) if choices else None,
        parse,
        check,
        bare,
        repeat,
        False,
        accepts,
        spell,
    )
    if isinstance(default, dict):
        return field(default_factory=dict, metadata={FLAG: flag})
    return field(default=default, metadata={FLAG: flag})


def switch(help: str, *, group: str | None = None, short: str | None = None) -> Any:
    """A flag without a value (`--log_samples`); its keyword is True or False."""
    return field(default=False, metadata={FLAG: Flag(help, group, short, switch=True)})


def declared(options: type) -> list[Field[Any]]:
    """The options' declared fields, in their order."""
    return [item for item in fields(options) if FLAG in item.metadata]


def default_of(item: Field[Any]) -> object:
    if item.default_factory is not MISSING:
        return item.default_factory()
    return None if item.default is MISSING else item.default


OptionsT = TypeVar("OptionsT", bound="DeclaredOptions")


@dataclass(frozen=True, kw_only=True)
class DeclaredOptions:
    """The base of a set of declared options: every value is read and checked as the options are made, and a value
    left out (None) is its field's default. A subclass adds the checks that weigh one option against another."""

    def __post_init__(self) -> None:
        for item in declared(type(self)):
            flag: Flag = item.metadata[FLAG]
            value = getattr(self, item.name)
            given = not (value is None or (flag.switch and value is False))
            object.__setattr__(self, item.name, flag.read(item.name, value) if given else default_of(item))

    @classmethod
    def from_namespace(cls: type[OptionsT], args: argparse.Namespace) -> OptionsT:
        """The options a command line gave (its values already read by each flag's `parse`)."""
        return cls(**{item.name: getattr(args, item.name) for item in declared(cls)})

    @classmethod
    def from_keywords(cls: type[OptionsT], keywords: Mapping[str, object]) -> OptionsT:
        """The options Python keywords gave; an unknown or missing keyword is a one-line `UserError`."""
        known = {item.name: item for item in declared(cls)}
        for name in keywords:
            if name not in known:
                raise UserError(suggest(name, set(known), "keyword"))
        for name, item in known.items():
            if item.default is MISSING and item.default_factory is MISSING and keywords.get(name) is None:
                raise UserError(f"{name}= is required")
        return cls(**keywords)


def add_flags(parser: argparse.ArgumentParser, options: type[DeclaredOptions], groups: Sequence[str]) -> None:
    """The options' flags: those of the parser's own group first, then each of `groups` in turn (its title),
    each in the fields' order."""
    containers: dict[str | None, argparse._ActionsContainer] = {None: parser}
    for group in groups:
        containers[group] = parser.add_argument_group(group)
    for title, container in containers.items():
        for item in declared(options):
            flag: Flag = item.metadata[FLAG]
            if flag.group == title:
                default = item.default if item.default_factory is MISSING else None
                container.add_argument(*flag.names(item.name), **flag.argparse_settings(default))


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
        value, name = keywords.get(item.name), f"--{item.name}"
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


def positive_int(value: object, alternatives: str = "") -> int:
    """An integer >= 1, from its text or itself."""
    text = str(value)
    # ASCII digits, few enough to convert (`isdigit()` takes "²", and 5,000 digits, which int() refuses)
    number = int(text) if re.fullmatch(r"\s*[0-9]{1,18}\s*", text) else 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1{alternatives}, got {text!r:.40}")
    return number


def spell_arguments(values: Mapping[str, object]) -> str:
    """`k=v,...` as `--model_args` reads it: a value holding a comma quoted."""
    return ",".join(f'{k}="{v}"' if "," in str(v) else f"{k}={v}" for k, v in values.items())


def arguments(flag: str, typed: bool = False) -> Parse:
    """The reader of a `k=v,...` flag (`--model_args`): its text, or a dict, as {name: text}; `typed`: each value
    as int, float, bool or None where it reads as one (`--gen_kwargs`)."""

    def read(value: Any) -> dict[str, Any]:
        from harness.models.args import parse_kv
        from harness.models.args import typed as as_typed

        given = {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else parse_kv(value, flag)
        return {k: as_typed(v) for k, v in given.items()} if typed else given

    read.__name__ = "arguments"
    return read
