"""An option declared once, for the builders and the harness alike: one dataclass field is at once a flag of a command
(its spelling, lm-eval's short alias, help, parser, default, choices and metavar), a field of the checked options the
code reads, and a keyword of the Python API.

    @dataclass(frozen=True, kw_only=True)
    class MyOptions(BenchmarkOptions):  # or the harness's DeclaredOptions
        limit: int | None = option(None, "at most L rows", metavar="L", parse=int, check=at_least(1))
        full: bool = switch("every row")
        source: list[str] | None = option(None, "where the rows come from", many=True)

A field's `parse` reads what was given, the flag's text or a Python value, into the field's value: it is argparse's
`type=` on the command line and runs again whenever the options are made (`DeclaredOptions.__post_init__`; it leaves
a value it made as it is), so a value is checked however the options are made, with the same one-line error. `check`
then names what is wrong with a parsed value, given the flag as its command spells it. A value left out (None, or
False for a switch) is its field's default. Each side says how its flags are spelled and what its errors are
(`DeclaredOptions.error`, `dashes`, `choice_problem`): `builders build NAME --memory-budget-mb` with a `BuildError`,
`harness --max_batch_tokens` with a `UserError`. A field without `option` is the Python API's alone.
"""

from __future__ import annotations

import argparse
import copy
import functools
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, ClassVar, NoReturn, Self

FLAG = "flag"  # the field metadata key of an option's declaration
REQUIRED: Any = MISSING  # `option(REQUIRED, ...)`: a flag that must be given (`--tasks`)
Parse = Callable[[Any], Any]  # what was given -> the option's value (argparse's `type=`)
Check = Callable[[str, Any], "str | None"]  # (the flag as spelled, the option's value) -> the one-line error, or None


@dataclass(frozen=True)
class Flag:
    """How an option shows on the command line and is read from it or from a keyword."""

    help: str
    group: str | None = None  # the title of its `--help` group; None: the parser's own ("options:")
    short: str | None = None  # lm-eval's one-letter alias (`-o`)
    metavar: str | tuple[str, ...] | None = None
    choices: tuple[str, ...] | None = None
    parse: Parse | None = None
    check: Check | None = None
    bare: object = None  # the value of the flag given without one (`--ray`); None: the flag takes exactly one value
    repeat: bool = False  # the flag may be repeated, one value each (`--include_path A --include_path B`): a tuple
    switch: bool = False  # a flag without a value (`--log_samples`), a keyword True or False
    many: bool = False  # the flag takes one or more values and may be repeated (`--source A B --source C`): a list
    accepts: str | None = None  # the keyword's type, where it takes more than the field's (a list of names, a dict)
    spell: Callable[[Mapping[str, object]], str] | None = (
        None  # how a dict given as a keyword is written on a recorded command line
    )
    positional: bool = False  # an argument without a flag (`harness compare RESULTS`), named by its field
    nargs: int | str | None = None  # argparse's, for any other count of values (`--models A B`, `[FILTER ...]`)
    required: bool = False  # the command requires the flag though the Python API does not (`builders build --out`)
    exclusive: str | None = None  # flags of one key exclude each other (`--paired | --unpaired`)

    def names(self, flag: str) -> list[str]:
        return [self.short, flag] if self.short else [flag]

    @property
    def several(self) -> bool:
        """The option's value is a list of values (a tuple for a repeated flag)."""
        return self.repeat or self.many or isinstance(self.nargs, int) or self.nargs in ("*", "+", argparse.REMAINDER)

    def argparse_settings(self, default: object) -> dict[str, Any]:
        """`add_argument`'s keywords. Every flag not given reads as None (False for a switch): the field's default."""
        if self.switch:
            return {"action": "store_true", "help": self.help}
        settings: dict[str, Any] = {"help": self.help, "metavar": self.metavar}
        if self.parse is not None:
            settings["type"] = self.parse
        if self.repeat:
            return {**settings, "action": "append"}
        if self.many:
            return {**settings, "action": "extend", "nargs": "+"}
        if self.bare is not None:
            settings.update(nargs="?", const=self.bare)
        if self.nargs is not None:
            settings["nargs"] = self.nargs
        if not self.positional:
            settings["required"] = default is MISSING or self.required
        return {**settings, "choices": self.choices}


