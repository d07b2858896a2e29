"""One source for every shared option: the CLI's flags, the web API's request fields and the library's defaults
agree with core.options.

Each check reads the click commands and the pydantic request models (what users actually get) and compares them with
the `Option` declared in core/options.py: choices, default, flags and the kind of value. Every flag that more than one
command takes is made from a declaration; a request field that a command's option also sets has that option's
default; the library functions the commands call take the same defaults; the token filter flags map to a
`TokenFilter` the same way on both surfaces; `pretrain` names the model's depth --num-layers.
"""

from __future__ import annotations

import ast
import inspect
import json
import typing
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from bertlens.cli import main, program
from bertlens.cli.common import SHARED
from bertlens.cli.params import Declared
from bertlens.cli.reference import commands
from bertlens.core import options
from bertlens.core.options import Option
from bertlens.web import requests

ROOT = Path(__file__).resolve().parents[2]
PROJECTION = (options.METHOD_OPTION, options.DIMS_OPTION, options.SEED_OPTION)

# (request model, option, `when` prefix of its description) for every request field made from a shared option
WEB_USES: list[tuple[type, Option, str | None]] = [
    *((requests.NeighborsRequest, option, None) for option in options.NEIGHBORS_OPTIONS),
    (requests.ContextRequest, options.WORD_OPTION, None),
    (requests.ContextRequest, options.SENTENCES_OPTION, None),
    (requests.ContextRequest, options.WORD_POOL_OPTION, None),
    (requests.TrajectoryRequest, options.WORD_OPTION, None),
    (requests.TrajectoryRequest, options.TRAJECTORY_SENTENCES_OPTION, None),
    *((requests.TrajectoryRequest, option, None) for option in PROJECTION),
    *((requests.ProjectionRequest, option, None) for option in (*PROJECTION, options.LABEL_OPTION)),
    (requests.ProjectionRequest, options.LAYER_OPTION, "contextual"),
    (requests.ProjectionRequest, options.LEVEL_OPTION, "contextual"),
    (requests.TokensRequest, options.PAIR_OPTION, None),
    (requests.ExplainRequest, options.PAIR_OPTION, None),
]

DECLARED = [value for value in vars(options).values() if isinstance(value, Option)]
COMMANDS = dict(commands(program))


def described(option: Option, when: str | None) -> str:
    return f"{when}: {option.help}" if when else option.help


def made() -> Iterator[tuple[str, click.Parameter, Option]]:
    """Every command's parameters made from a declaration, with it."""
    for name, command in COMMANDS.items():
        for param in command.params:
            declared = getattr(param, "declared", None)
            if declared is not None:
                yield name, param, declared


def click_default(param: click.Parameter, command: click.Command) -> object:
    default = param.to_info_dict()["default"]  # None where there is none
    return tuple(default) if isinstance(default, list) else default


@pytest.mark.parametrize(("name", "param", "option"), list(made()), ids=lambda v: getattr(v, "name", v))
def test_cli_flag_is_the_declared_option(name, param, option):
    assert param.name == option.name
    if isinstance(param, click.Argument):
        assert option.flags == () and (param.nargs == -1) == option.many
        return
    assert tuple(param.opts) == option.flags
    assert param.is_flag == (option.kind is bool)
    if option.kind is bool:
        assert param.default is False and not option.default
        return
    if option.choices is not None:
        assert isinstance(param.type, click.Choice) and tuple(param.type.choices) == option.choices
    else:
        assert param.type == click.types.convert_type(option.kind)
    assert param.multiple == option.many
    assert click_default(param, COMMANDS[name]) == (tuple(option.default) if option.many else option.default)


@pytest.mark.parametrize(("model", "option", "when"), WEB_USES, ids=lambda v: getattr(v, "name", None))
def test_request_field_is_the_declared_option(model, option, when):
    field = model.model_fields[option.name]
    assert field.description == described(option, when)
    if option.required:
        assert field.is_required()
    else:
        assert field.default == (list(option.default) if option.many else option.default)
    annotation = field.annotation
    if option.choices is not None:
        assert typing.get_origin(annotation) is typing.Literal
        assert typing.get_args(annotation) == option.choices
    elif option.many:
        assert annotation == list[option.kind]
    elif option.default is None and not option.required:
        assert annotation == option.kind | None
    else:
        assert annotation is option.kind


def test_every_declared_option_is_used():
    """Each declaration makes a CLI flag or argument; those the web API takes are its request fields too."""
    on_cli = {id(option) for _, _, option in made()}
    on_web = {id(option) for _, option, _ in WEB_USES}
    unused = [option.name for option in DECLARED if id(option) not in on_cli]
    assert not unused, f"declared but no command takes them: {unused}"
    assert on_web <= {id(option) for option in DECLARED}


