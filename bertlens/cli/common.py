"""What every command shares, on click: the `command` decorator (the shared options, printing the result, errors in
the command's own flags) and `Call`: the model loaded once, what was given, the checks of options that apply only with
another, the model-run options. The click options themselves are made in `params` from core.options declarations.

A command is one function in its capability's module:

    @command("tokens", "text -> pieces, ids, offsets, words, segments")
    @argument("text", "the text ('-' reads standard input)")
    @option(PAIR_OPTION)
    def tokens(call: Call, text: str, pair: str | None) -> Tokenization:
        return tokenize(call.model(), text_argument(text), pair)

It returns a result; `command` prints `str(result)`, or `result.to_dict()` as JSON with --json.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TextIO

import click
from click.core import ParameterSource

from ..core.errors import BertlensError, Named, Spelling, python_spelling
from .params import Command, shared_flags

if TYPE_CHECKING:
    from ..contextual.states import RunOptions
    from ..core.model import Model
    from ..core.precision import PrecisionChoice

EXIT_USAGE = 2  # bad input or a model that cannot be used
EXIT_BUG = 70  # an unexpected error inside bertlens
SHARED = ("model", "offline", "json")  # accepted before or after the command

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


class Printable(Protocol):
    """What a command returns for `command` to print: `str()` for a person (a table), `to_dict()` with --json (a
    result's, or the plain JSON an in-process request answered)."""

    def to_dict(self) -> object: ...


class Call:
    """One run of a command: the shared options (given before or after the command), the model loaded once, and
    whether each option was given on the command line (click's parameter source)."""

    def __init__(self, ctx: click.Context, spellings: Mapping[str, str] | None = None) -> None:
        self.ctx = ctx
        self.spellings = dict(spellings or {})
        self.loaded: Model | None = None
        self.precision_choice: PrecisionChoice | None = None

    def shared(self, name: str) -> Any:
        """A shared option's value: as given after the command, else before it (Any: str, bool or None)."""
        value = self.ctx.params.get(name)
        if value is not None and value is not False:  # given after the command ('' too: a model path to refuse)
            return value
        root = self.ctx.find_root()
        return root.params.get(name) if root is not self.ctx else value

    @property
    def json(self) -> bool:
        return bool(self.shared("json"))

    @property
    def offline(self) -> bool:
        """Whether --offline was given: a hub id must then be in the cache already."""
        return bool(self.shared("offline"))

    @property
    def model_name(self) -> str | None:
        return self.shared("model")  # type: ignore[no-any-return]  # click gives str or None

    @property
    def progress(self) -> bool:
        """Progress is shown on a terminal's standard error, unless --no-progress or --json is given."""
        return not self.ctx.params.get("no_progress", False) and not self.json and sys.stderr.isatty()

    def model(self) -> Model:
        """The command's model, loaded once; a hub id is fetched into the Hugging Face cache the first time, with
        progress on a terminal's standard error."""
        from ..core.model import load_model

        if self.loaded is None:
            self.loaded = load_model(self.model_name, offline=self.offline, progress=self.progress)
        return self.loaded

    def given(self, name: str) -> bool:
        """Whether the command line gives the option or argument `name` (a parameter name or a flag)."""
        param = self.param(name)
        source = self.ctx.get_parameter_source(param.name or "")
        return source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)

    def param(self, name: str) -> click.Parameter:
        """The command's parameter `name` (its Python name, or one of its flags)."""
        for param in self.ctx.command.params:
            if param.name == name or name in getattr(param, "opts", ()):
                return param
        raise LookupError(f"{self.ctx.command.name} has no option {name}")

    def flag(self, name: str) -> str:
        """How the command line spells the option `name`: its long flag."""
        opts = self.param(name).opts
        return next((o for o in opts if o.startswith("--")), opts[0])

    def applies_only(self, names: Iterable[str], needs: str) -> None:
        """Refuse options that would be silently ignored: each of `names` applies only `needs` ("with --words").

        An option is refused when the command line gives it, with any value, its default included."""
        from ..core.errors import InputError

        for name in names:
            if self.given(name):
                flag = self.flag(name)
                raise InputError(f"{flag} applies only {needs}; here it would be ignored.", f"Leave out {flag}.")

    def exclusive(self, *names: str) -> None:
        """At most one of `names` given (a usage error otherwise, as argparse's exclusive groups said it)."""
        given = [self.flag(n) for n in names if self.given(n)]
        if len(given) > 1:
            raise click.UsageError(f"argument {given[1]}: not allowed with argument {given[0]}", self.ctx)

    def run_options(self) -> RunOptions:
        """The model-run options (`run_flags`); --precision auto is resolved here, once, with the command's model
        (its choice and why on standard error), so that the run gets a concrete dtype."""
        from ..contextual.states import RunOptions
        from ..core.errors import InputError
        from ..core.options import Precision
        from ..core.precision import FLOAT16_OFF_CUDA, choose_precision

        params = self.ctx.params
        if params["batch_tokens"] < 1:
            raise InputError(
                f"--batch-tokens must be positive, got {params['batch_tokens']}.", "Example: --batch-tokens 8192"
            )
        asked: Precision = params["precision"]
        if params["bf16"] and self.given("precision"):
            raise InputError(
                f"--bf16 and --precision {asked} were both given; --bf16 is short for --precision bfloat16.",
                f"Give one of them: --precision {asked}, or --bf16 alone.",
            )
        dtype: Precision = "bfloat16" if params["bf16"] else asked
        if dtype == "float16" and params["device"] == "cpu":
            raise InputError(
                f"--precision {FLOAT16_OFF_CUDA}",
                "Add --device cuda (or auto), or use --precision bfloat16 (native with AVX512-BF16 or AMX) or auto.",
            )
        if dtype == "auto":
            if self.precision_choice is None:
                self.precision_choice = choose_precision(self.model(), dtype, params["device"])
                print(self.precision_choice.line, file=sys.stderr, flush=True)
            dtype = self.precision_choice.dtype
        return RunOptions(batch_tokens=params["batch_tokens"], device=params["device"], dtype=dtype)