def option(default: object, help: str, *, choices: Sequence[str] | None = None, **settings: Any) -> Any:
    """A dataclass field that is also a flag and a keyword (`settings`: `Flag`'s; a dict or list default is made
    afresh for each options)."""
    flag = Flag(help, choices=tuple(choices) if choices else None, **settings)
    if isinstance(default, dict | list):
        return field(default_factory=functools.partial(copy.copy, default), metadata={FLAG: flag})
    return field(default=default, metadata={FLAG: flag})


def switch(help: str, **settings: Any) -> Any:
    """A flag without a value (`--log_samples`); its keyword is True or False (`settings`: `Flag`'s)."""
    return field(default=False, metadata={FLAG: Flag(help, switch=True, **settings)})


def declared(options: type) -> list[Field[object]]:
    """The options' declared fields, in their order."""
    return [item for item in fields(options) if FLAG in item.metadata]


def flag_of(item: Field[object]) -> Flag:
    flag: Flag = item.metadata[FLAG]
    return flag


def default_of(item: Field[object]) -> object:
    if item.default_factory is not MISSING:
        return item.default_factory()
    return None if item.default is MISSING else item.default


# ------------------------------------------------------------------------------------- checks several flags use


def at_least(minimum: int, unit: str = "") -> Check:
    return lambda flag, value: f"{flag} must be at least {minimum}{unit}, got {value}" if value < minimum else None


def between(low: float, high: float) -> Check:
    return lambda flag, value: None if low <= value <= high else f"{flag} must be between {low} and {high}, got {value}"


def positive_int(value: object, alternatives: str = "") -> int:
    """An integer >= 1, from its text or itself."""
    text = str(value)
    # ASCII digits, few enough to convert (`isdigit()` takes "²", and 5,000 digits, which int() refuses)
    number = int(text) if re.fullmatch(r"\s*[0-9]{1,18}\s*", text) else 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1{alternatives}, got {text!r:.40}")
    return number


def non_negative_integer(flag: str, value: int) -> str | None:
    return f"{flag} must be a non-negative integer, got {value}" if value < 0 else None


# ------------------------------------------------------------------------------------------------ the options