def test_every_flag_that_several_commands_take_is_declared_once():
    """A flag spelled in more than one command is made from a declaration in core/options.py in each of them, or by
    one decorator shared by those commands (the same help, kind and default everywhere)."""
    places: dict[str, list[tuple[str, click.Parameter]]] = {}
    for name, command in COMMANDS.items():
        for param in command.params:
            if isinstance(param, click.Option) and param.name not in SHARED and not param.hidden:
                for flag in param.opts:
                    places.setdefault(flag, []).append((name, param))
    shared = {flag: found for flag, found in places.items() if len(found) > 1}
    assert {"--layers", "--layer", "--combine", "--pool", "-k", "--out", "--overwrite", "--max-texts"} <= set(shared)
    assert {"--cache-dir", "--words-only", "--precision", "--device", "--engine", "--batch-tokens"} <= set(shared)
    for flag, found in shared.items():
        made_once = {(p.help, p.type.name, str(p.to_info_dict()["default"])) for _, p in found}
        if len(made_once) == 1:  # one shared decorator made them all (plot's drawing flags, say)
            continue
        for name, param in found:
            assert isinstance(param, Declared) and param.declared is not None, (
                f"bertlens {name} {flag} is written by hand: declare it in core/options.py"
            )


def request_commands() -> Iterator[tuple[type, str]]:
    """Each request model whose docstring names the command it answers as: "`bertlens search INDEX …`"."""
    for value in vars(requests).values():
        if isinstance(value, type) and issubclass(value, requests.Strict) and value.__doc__:
            words = value.__doc__.strip("`").split()
            if words[:1] == ["bertlens"] and words[1] in COMMANDS:
                yield value, words[1]


@pytest.mark.parametrize(("model", "name"), list(request_commands()), ids=lambda v: getattr(v, "__name__", v))
def test_a_request_field_and_its_flag_have_one_default(model, name):
    """A request field that a command's option also sets defaults as the flag does (the web answers as the command)."""
    command = COMMANDS[name]
    params = {p.name: p for p in command.params if p.name not in SHARED}
    shared = set(model.model_fields) & set(params)
    assert shared, f"{model.__name__} shares no field with bertlens {name}"
    for field in shared:
        default = model.model_fields[field].default
        default = tuple(default) if isinstance(default, list) else default
        if params[field].required or model.model_fields[field].is_required():
            continue
        assert default == click_default(params[field], command), (model.__name__, field)


# (command, the library function it calls): the function's defaults are the command's
LIBRARY = [
    ("neighbors", "bertlens.similarity.nearest", "neighbors"),
    ("search", "bertlens.occurrences.search", "SearchOptions"),
    ("diff", "bertlens.spaces.diff", "diff"),
    ("distill", "bertlens.contextual.distill", "distill"),
    ("senses", "bertlens.senses.senses", "SensesOptions"),
]


@pytest.mark.parametrize(("name", "module", "function"), LIBRARY)
def test_the_library_takes_the_commands_defaults(name, module, function):
    """Where the library function takes an argument of the same name as a command's option, one default holds."""
    import importlib

    called = getattr(importlib.import_module(module), function)
    command = COMMANDS[name]
    params = {p.name: p for p in command.params if isinstance(p, click.Option) and p.name not in SHARED}
    signature = inspect.signature(called)
    shared = [n for n, p in signature.parameters.items() if n in params and p.default is not inspect.Parameter.empty]
    assert shared, f"{function} shares no argument with bertlens {name}"
    for argument in shared:
        default = signature.parameters[argument].default
        default = tuple(default) if isinstance(default, list) else default
        assert click_default(params[argument], command) == default, (name, argument)


def test_neighbors_takes_the_same_options_on_both_surfaces():
    """Only --json (the output format), --precompute (the server precomputes at startup), --cache-dir (the
    server's is `serve --cache-dir`) and --offline (the server's models are loaded at start: `serve --offline`) are
    the CLI's own; the API adds nothing (`model` is --model)."""
    cli = {p.name for p in COMMANDS["neighbors"].params} - {"json", "precompute", "cache_dir", "offline"}
    assert cli == set(requests.NeighborsRequest.model_fields)
    assert cli == {o.name for o in options.NEIGHBORS_OPTIONS} | {"model"}