def command(
    name: str,
    short_help: str,
    description: str | None = None,
    *,
    shared: bool = True,
    spellings: Mapping[str, str] | None = None,
) -> Callable[[Callable[..., Printable]], click.Command]:
    """A bertlens command from `run(call, **options)`, which returns its result: printed as `str()`, or as JSON
    with --json. A BertlensError is printed in the command's own flags (exit 2), a bug without a traceback (exit 70).

    `short_help` is its line in `bertlens --help`; `description` its --help text (default: `short_help`); `shared`
    False leaves out --model/--offline/--json (a command that declares its own); `spellings` names the flag of a
    Python argument the error spelling cannot find by name (`{"path": "--out"}`)."""

    def decorate(run: Callable[..., Printable]) -> click.Command:
        @functools.wraps(run)
        def callback(**params: Any) -> None:
            ctx = click.get_current_context()
            call = Call(ctx, spellings)
            for key in SHARED if shared else ():
                params.pop(key)
            try:
                result = run(call, **params)
                emit(json.dumps(result.to_dict(), ensure_ascii=False) if call.json else str(result))
            except BertlensError as raised:
                error = raised.spelled(flag_spelling(ctx.command, call.spellings))
                if call.json:
                    emit(json.dumps(error.to_dict(), ensure_ascii=False))
                emit(f"bertlens: error: {error}", sys.stderr)
                ctx.exit(EXIT_USAGE)
            except (click.exceptions.Exit, click.ClickException, KeyboardInterrupt):
                raise
            except BrokenPipeError:
                ctx.exit(0)
            except Exception as exc:  # a bug: say so plainly, without a traceback
                message = f"{type(exc).__name__}: {exc}"
                if call.json:
                    emit(json.dumps(internal_error(message), ensure_ascii=False))
                emit(f"bertlens: unexpected error (please report it): {message}", sys.stderr)
                ctx.exit(EXIT_BUG)

        if shared:
            callback = shared_flags(callback)
        return click.command(name, cls=Command, help=description or short_help, short_help=short_help)(callback)

    return decorate


def flag_spelling(cmd: click.Command, spellings: Mapping[str, str] | None = None) -> Spelling:
    """How `cmd` spells the Python arguments an error names (core/errors.py): `overwrite=True` is `--overwrite`,
    `seed` is `--seed`, `shard_texts=1000` is `--shard-texts 1000`; None for what it has no flag for."""
    by_name = {p.name: p for p in cmd.params if isinstance(p, click.Option)}
    by_flag = {flag: p for p in cmd.params if isinstance(p, click.Option) for flag in p.opts + p.secondary_opts}
    named = {**FLAG_OF_ARGUMENT, **(spellings or {})}

    def spell(name: str, value: object) -> str | None:
        typed = python_spelling(name, value)
        if named.get(typed) in by_flag:  # a value with a flag of its own (`max_minutes=None`)
            return named[typed]
        if isinstance(value, Named) and "=" in name:  # a placeholder of one value: `{shard_texts=1000}`
            name, literal = name.split("=", 1)
            value = literal.strip("'\"")
        param = by_name.get(name) or by_flag.get(named.get(name, ""))
        if param is None:
            return None
        flag = next((o for o in param.opts if o.startswith("--")), param.opts[0])
        if isinstance(value, Named):
            return flag
        if param.is_flag:  # a switch: `overwrite=True` is `--overwrite`; its other value has no flag
            on = True if param.is_bool_flag else param.flag_value  # click 8.3+ leaves a bool flag's flag_value unset
            return flag if value in (on, str(on)) else None
        return f"{flag} {value}"

    return spell


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


def internal_error(message: str) -> dict[str, str]:
    """The JSON object of an unexpected error (a bug), shaped as every other error."""
    return {
        "error": "InternalError",
        "message": message,
        "hint": "This is a bug in bertlens: please report it with the command line that caused it.",
    }


def emit(text: str, stream: TextIO | None = None) -> None:
    """A line to standard output (or `stream`); what the stream cannot encode (a path's surrogates) is escaped."""
    stream = stream or sys.stdout
    try:
        stream.write(text + "\n")
    except UnicodeEncodeError:
        stream.write(text.encode("ascii", "backslashreplace").decode("ascii") + "\n")
    stream.flush()
