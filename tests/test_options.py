"""One source for every shared option: the CLI's flags and the web API's request fields agree with core.options.

Each check reads the built argparse parser and the pydantic request models (what users actually get), and compares
them with the `Option` declared in core/options.py: choices, default, help text and the kind of value.
"""

from __future__ import annotations

import argparse
import ast
import typing
from pathlib import Path

import pytest

from bertlens.cli import build_parser
from bertlens.core import options
from bertlens.core.options import Option
from bertlens.web import requests

ROOT = Path(__file__).resolve().parents[1]
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
    }
    assert {o.name for o in command_lines} == {o.name for o in DECLARED if o.cli_unset}
    parser = build_parser()
    for option, words in command_lines.items():
        bare = parser.parse_args(words)
        assert getattr(bare, option.name) is None
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


def test_every_declared_option_is_on_both_surfaces():
    on_cli = {id(option) for _, option, _ in CLI_USES}
    on_web = {id(option) for _, option, _ in WEB_USES}
    for option in DECLARED:
        assert id(option) in on_cli and id(option) in on_web, option.name


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
