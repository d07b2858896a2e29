"""The click parameters of the commands, made from core/options.py's declarations: `option` (an option or argument
of a declaration, which it keeps for the tests), several values after one flag (`Many`, as `--positive king woman`),
and the groups of options several commands take (`run_flags`, `token_filters`, `progress_flag`, `shared_flags`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from ..core.options import FILTER_OPTIONS, NO_PROGRESS_OPTION, RUN_OPTIONS, Option

F = TypeVar("F", bound=Callable[..., Any])
NUMBER = re.compile(r"-\.?\d")  # a negative number is a value, not a flag (`--layers -4 -3`)


class Argument(click.Argument):
    """A positional argument made from a core.options declaration (`option`), which it keeps (`declared`)."""

    def __init__(self, param_decls: Sequence[str], declared: Option | None = None, **attrs: Any) -> None:
        super().__init__(param_decls, **attrs)
        self.declared = declared


class Declared(click.Option):
    """An option made from a core.options declaration (`option`), which it keeps (`declared`): the tests hold the
    flag, the web request field and the default to it."""

    def __init__(self, param_decls: Sequence[str], declared: Option | None = None, **attrs: Any) -> None:
        super().__init__(param_decls, **attrs)
        self.declared = declared


class Many(Declared):
    """An option of several values after one flag, as argparse's nargs "+" read them: `--positive king woman`."""

    def __init__(self, param_decls: Sequence[str], **attrs: Any) -> None:
        super().__init__(param_decls, multiple=True, **attrs)


class Command(click.Command):
    """A bertlens command: several values after a `Many` flag."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        greedy = {flag for p in self.params if isinstance(p, Many) for flag in p.opts}
        return super().parse_args(ctx, spread(args, greedy))


def spread(args: Sequence[str], greedy: set[str]) -> list[str]:
    """`args` with each value after a greedy flag given its own flag: `--positive king woman -k 3` ->
    `--positive king --positive woman -k 3`. A value runs until the next flag (a negative number is a value); `--`
    ends the flags. A greedy flag given again replaces its earlier values, as argparse's nargs "+" did (`--words a
    --words b` is `b`)."""
    out: list[str] = []
    flag: str | None = None
    first = False
    earlier: dict[str, list[int]] = {}  # each greedy flag -> where its last group (flags and values) stands in `out`
    dropped: set[int] = set()
    for i, arg in enumerate(args):
        if arg == "--":
            out += args[i:]
            break
        if arg in greedy:
            if len(earlier.get(arg, ())) > 1:  # an earlier group with values: replaced (one without is click's error)
                dropped.update(earlier[arg])
            flag, first = arg, True
            earlier[arg] = [len(out)]
        elif arg.startswith("-") and arg != "-" and not NUMBER.match(arg):
            flag = None
        elif flag is not None:
            if not first:
                earlier[flag].append(len(out))
                out.append(flag)
            first = False
            earlier[flag].append(len(out))
        out.append(arg)
    return [arg for i, arg in enumerate(out) if i not in dropped]


def option(declared: Option, **overrides: Any) -> Callable[[F], F]:
    """The click option (or argument) of a core.options declaration: its flag, help, choices and default.

    `overrides` are click's keywords for what only this command says differently (the help of what its --out writes,
    `required`)."""
    if not declared.flags:
        settings: dict[str, Any] = {"help": declared.help, "metavar": declared.metavar, "type": _type(declared)}
        if declared.many:
            settings |= {"nargs": -1, "required": declared.required}
        settings.update(overrides)
        return click.argument(declared.name, cls=Argument, declared=declared, **settings)
    settings = {"help": declared.help, "show_default": True, "cls": Declared, "declared": declared}
    if declared.kind is bool:
        settings |= {"is_flag": True, "default": False}
    else:
        settings |= {"type": _type(declared), "default": declared.default}
        if declared.metavar is not None:
            settings["metavar"] = declared.metavar
        if declared.many:
            settings["cls"] = Many
            settings["default"] = tuple(declared.default or ())
            settings["show_default"] = bool(declared.default)
    settings.update(overrides)
    return click.option(*declared.flags, declared.name, **settings)


def argument(name: str, help: str, **settings: Any) -> Callable[[F], F]:
    """A positional argument of one command (not a shared declaration), with its help line."""
    return click.argument(name, help=help, **settings)


def _type(declared: Option) -> click.ParamType | type:
    if declared.choices is not None:
        return click.Choice(declared.choices)
    return declared.kind


def run_flags(when: str | None = None) -> Callable[[F], F]:
    """--device, --precision (--bf16), --batch-tokens: the options of commands that run the model; `when` ("wic")
    starts their help where they apply to one case only."""

    def decorate(function: F) -> F:
        for declared in reversed(RUN_OPTIONS):
            help = f"{when}: {declared.help}" if when else declared.help
            function = option(declared, help=help)(function)
        return function

    return decorate


def token_filters(when: str | None = None) -> Callable[[F], F]:
    """The token filter options (`FILTER_OPTIONS`: --words-only, --no-pieces, …); `when` starts their help. The
    command takes them as keywords: `TokenFilter.from_flags(**filters)`."""

    def decorate(function: F) -> F:
        for declared in reversed(FILTER_OPTIONS):
            function = option(declared, help=f"{when}: {declared.help}" if when else declared.help)(function)
        return function

    return decorate


def progress_flag(**overrides: Any) -> Callable[[F], F]:
    """`--no-progress`, for a command that can run longer than a few seconds."""
    return option(NO_PROGRESS_OPTION, **overrides)


def shared_flags(function: F) -> F:
    """--model, --offline and --json: on the program and on each command (given after the command, they win)."""
    function = click.option("--json", is_flag=True, help="print the result as JSON (the Python result's to_dict())")(
        function
    )
    function = click.option(
        "--offline",
        is_flag=True,
        help="never fetch a model: a hub id must already be in the Hugging Face cache (as HF_HUB_OFFLINE=1)",
    )(function)
    return click.option(
        "--model",
        "-m",
        help="'default', a model directory, or a Hugging Face Hub id such as bert-base-uncased or owner/name@revision "
        "(fetched once into the Hugging Face cache; default: $BERTLENS_MODEL or the bundled model)",
    )(function)