def test_request_choices_are_the_library_vocabularies():
    """The request models use core.options' Literal types themselves, not copies."""
    assert requests.NeighborsRequest.model_fields["metric"].annotation is options.Metric
    assert requests.ProjectionRequest.model_fields["method"].annotation is options.ProjectionMethod
    assert requests.NeighborsRequest.model_fields["pool"].annotation is options.Pool
    assert requests.ContextRequest.model_fields["pool"].annotation is options.WordPool


def test_presets_match_the_training_config():
    from bertlens.training.config import PRESETS

    assert tuple(PRESETS) == options.PRESET_NAMES


def test_options_module_imports_nothing_heavy():
    tree = ast.parse((ROOT / "bertlens" / "core" / "options.py").read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert imported <= {"__future__", "dataclasses", "typing", "errors"}


def test_layers_has_one_default_everywhere():
    """--layers means the last layer unless given, in every command that takes it."""
    for name in ("layers", "distill", "extract", "index"):
        (param,) = [p for p in COMMANDS[name].params if p.name == "layers"]
        assert click_default(param, COMMANDS[name]) == (-1,), name


def test_pretrain_names_the_depth_num_layers():
    (param,) = [p for p in COMMANDS["pretrain"].params if p.name == "num_layers" or "--num-layers" in p.opts]
    assert "--num-layers" in param.opts


def test_pretrain_layers_is_refused_with_a_hint(tmp_path, capsys):

    out = tmp_path / "run"
    assert main(["pretrain", "corpus.txt", "--out", str(out), "--layers", "4", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)
    assert error["error"] == "InputError" and "--num-layers" in error["message"]
    assert error["hint"] == "Give --num-layers 4 instead of --layers 4."
    assert not out.exists()


def test_pretrain_bad_depth_names_num_layers(tmp_path, capsys):

    assert main(["pretrain", "corpus.txt", "--out", str(tmp_path / "run"), "--num-layers", "0", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)
    assert error["message"].startswith("--num-layers:") and "num_hidden_layers" in error["message"]


def test_one_layer_check_for_every_caller(default_model):
    """check_layers (before a forward pass) and select_layers (on computed states) refuse alike."""
    import numpy as np

    from bertlens.contextual.states import check_layers, select_layers
    from bertlens.core.checks import layer_numbers
    from bertlens.core.errors import InputError

    count = default_model.config.num_hidden_layers + 1
    states = np.zeros((count, 2, 3), dtype=np.float32)
    assert check_layers(default_model, [0, -1]) == layer_numbers([0, -1], count) == (0, -1)
    assert check_layers(default_model, np.int64(2)) == (2,)
    for bad in ([count], [-count - 1], [], [1.0], [True], "1"):
        with pytest.raises(InputError) as before:
            check_layers(default_model, bad)
        with pytest.raises(InputError) as after:
            select_layers(states, bad, "mean")
        assert str(before.value) == str(after.value)
    with pytest.raises(InputError, match=f"Layer {count} does not exist: this model has layers 0"):
        layer_numbers([np.int64(count)], count)
    assert select_layers(states + np.arange(count)[:, None, None], [1, -1], "mean")[0, 0] == (1 + count - 1) / 2


def test_filter_flags_are_the_same_filter_on_both_surfaces():
    from bertlens.embeddings.token_classes import TokenFilter

    ctx = COMMANDS["neighbors"].make_context("neighbors", ["dog", "--no-pieces", "--specials"])
    request = requests.NeighborsRequest(queries=["dog"], no_pieces=True, specials=True)
    given = {o.name: ctx.params[o.name] for o in options.FILTER_OPTIONS}
    assert given == options.filter_flags(request)
    assert set(options.filter_flags(request)) == {o.name for o in options.FILTER_OPTIONS}
    chosen = TokenFilter.from_flags(**options.filter_flags(request))
    assert chosen == TokenFilter(continuation=False, special=True)
    assert TokenFilter.from_flags(**options.filter_flags(requests.NeighborsRequest(queries=["dog"]))) == TokenFilter()


def test_several_values_after_one_flag_as_before():
    """`--positive king woman --negative man -k 3`: values run until the next flag, negative numbers included."""
    ctx = COMMANDS["neighbors"].make_context(
        "neighbors", ["--positive", "king", "woman", "--negative", "man", "-k", "3"]
    )
    assert ctx.params["positive"] == ("king", "woman") and ctx.params["negative"] == ("man",) and ctx.params["k"] == 3
    ctx = COMMANDS["layers"].make_context("layers", ["hi", "--words", "--layers", "-4", "-3", "-1"])
    assert ctx.params["layers"] == (-4, -3, -1) and ctx.params["texts"] == ("hi",)
