"""What every command group shares: the parser (its refusals kept for --json, what was typed kept for `only_with`),
flags made from the shared options, reading the text argument, loading the model, the model-run options."""

from __future__ import annotations

import argparse
import sys
import weakref
from collections.abc import Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeAlias

from ..core.options import NO_PROGRESS_OPTION, PRECISIONS, RUN_OPTIONS, Option, check_choice

if TYPE_CHECKING:
    from ..contextual.states import RunOptions
    from ..core.errors import Spelling
    from ..core.model import Model
    from ..core.options import Precision
    from ..core.precision import PrecisionChoice

EXIT_USAGE = 2  # bad input or a model that cannot be used

# The declaration each flag was made from (by add_option), for the tests that every shared flag has one.
DECLARED: weakref.WeakKeyDictionary[argparse.Action, Option] = weakref.WeakKeyDictionary()

# While `parse` runs: the dests of the options and arguments the command line gives (argparse calls an action only for
# what was typed, in any spelling: `--opt v`, `--opt=v`, an abbreviation, a short flag); `only_with` reads them.
_TYPED: ContextVar[set[str] | None] = ContextVar("bertlens_typed", default=None)
TYPED = "typed_options"  # the parsed arguments' attribute holding them (a frozenset of dests)


class TypedAction(argparse.Action):
    """An action that notes its dest as typed (while `parse` runs) before acting as its base class does."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        typed = _TYPED.get()
        if typed is not None:
            typed.add(self.dest)
        super().__call__(parser, namespace, values, option_string)


def typed_action(base: type[argparse.Action]) -> type[argparse.Action]:
    """`base` (an argparse action class) noting its dest as typed when argparse calls it."""
    made: type[argparse.Action] = type(f"Typed{base.__name__.lstrip('_')}", (TypedAction, base), {})
    return made


_TYPED_STORE = typed_action(argparse._StoreAction)
# The actions whose values a command reads, by the name `add_argument(action=...)` takes (None: store), or by class.
_TYPED_ACTIONS: dict[str | type[argparse.Action] | None, type[argparse.Action]] = {
    None: _TYPED_STORE,
    "store": _TYPED_STORE,
    "store_const": typed_action(argparse._StoreConstAction),
    "store_true": typed_action(argparse._StoreTrueAction),
    "store_false": typed_action(argparse._StoreFalseAction),
    "append": typed_action(argparse._AppendAction),
    "append_const": typed_action(argparse._AppendConstAction),
    "extend": typed_action(argparse._ExtendAction),
    "count": typed_action(argparse._CountAction),
    argparse.BooleanOptionalAction: typed_action(argparse.BooleanOptionalAction),
}


class UsageError(SystemExit):
    """argparse refused the command line (exit status 2), with its message kept for --json."""

    def __init__(self, message: str) -> None:
        super().__init__(EXIT_USAGE)
        self.message = message

    def to_dict(self) -> dict[str, str]:
        return {"error": "UsageError", "message": self.message, "hint": "See bertlens --help, or COMMAND --help."}


class FlagParser(argparse.ArgumentParser):
    """argparse's parser, whose options and arguments (in its groups too) note when they are typed, so that
    `only_with` can refuse an option given on the command line even where its value is the default, and whose
    refusals keep their message (so that --json can print it). Every parser of the command line is one (the parent
    parsers of shared flags too); subparsers are made of the same class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # argparse.ArgumentParser's own arguments
        super().__init__(*args, **kwargs)
        for name, typed in _TYPED_ACTIONS.items():
            self.register("action", name, typed)

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise UsageError(message)


Commands: TypeAlias = "argparse._SubParsersAction[FlagParser]"  # what each command group's `register` adds to


class Printable(Protocol):
    """What a command returns for `main` to print: `str()` for a person (a table), `to_dict()` with --json (a
    result's, or the plain JSON an in-process request answered)."""

    def to_dict(self) -> object: ...


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """`parser.parse_args(argv)`, with the dests typed on the command line kept as the attribute TYPED."""
    typed: set[str] = set()
    token = _TYPED.set(typed)
    try:
        args = parser.parse_args(argv)
    finally:
        _TYPED.reset(token)
    setattr(args, TYPED, frozenset(typed))
    return args