@dataclass(frozen=True, kw_only=True)
class DeclaredOptions:
    """The base of a set of declared options: every value is read and checked as the options are made, and a value
    left out is its field's default. A subclass says how its command spells a flag and what its errors are, and adds
    the checks that weigh one option against another."""

    error: ClassVar[Callable[[str], Exception]] = ValueError  # what a bad value raises, with its one line
    dashes: ClassVar[bool] = False  # a field `max_tokens` is the flag `--max-tokens` (else `--max_tokens`)

    def __post_init__(self) -> None:
        for item in declared(type(self)):
            flag = flag_of(item)
            value = getattr(self, item.name)
            given = not (value is None or (flag.switch and value is False))
            object.__setattr__(self, item.name, self.read(item, value) if given else default_of(item))

    @classmethod
    def flag(cls, name: str) -> str:
        """The flag of the field `name`, as the command spells it."""
        return "--" + (name.replace("_", "-") if cls.dashes else name)

    @classmethod
    def choice_problem(cls, names: str, value: object, choices: tuple[str, ...]) -> str:
        """A value not among an option's choices, in argparse's words (`names`: its flags, `-o/--output_path`)."""
        return f"argument {names}: invalid choice: {value!r} (choose from {', '.join(map(repr, choices))})"

    @classmethod
    def read(cls, item: Field[object], value: object) -> object:
        """`value` (the flag's text, a keyword's value, or a value this read made) as the option's value, or the
        option's one-line error."""
        flag, spelled = flag_of(item), cls.flag(item.name)
        if flag.switch:
            if not isinstance(value, bool):
                raise cls.error(f"{item.name}: expected True or False, got {value!r:.40}")
            return value
        if value is True and flag.bare is not None:
            value = flag.bare
        if flag.several:
            items = [value] if isinstance(value, str | os.PathLike) or not isinstance(value, Iterable) else list(value)
            parsed = [cls._parsed(flag, spelled, one) for one in items]
            value = tuple(parsed) if flag.repeat else parsed
        else:
            value = cls._parsed(flag, spelled, value)
        problem = flag.check(spelled, value) if flag.check is not None else None
        if problem:
            raise cls.error(problem)
        return value

    @classmethod
    def _parsed(cls, flag: Flag, spelled: str, value: object) -> object:
        """One value through `parse` and `choices`, failing with argparse's words for the flag."""
        names = "/".join(flag.names(spelled))
        if flag.parse is not None:
            try:
                value = flag.parse(value)
            except argparse.ArgumentTypeError as err:
                raise cls.error(f"argument {names}: {err}") from None
            except (TypeError, ValueError):
                kind = getattr(flag.parse, "__name__", repr(flag.parse))
                raise cls.error(f"argument {names}: invalid {kind} value: {value!r}") from None
        if flag.choices is not None and value not in flag.choices:
            raise cls.error(cls.choice_problem(names, value, flag.choices))
        return value

    @classmethod
    def from_namespace(cls, args: argparse.Namespace) -> Self:
        """The options a command line gave (its values already read by each flag's `parse`)."""
        return cls(**{item.name: getattr(args, item.name) for item in declared(cls)})

    @classmethod
    def parse_command(cls, parser: argparse.ArgumentParser, argv: Sequence[str]) -> Self:
        """The options of a command whose flags are these alone, given `argv`."""
        groups = (flag_of(item).group for item in declared(cls))
        add_flags(parser, cls, tuple(dict.fromkeys(group for group in groups if group is not None)))
        return cls.from_namespace(parser.parse_args(list(argv)))


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser whose mistakes are one line, as every other bad input of the builders and the harness is:
    argparse printed its usage (28 lines of a run's flags) before the reason, which buried it; `--help` shows the usage.
    A mistake raises `mistake` with the reason, which the command prints as `PROGRAM: error: REASON` (exit 2): one
    prefix for the program, whichever of its commands was given (`builders: error: `, `harness: error: `), so a
    subcommand's reason ends by naming where its usage is (`(see builders build mmneedle --help)`)."""

    mistake: ClassVar[Callable[[str], Exception]] = ValueError  # the command's error for bad input

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments: "):
            message += self._nearest(message.split(": ", 1)[1].split())
        raise type(self).mistake(f"{message} (see {self.prog} --help)" if " " in self.prog else message)

    def _nearest(self, given: Sequence[str]) -> str:
        """`; did you mean --data_dir?` for the first unknown flag a known one is close to (`--data-dir`: its hyphens
        as underscores, as lm-eval's flags are spelt), or that `spelt_here` spells otherwise; or nothing."""
        import difflib

        known = [o for action in self._actions for o in action.option_strings if o.startswith("--")]
        for at, token in enumerate(given):
            if not token.startswith("--"):
                continue
            flag, equals, value = token.partition("=")
            if not equals and at + 1 < len(given) and not given[at + 1].startswith("-"):
                value = given[at + 1]
            here = self.spelt_here(flag, value)
            close = [here] if here else []
            close = close or difflib.get_close_matches(flag.replace("-", "_").replace("__", "--", 1), known, 1, 0.75)
            if close:
                return f"; did you mean {close[0]}?"
        return ""

    def spelt_here(self, flag: str, value: str) -> str | None:
        """How this command spells `flag VALUE`, a flag it does not take but another tool's users type for it (the
        harness: `--num_beams 4` is `--gen_kwargs num_beams=4`); None where it has no such spelling."""
        return None


def add_flags(
    parser: argparse._ActionsContainer,
    options: type[DeclaredOptions],
    groups: Sequence[str] = (),
    late: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """The options' flags: those of the container's own group first, then each of `groups` in turn (its title),
    each in the fields' order; `late`: by field, argparse's settings the command knows only as it runs (the
    benchmarks' names, a benchmark's default image storage)."""
    containers: dict[str | None, argparse._ActionsContainer] = {None: parser}
    for group in groups:
        containers[group] = parser.add_argument_group(group)
    for title, container in containers.items():
        exclusive: dict[str, argparse._ActionsContainer] = {}
        for item in declared(options):
            flag = flag_of(item)
            if flag.group == title:
                default = item.default if item.default_factory is MISSING else None
                names = [item.name] if flag.positional else flag.names(options.flag(item.name))
                if flag.exclusive is not None and flag.exclusive not in exclusive:
                    exclusive[flag.exclusive] = container.add_mutually_exclusive_group()
                where = container if flag.exclusive is None else exclusive[flag.exclusive]
                settings = {**flag.argparse_settings(default), **(late or {}).get(item.name, {})}
                where.add_argument(*names, **settings)
