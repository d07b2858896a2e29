"""One source for every shared option: the CLI's flags and the web API's request fields agree with core.options.

Each check reads the built argparse parser and the pydantic request models (what users actually get), and compares
them with the `Option` declared in core/options.py: choices, default, help text and the kind of value. Every flag that
more than one command takes is made from a declaration; layers are checked by one function; the token filter flags
map to a `TokenFilter` the same way on both surfaces; `pretrain` names the model's depth --num-layers.
"""

from __future__ import annotations

import argparse
import ast
import json
import typing
from pathlib import Path

import pytest

from bertlens.cli import build_parser
from bertlens.core import options
from bertlens.core.options import Option
from bertlens.web import requests

ROOT = Path(__file__).resolve().parents[2]
SPACE = (options.METRIC_OPTION, options.CENTER_OPTION, options.REMOVE_TOP_OPTION, options.POOL_OPTION)
PROJECTION = (options.METHOD_OPTION, options.DIMS_OPTION, options.SEED_OPTION)

# (command path, option, `when` prefix of its help) for every CLI command that takes a shared option
CLI_USES: list[tuple[tuple[str, ...], Option, str | None]] = [
    *((("neighbors",), option, None) for option in options.NEIGHBORS_OPTIONS),
    *((("similarity",), option, None) for option in SPACE),
    (("context",), options.WORD_OPTION, None),
    (("context",), options.SENTENCES_OPTION, None),
    (("context",), options.WORD_POOL_OPTION, "with SENTENCEs"),
    (("layers",), options.WORD_POOL_OPTION, "with --words"),
    (("extract",), options.WORD_POOL_OPTION, "with --level word"),
    (("plot", "context"), options.WORD_OPTION, None),
    (("plot", "context"), options.SENTENCES_OPTION, None),
    (("plot", "context"), options.WORD_POOL_OPTION, None),
    (("plot", "trajectory"), options.WORD_OPTION, None),
    (("plot", "trajectory"), options.TRAJECTORY_SENTENCES_OPTION, None),
    *((("plot", kind), option, None) for kind in ("tokens", "contextual", "trajectory") for option in PROJECTION),
    (("plot", "tokens"), options.LABEL_OPTION, None),
    (("plot", "contextual"), options.LAYER_OPTION, None),
    (("plot", "contextual"), options.LEVEL_OPTION, None),
    (("tokens",), options.PAIR_OPTION, None),
    (("explain",), options.PAIR_OPTION, None),
    (("plot", "embedding-layer"), options.PAIR_OPTION, None),
]

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