def add_option(
    parser: argparse._ActionsContainer,
    option: Option,
    *,
    when: str | None = None,
    command: str | None = None,
    unset: bool | None = None,
    short: bool = True,
    **overrides: Any,  # argparse's keywords, each of its own type
) -> argparse.Action:
    """Add `option` (from core.options) to `parser` (or an argument group): its flag, help, choices and default as
    declared there.

    `when` prefixes the help with where the option applies ("with --words: …"); `command` ("plot contextuality")
    takes that command's default where the declaration names one; `unset` True keeps None unless the flag is given
    (so that the command can refuse it where it does not apply, or tell it from the default: `value_of` gives the
    declared default then); `short` False leaves out the one-letter spelling. `overrides` are argparse keywords for
    what only this command says differently (the help of what its --out writes; a positional's `nargs`)."""
    if unset is not None and unset != option.cli_unset:
        option = option.but(cli_unset=unset)
    if not short and option.short:
        option = option.but(short=None)
    settings: dict[str, Any] = {"help": f"{when}: {option.help}" if when else option.help}
    if option.kind is bool:
        settings["action"] = "store_true"
    else:
        if option.kind is not str:
            settings["type"] = option.kind
        if option.choices is not None:
            settings["choices"] = option.choices
        if option.metavar is not None:
            settings["metavar"] = option.metavar
        if option.many:
            settings["nargs"] = "*" if not option.flags else "+"
    if option.flags:
        settings["dest"] = option.name
        settings["default"] = option.cli_default_in(command)
    settings.update(overrides)
    action = parser.add_argument(*(option.flags or (option.name,)), **settings)
    DECLARED[action] = option
    return action


def value_of(args: argparse.Namespace, option: Option, command: str | None = None) -> Any:
    """`option`'s value on this command line: as given, else its declared default in `command` (a `cli_unset` flag
    is None then). Any: of the option's kind, as argparse parsed it (its namespace is untyped) or as declared."""
    value = getattr(args, option.name)
    return option.default_in(command) if value is None else value


def run_parser(when: str | None = None, *, unset: bool | None = None) -> FlagParser:
    """The options of commands that run the model: --device, --precision (--bf16), --batch-tokens (a parent parser).

    `when` ("wic") starts their help where they apply to one subcommand only; `unset` True keeps them None unless
    given, for a command that refuses them elsewhere."""
    run = FlagParser(add_help=False)
    add_run_options(run, when, unset=unset)
    return run


def add_run_options(parser: argparse.ArgumentParser, when: str | None = None, *, unset: bool | None = None) -> None:
    """--device, --precision (checked by `run_options`, which names the choices), --bf16, --batch-tokens."""
    for option in RUN_OPTIONS:
        extra: dict[str, Any] = {"choices": None} if option.choices == PRECISIONS else {}
        if unset and option.kind is not bool and "default" not in option.help:  # its default said, as it is not shown
            extra["help"] = f"{when}: {option.help}" if when else option.help
            extra["help"] += f" (default {option.default})"
        add_option(parser, option, when=when, unset=unset if option.kind is not bool else None, **extra)


def text_argument(value: str) -> str:
    """The text argument, or standard input for '-', which must be UTF-8."""
    if value != "-":
        return value
    from ..core.errors import InputError

    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"Standard input is not valid UTF-8 (byte {exc.start}).", "Convert the text to UTF-8."
        ) from None


def load(args: argparse.Namespace) -> Model:
    """The command's model, loaded once (run_options may have loaded it first, for --precision auto); a hub id is
    fetched into the Hugging Face cache the first time, with progress on a terminal's standard error."""
    from ..core.model import load_model

    loaded: Model | None = getattr(args, "loaded_model", None)
    if loaded is None:
        loaded = args.loaded_model = load_model(args.model, offline=offline(args), progress=show_progress(args))
    return loaded


def offline(args: argparse.Namespace) -> bool:
    """Whether --offline was given (before or after the command): a hub id must then be in the cache already."""
    return bool(getattr(args, "offline", False))


