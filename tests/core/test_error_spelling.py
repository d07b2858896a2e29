"""An error speaks to whoever called: from Python it names Python arguments (`overwrite=True`), never a CLI flag; the
command line shows the same error with its own flags (`--overwrite`). One mechanism does it (core/errors.py: arguments
in backticks, `BertlensError.spelled`; cli/common.py: `flag_spelling` from the running command's parser)."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from bertlens import Adjustment, InputError, export_matrix, neighbors
from bertlens.cli import build_parser, main
from bertlens.cli.common import command_parser, flag_spelling
from bertlens.contextual.vectors import save_vectors, word_vectors
from bertlens.core.errors import ARGUMENT
from bertlens.plots.render import render
from bertlens.similarity.query import parse_queries
from bertlens.views.projection import ProjectionSettings, project

PACKAGE = Path(__file__).resolve().parents[2] / "bertlens"
FLAG = re.compile(r"(?<![\w-])--[a-z]")  # a CLI flag: --overwrite (not an em dash, not `a--b`)
COMMAND = re.compile(r"`(?:bertlens|ray) [^`]*`")  # a whole command quoted for the user to run: advice for both
CHECKS = {"whole_number", "real_number", "seed", "check_seed", "flag", "items"}  # they raise with the name given


def spelled_for(argv: list[str]) -> Callable[[str, str | None], str | None]:
    parser = build_parser()
    return flag_spelling(command_parser(parser, parser.parse_args(argv)))


def error_texts(tree: ast.AST) -> list[tuple[int, str]]:
    """The literal text of every error raised (or checked) in a module: each *Error(...) call's and each check's
    string arguments, and strings bound to a name holding a hint or message."""
    found: list[tuple[int, str]] = []

    def texts(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.JoinedStr):
            return ["".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)]
        return [t for child in ast.iter_child_nodes(node) for t in texts(child)]

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name.endswith("Error") or name in CHECKS:
                found += [
                    (node.lineno, t) for arg in [*node.args, *(k.value for k in node.keywords)] for t in texts(arg)
                ]
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and re.search("hint|message|HINT", t.id) for t in node.targets
        ):
            found += [(node.lineno, t) for t in texts(node.value)]
    return found


def test_no_library_error_names_a_cli_flag():
    """Every error text outside the CLI names Python arguments; a quoted `bertlens …` command is advice for both."""
    wrong = []
    for file in sorted(PACKAGE.rglob("*.py")):
        if "cli" in file.relative_to(PACKAGE).parts:
            continue
        for line, text in error_texts(ast.parse(file.read_text(encoding="utf-8"))):
            if FLAG.search(COMMAND.sub("", text)):
                wrong.append(f"{file.relative_to(PACKAGE.parent)}:{line}: {text}")
    assert not wrong, "library errors that name a CLI flag:\n" + "\n".join(wrong)


def test_the_scan_sees_errors_and_their_hints():
    tree = ast.parse(
        'raise InputError(f"{x} exists.", "pass --overwrite")\nhint = "--resume"\nseed(v, "seed (--seed)")'
    )
    assert sorted(text for _, text in error_texts(tree)) == [
        "--resume",
        "pass --overwrite",
        "seed (--seed)",
        "{} exists.",
    ]


@pytest.mark.parametrize(
    ("argv", "python", "flag"),
    [
        (["export", "--out", "x"], "`overwrite=True`", "--overwrite"),
        (["neighbors", "dog"], "`remove_top`", "--remove-top"),
        (["neighbors", "dog"], "`k=2`", "-k 2"),  # a value is given after the flag, quotes dropped
        (["plot", "tokens", "a", "b"], "`perplexity`", "--perplexity"),
        (["plot", "tokens", "a", "b"], "`seed=3`", "--seed 3"),
        (["senses", "--corpus", "c", "bank"], "`k='auto'`", "--k auto"),
        (["extract", "c", "--out", "x"], "`shard_texts=1000`", "--shard-texts 1000"),
        (["layers", "a text"], "`dims`", "--vectors"),  # another name: the flag the command has for it
        (["layers", "a text"], "`path='v.npy'`", "--out v.npy"),
        (["explain", "hi"], "`check=False`", "--no-check"),  # a switch that turns something off
        (["pretrain", "c", "--out", "x"], "`max_minutes=None`", "--no-time-limit"),  # a value with a flag of its own
        (["pretrain", "c", "--out", "x"], "`max_minutes=90`", "--minutes 90"),
        (["pretrain", "c", "--out", "x"], "`resume=True`", "--resume"),
    ],
)
def test_the_cli_spells_python_arguments_as_its_own_flags(argv, python, flag):
    error = InputError(f"Something about {python}.", f"Try {python} instead.")
    shown = error.spelled(spelled_for(argv))
    assert (shown.message, shown.hint) == (f"Something about {flag}.", f"Try {flag} instead.")
    plain = python.strip("`")  # Python shows the argument as it spells it, unmarked
    assert type(shown) is InputError and str(error) == f"Something about {plain}.\n  hint: Try {plain} instead."


def test_what_a_command_has_no_flag_for_stays_as_python_says_it():
    spell = spelled_for(["tokens", "hi"])
    error = InputError("`overwrite=True` and `no_such_argument` and `overwrite=False`; a `code` span.")
    assert error.spelled(spell).message == error.message  # tokens has no --overwrite
    spell = spelled_for(["export", "--out", "x"])
    assert InputError("`overwrite=False` stays").spelled(spell).message == "overwrite=False stays"  # no flag for it
    assert ARGUMENT.findall("`bertlens export --out DIR`") == []  # a quoted command is not an argument


def test_library_errors_name_python_arguments_and_the_cli_names_flags(tiny_dirs, tiny_models, tmp_path, capsys):
    """A representative set: the same fault met from Python and from the command line."""
    model, folder = tiny_models["bert"], str(tiny_dirs["bert"])
    export_matrix(model, tmp_path / "vectors", "word2vec")
    states = word_vectors(model, "the cat sat")
    save_vectors(states, tmp_path / "v.npy")
    render(project(np.eye(4, dtype=np.float32), ["a", "b", "c", "d"], "pca", 2), tmp_path / "p.svg")
    faults: list[tuple[Callable[[], object], str, list[str], str]] = [
        (lambda: export_matrix(model, tmp_path / "vectors", "word2vec"), "overwrite=True",
         ["export", "--format", "word2vec", "--out", str(tmp_path / "vectors")], "--overwrite"),
        (lambda: neighbors(model, "cat", 3, adjustment=Adjustment(remove_top=-1)), "remove_top must be 0 or more",
         ["neighbors", "cat", "--remove-top", "-1"], "--remove-top must be 0 or more"),
        (lambda: parse_queries(["cat"], ids=True), "id expects integers",
         ["neighbors", "cat", "--id"], "--id expects integers"),
        (lambda: save_vectors(states, tmp_path / "v.npy"), "overwrite=True",
         ["layers", "the cat sat", "--words", "--out", str(tmp_path / "v.npy")], "--overwrite"),
        (lambda: ProjectionSettings(perplexity=0), "perplexity must be positive",
         ["plot", "tokens", "cat", "dog", "sat", "--method", "tsne", "--perplexity", "0"], "--perplexity must be"),
        (lambda: render(project(np.eye(4, dtype=np.float32), list("abcd"), "pca", 2), tmp_path / "p.svg"),
         "overwrite=True", ["plot", "tokens", "cat", "dog", "--out", str(tmp_path / "p.svg")], "--overwrite"),
    ]  # fmt: skip
    for call, python, argv, flag in faults:
        with pytest.raises(InputError) as raised:
            call()
        said = f"{raised.value.message} {raised.value.hint}"
        assert python in said and not FLAG.search(COMMAND.sub("", said)), said
        assert main([*argv, "--model", folder, "--json"]) == 2
        captured = capsys.readouterr()
        error = json.loads(captured.out)
        assert flag in f"{error['message']} {error['hint']}" and "`" not in error["hint"], error
        assert flag in captured.err  # the same words on standard error, without a traceback