def command(*path: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for name in path:
        chooser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = chooser.choices[name]
    return parser


def action_of(parser: argparse.ArgumentParser, dest: str) -> argparse.Action:
    (found,) = [a for a in parser._actions if a.dest == dest]
    return found


def described(option: Option, when: str | None) -> str:
    return f"{when}: {option.help}" if when else option.help


@pytest.mark.parametrize(("path", "option", "when"), CLI_USES, ids=lambda v: getattr(v, "name", None))
def test_cli_flag_is_the_declared_option(path, option, when):
    action = action_of(command(*path), option.name)
    assert action.help == described(option, when)
    assert tuple(action.option_strings) == option.flags
    if option.kind is bool:
        assert isinstance(action, argparse._StoreTrueAction) and action.default is False and not option.default
        return
    assert (tuple(action.choices) if action.choices is not None else None) == option.choices
    assert action.type is (None if option.kind is str else option.kind)
    assert action.metavar == option.metavar
    if option.flags:  # an argument's default is argparse's own ([] for nargs "*", none for "+")
        assert action.default == option.cli_default
        assert action.nargs == ("+" if option.many else None)
    else:
        assert (action.nargs in ("*", "+")) == option.many


def test_cli_unset_options_fall_back_to_the_declared_default():
    """A flag that stays None unless given (so that commands can refuse it where it does not apply) still means its
    declared default: the command line without it and with the default written out mean the same."""
    from bertlens.cli.common import value_of

    command_lines = {
        options.POOL_OPTION: ["neighbors", "dog"],
        options.WORD_POOL_OPTION: ["context", "bread", "I like bread", "Banana bread"],
        options.SEED_OPTION: ["plot", "tokens", "king"],
        options.PRECISION_OPTION: ["layers", "hi"],
        options.PROJECTION_METRIC_OPTION: ["plot", "tokens", "king"],
        options.TRAIN_PRECISION_OPTION: ["pretrain", "corpus.txt", "--out", "run"],
    }
    assert {id(o) for o in command_lines} == {id(o) for o in DECLARED if o.cli_unset}
    parser = build_parser()
    for option, words in command_lines.items():
        bare = parser.parse_args(words)
        assert getattr(bare, option.name) is None
        if option.default is not None:
            given = parser.parse_args([*words, option.flags[0], str(option.default)])
            assert value_of(bare, option) == value_of(given, option) == option.default


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
    """Each declaration makes a CLI flag (by its name, possibly with a command's own help); those the web API takes
    are its request fields too."""
    on_cli = {id(option) for _, option, _ in CLI_USES} | {(o.name, o.default) for o in cli_declarations()}
    on_web = {id(option) for _, option, _ in WEB_USES}
    for option in DECLARED:
        assert id(option) in on_cli or (option.name, option.default) in on_cli, option.name
    assert on_web <= {id(option) for option in DECLARED}


def test_neighbors_takes_the_same_options_on_both_surfaces():
    """Only --json (the output format), --precompute (the server precomputes at startup), --cache-dir (the
    server's is `serve --cache-dir`) and --offline (the server's models are loaded at start: `serve --offline`) are
    the CLI's own; the API adds nothing (`model` is --model)."""
    cli = {a.dest for a in command("neighbors")._actions} - {"help", "json", "precompute", "cache_dir", "offline"}
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


GLOBAL = {"-h", "--help", "--model", "-m", "--offline", "--json"}  # argparse's own, and cli._add_common_options'


def commands(parser: argparse.ArgumentParser, path: str = "") -> list[tuple[str, argparse.ArgumentParser]]:
    """Every command's own parser, with its name as typed ("plot contextual")."""
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not found:
        return [(path, parser)]
    return [pair for name, sub in found[0].choices.items() for pair in commands(sub, f"{path} {name}".strip())]


def cli_declarations() -> list[Option]:
    from bertlens.cli.common import DECLARED as MADE

    return [MADE[a] for _, parser in commands(build_parser()) for a in parser._actions if a in MADE]


def test_every_flag_that_several_commands_take_is_declared_once():
    """A flag spelled in more than one place (not one argparse parent shared by commands) is made from a declaration
    in core/options.py, and takes that declaration's default in every command that does not keep it unset."""
    from bertlens.cli.common import DECLARED as MADE

    places: dict[str, dict[int, tuple[str, argparse.Action]]] = {}
    for name, parser in commands(build_parser()):
        for action in parser._actions:
            if action.help == argparse.SUPPRESS:
                continue
            for flag in set(action.option_strings) - GLOBAL:
                places.setdefault(flag, {})[id(action)] = (name, action)
    shared = {flag: made for flag, made in places.items() if len(made) > 1}
    assert {"--layers", "--layer", "--combine", "--pool", "-k", "--out", "--overwrite", "--max-texts"} <= set(shared)
    assert {"--cache-dir", "--words-only", "--precision", "--device", "--engine", "--batch-tokens"} <= set(shared)
    for flag, made in shared.items():
        for name, action in made.values():
            assert action in MADE, f"{name} {flag} is written by hand: declare it in core/options.py"
            option = MADE[action]
            declared = option.default_in(name)
            expected = list(declared) if option.many and declared is not None else declared
            assert action.default in (expected, None), (name, flag)


def test_layers_has_one_default_everywhere():
    """--layers means the last layer unless given, in every command that takes it (some keep None to tell)."""
    from bertlens.cli.common import value_of

    parser = build_parser()
    for words in (["layers", "hi", "--words"], ["distill", "c", "--words", "w"], ["extract", "c"], ["index", "c"]):
        assert tuple(value_of(parser.parse_args(words), options.LAYERS_OPTION)) == (-1,)


def test_pretrain_names_the_depth_num_layers(tmp_path):
    from bertlens.cli.training import pretrain_config

    args = build_parser().parse_args(["pretrain", "corpus.txt", "--out", str(tmp_path / "run"), "--num-layers", "3"])
    assert pretrain_config(args).num_hidden_layers == 3


def test_pretrain_layers_is_refused_with_a_hint(tmp_path, capsys):
    from bertlens.cli import main

    out = tmp_path / "run"
    assert main(["pretrain", "corpus.txt", "--out", str(out), "--layers", "4", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)
    assert error["error"] == "InputError" and "--num-layers" in error["message"]
    assert error["hint"] == "Give --num-layers 4 instead of --layers 4."
    assert not out.exists()


def test_pretrain_bad_depth_names_num_layers(tmp_path, capsys):
    from bertlens.cli import main

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

    args = build_parser().parse_args(["neighbors", "dog", "--no-pieces", "--specials"])
    request = requests.NeighborsRequest(queries=["dog"], no_pieces=True, specials=True)
    assert options.filter_flags(args) == options.filter_flags(request)
    assert set(options.filter_flags(args)) == {o.name for o in options.FILTER_OPTIONS}
    chosen = TokenFilter.from_flags(**options.filter_flags(request))
    assert chosen == TokenFilter(continuation=False, special=True)
    assert TokenFilter.from_flags(**options.filter_flags(requests.NeighborsRequest(queries=["dog"]))) == TokenFilter()


def test_corpus_requests_take_the_commands_defaults():
    """search and senses: the page's fields default as the commands' flags do (their descriptions are the page's)."""
    search, senses = requests.SearchRequest.model_fields, requests.SensesRequest.model_fields
    parser = build_parser()
    cli_search = parser.parse_args(["search", "index", "the [bank]"])
    cli_senses = parser.parse_args(["senses", "index", "bank"])
    for name in ("word", "layer", "k", "any_word", "exclude_same_text"):
        assert search[name].default == getattr(cli_search, name), name
    assert senses["layer"].default == cli_senses.layer is None
    assert senses["seed"].default == cli_senses.seed == options.SEED_OPTION.default