def run_options(args: argparse.Namespace) -> RunOptions:
    """The model-run options of the command line; --precision auto is resolved here, once, with the command's model
    (its choice and why on standard error), so that the run gets a concrete dtype."""
    from ..contextual.states import RunOptions
    from ..core.errors import InputError
    from ..core.precision import FLOAT16_OFF_CUDA, choose_precision

    if args.batch_tokens < 1:
        raise InputError(f"--batch-tokens must be positive, got {args.batch_tokens}.", "Example: --batch-tokens 8192")
    asked: Precision | None = getattr(args, "precision", None)  # as typed: checked here
    if asked is not None:
        check_choice(asked, PRECISIONS, "--precision")
        if args.bf16:
            raise InputError(
                f"--bf16 and --precision {asked} were both given; --bf16 is short for --precision bfloat16.",
                f"Give one of them: --precision {asked}, or --bf16 alone.",
            )
    dtype: Precision = "bfloat16" if args.bf16 else asked or "float32"  # one of PRECISIONS (checked above)
    if dtype == "float16" and args.device == "cpu":
        raise InputError(
            f"--precision {FLOAT16_OFF_CUDA}",
            "Add --device cuda (or auto), or use --precision bfloat16 (native with AVX512-BF16 or AMX) or auto.",
        )
    if dtype == "auto":
        chosen: PrecisionChoice | None = getattr(args, "precision_choice", None)
        if chosen is None:
            chosen = choose_precision(load(args), dtype, args.device)
            args.precision_choice = chosen
            print(chosen.line, file=sys.stderr, flush=True)
        dtype = chosen.dtype
    return RunOptions(batch_tokens=args.batch_tokens, device=args.device, dtype=dtype)


def only_with(args: argparse.Namespace, options: Sequence[str], needs: str) -> None:
    """Refuse options that would be silently ignored: each of `options` (flags, `--max-texts`) applies only `needs`.

    An option is refused when the command line gives it, in any spelling and with any value, its default included
    (`parse` kept what was typed); for arguments parsed without `parse`, when its value is not None or False."""
    from ..core.errors import InputError

    typed: frozenset[str] | None = getattr(args, TYPED, None)
    for option in options:
        dest = option.lstrip("-").replace("-", "_")
        value = getattr(args, dest)
        given = dest in typed if typed is not None else (value is not None and value is not False)
        if given:
            raise InputError(f"{option} applies only {needs}; here it would be ignored.", f"Leave out {option}.")


def add_progress(parser: argparse.ArgumentParser, when: str | None = None, **overrides: Any) -> None:
    """`--no-progress`, for a command that can run longer than a few seconds."""
    add_option(parser, NO_PROGRESS_OPTION, when=when, **overrides)


def show_progress(args: argparse.Namespace) -> bool:
    """Progress is shown on a terminal's standard error, unless --no-progress or --json is given."""
    import sys

    return not getattr(args, "no_progress", False) and not getattr(args, "json", False) and sys.stderr.isatty()


# Python arguments whose flag has another name, by the argument (and its value, where the value picks the flag); each is
# used only where the running command has that flag.
FLAG_OF_ARGUMENT = {
    "max_minutes=None": "--no-time-limit",
    "max_minutes": "--minutes",
    "dims": "--vectors",
    "check=False": "--no-check",
    "special=False": "--no-special",
    "progress=False": "--no-progress",
    "path": "--out",
}


def command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the command that `args` ran (`plot tokens`'s, not `plot`'s nor the top level's)."""
    while True:
        found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = getattr(args, found[0].dest, None) if found else None
        if chosen is None:
            return parser
        parser = found[0].choices[chosen]


def flag_spelling(parser: argparse.ArgumentParser) -> Spelling:
    """How `parser`'s command spells the Python arguments an error names (see core/errors.py): `overwrite=True` is
    `--overwrite`, `seed` is `--seed`, `shard_texts=1000` is `--shard-texts 1000`; None for what it has no flag for."""
    by_dest = {a.dest: a for a in parser._actions if a.option_strings}
    by_flag = {flag: a for a in parser._actions for flag in a.option_strings}

    def spell(name: str, value: str | None) -> str | None:
        typed = name if value is None else f"{name}={value}"
        if FLAG_OF_ARGUMENT.get(typed) in by_flag:  # a value with a flag of its own (`max_minutes=None`)
            return FLAG_OF_ARGUMENT[typed]
        action = by_dest.get(name) or by_flag.get(FLAG_OF_ARGUMENT.get(name, ""))
        if action is None:
            return None
        flag = next((f for f in action.option_strings if f.startswith("--")), action.option_strings[0])
        if value is None:
            return flag
        if action.nargs == 0:  # a switch: `overwrite=True` is `--overwrite`; its other value has no flag
            return flag if value == repr(action.const) else None
        return f"{flag} {value.strip(chr(39) + chr(34))}"

    return spell
