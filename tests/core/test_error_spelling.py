"""An error speaks to whoever called: from Python it names Python arguments (`overwrite=True`), never a CLI flag; the
command line shows the same error with its own flags (`--overwrite`). One mechanism does it (core/errors.py: each
error carries the arguments it names as data, `{name}` placeholders in its text; `BertlensError.spelled`;
cli/common.py: `flag_spelling` from the running click command)."""

from __future__ import annotations

import ast
import importlib
import json
import re
from pathlib import Path

import click
import pytest

from bertlens import InputError, export_matrix
from bertlens.cli import COMMANDS, main
from bertlens.cli.common import flag_spelling
from bertlens.core.checks import seed, whole_number
from bertlens.core.errors import NAME

PACKAGE = Path(__file__).resolve().parents[2] / "bertlens"
FLAG = re.compile(r"(?<![\w-])--[a-z]")  # a CLI flag: --overwrite (not an em dash, not `a--b`)
COMMAND = re.compile(r"`(?:bertlens|ray) [^`]*`")  # a whole command quoted for the user to run: advice for both
MARKED = re.compile(r"`[A-Za-z_]\w*(?:=[^`]+)?`")  # an argument in backticks: no longer how an error names one
PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*(?:=[^{}]+)?)\}")  # where an argument of the error's `arguments` is said
CHECKS = {"whole_number", "real_number", "seed", "check_seed", "flag", "items"}  # they raise with the name given


def command_of(name: str) -> click.Command:
    """The click command `bertlens NAME` runs."""
    command: click.Command = getattr(importlib.import_module(f"bertlens.cli.{COMMANDS[name]}"), name.replace("-", "_"))
    return command


def texts(node: ast.AST) -> list[str]:
    """The literal text in `node`: a string's, an f-string's with each value as {} (its `{{name}}` as `{name}`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return ["".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)]
    return [t for child in ast.iter_child_nodes(node) for t in texts(child)]


def error_calls(tree: ast.AST) -> list[ast.Call]:
    """Every *Error(...) call and every call of a check (which raises with the name given)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name.endswith("Error") or name in CHECKS:
                found.append(node)
    return found


def error_texts(tree: ast.AST) -> list[tuple[int, str]]:
    """The literal text of every error raised (or checked) in a module: each *Error(...) call's and each check's
    string arguments, and strings bound to a name holding a hint or message."""
    found = [
        (call.lineno, t)
        for call in error_calls(tree)
        for arg in [*call.args, *(k.value for k in call.keywords if k.arg != "arguments")]
        for t in texts(arg)
    ]
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and re.search("hint|message|HINT", t.id) for t in node.targets
        ):
            found += [(node.lineno, t) for t in texts(node.value)]
    return found


def library_modules() -> list[tuple[Path, ast.Module]]:
    return [
        (file, ast.parse(file.read_text(encoding="utf-8")))
        for file in sorted(PACKAGE.rglob("*.py"))
        if "cli" not in file.relative_to(PACKAGE).parts
    ]


def placeholder_mismatches(tree: ast.AST) -> list[tuple[int, str]]:
    """Each error call whose placeholders and `arguments` disagree, where both are written out in the call: a
    placeholder without its argument, an argument its texts never say, or placeholders with no `arguments` at all."""
    wrong = []
    for call in error_calls(tree):
        given = next((k.value for k in call.keywords if k.arg == "arguments"), None)
        parts = [*call.args, *(k.value for k in call.keywords if k.arg != "arguments")]
        said = {name for part in parts for text in texts(part) for name in PLACEHOLDER.findall(text)}
        literal = all(isinstance(part, (ast.Constant, ast.JoinedStr)) for part in parts)
        if isinstance(given, ast.Dict) and all(isinstance(k, ast.Constant) for k in given.keys):
            names = {k.value for k in given.keys if isinstance(k, ast.Constant)}
            if not said <= names or (literal and not names <= said):
                wrong.append((call.lineno, f"says {sorted(said)}, arguments {sorted(names)}"))
        elif given is None and said:
            wrong.append((call.lineno, f"says {sorted(said)} without arguments"))
    return wrong


def test_no_library_error_names_a_cli_flag():
    """Every error text outside the CLI names Python arguments; a quoted `bertlens …` command is advice for both."""
    wrong = []
    for file, tree in library_modules():
        for line, text in error_texts(tree):
            if FLAG.search(COMMAND.sub("", text)):
                wrong.append(f"{file.relative_to(PACKAGE.parent)}:{line}: {text}")
    assert not wrong, "library errors that name a CLI flag:\n" + "\n".join(wrong)


def test_no_library_error_marks_an_argument_in_backticks():
    """An argument is a placeholder with its value in `arguments`, never `name` in the text (a command stays quoted)."""
    wrong = []
    for file, tree in library_modules():
        for line, text in error_texts(tree):
            if MARKED.search(COMMAND.sub("", text)):
                wrong.append(f"{file.relative_to(PACKAGE.parent)}:{line}: {text}")
    assert not wrong, "library errors that mark an argument in backticks:\n" + "\n".join(wrong)


def test_every_placeholder_has_its_argument_and_every_argument_its_placeholder():
    wrong = [
        f"{file.relative_to(PACKAGE.parent)}:{line}: {why}"
        for file, tree in library_modules()
        for line, why in placeholder_mismatches(tree)
    ]
    assert not wrong, "library errors whose placeholders and arguments disagree:\n" + "\n".join(wrong)


def test_the_scans_see_errors_their_hints_and_their_arguments():
    tree = ast.parse(
        'raise InputError(f"{x} exists.", "pass --overwrite")\nhint = "--resume"\nseed(v, "seed (--seed)")\n'
        'InputError(f"{{k}} of {n}", "give `k`", arguments={"k": NAME})\nInputError("{seed}", arguments={"k": 1})\n'
        'InputError("{add}")\nInputError(HINT, arguments={"add": True})\nInputError("{k}", arguments=KNOWN)'
    )
    assert sorted(text for _, text in error_texts(tree)) == [
        "--resume",
        "give `k`",
        "pass --overwrite",
        "seed (--seed)",
        "{add}",
        "{k}",
        "{k} of {}",
        "{seed}",
        "{} exists.",
    ]
    assert placeholder_mismatches(tree) == [
        (5, "says ['seed'], arguments ['k']"),
        (6, "says ['add'] without arguments"),
    ]


@pytest.mark.parametrize(
    ("command", "name", "value", "python", "flag"),
    [
        ("export", "overwrite", True, "overwrite=True", "--overwrite"),
        ("pretrain", "seed", NAME, "seed", "--seed"),
        ("pretrain", "seed", 3, "seed=3", "--seed 3"),  # a value is given after the flag, quotes dropped
        ("pretrain", "precision", "float32", "precision='float32'", "--precision float32"),
        ("pretrain", "resume", True, "resume=True", "--resume"),
        ("pretrain", "max_minutes", None, "max_minutes=None", "--no-time-limit"),  # a value with a flag of its own
        ("serve", "port", 0, "port=0", "--port 0"),
        ("explain", "check", False, "check=False", "--no-check"),  # a switch that turns something off
        ("tokens", "special", False, "special=False", "--no-special"),
    ],
)
def test_the_cli_spells_python_arguments_as_its_own_flags(command, name, value, python, flag):
    error = InputError(f"Something about {{{name}}}.", f"Try {{{name}}} instead.", arguments={name: value})
    shown = error.spelled(flag_spelling(command_of(command)))
    assert (shown.message, shown.hint) == (f"Something about {flag}.", f"Try {flag} instead.")
    assert type(shown) is InputError and str(error) == f"Something about {python}.\n  hint: Try {python} instead."
    assert error.to_dict()["hint"] == f"Try {python} instead."  # the web API shows Python's spelling


def test_what_a_command_has_no_flag_for_stays_as_python_says_it():
    error = InputError("{overwrite} and {no_such_argument}.", arguments={"overwrite": True, "no_such_argument": NAME})
    assert error.spelled(flag_spelling(command_of("tokens"))).message == "overwrite=True and no_such_argument."
    export = flag_spelling(command_of("export"))
    assert InputError("{overwrite} stays", arguments={"overwrite": False}).spelled(export).message == (
        "overwrite=False stays"  # a switch's other value has no flag
    )
    quoted = InputError("Run `bertlens export --out DIR`.", "Pass {overwrite}.", arguments={"overwrite": True})
    assert quoted.spelled(export).message == "Run `bertlens export --out DIR`."  # a quoted command stays as it is


def test_the_checks_name_a_python_argument_and_the_cli_its_flag():
    pretrain = flag_spelling(command_of("pretrain"))
    with pytest.raises(InputError) as raised:
        seed(-1)
    assert raised.value.arguments == {"seed": NAME}
    assert raised.value.message == "seed must be at least 0, got -1."
    assert raised.value.spelled(pretrain).message == "--seed must be at least 0, got -1."
    with pytest.raises(InputError) as raised:
        whole_number(0, "k (the number of senses)", minimum=1)
    assert raised.value.hint == "Give k (the number of senses) of 1 or more."
    with pytest.raises(InputError) as raised:
        whole_number(1.5, "text id")  # not an argument: said as it is, with nothing to spell
    assert raised.value.arguments == {} and raised.value.message == "text id must be a whole number, got 1.5."


def test_library_errors_name_python_arguments_and_the_cli_names_flags(tiny_dirs, tiny_models, tmp_path, capsys):
    """The same fault met from Python and from the command line: an export over an earlier one."""
    model, folder = tiny_models["bert"], str(tiny_dirs["bert"])
    export_matrix(model, tmp_path / "vectors", "word2vec")
    with pytest.raises(InputError) as raised:
        export_matrix(model, tmp_path / "vectors", "word2vec")
    said = f"{raised.value.message} {raised.value.hint}"
    assert raised.value.hint == "Choose another directory, or pass overwrite=True."
    assert not FLAG.search(COMMAND.sub("", said)), said
    argv = ["export", "--format", "word2vec", "--out", str(tmp_path / "vectors"), "--model", folder]
    assert main([*argv, "--json"]) == 2
    captured = capsys.readouterr()
    error = json.loads(captured.out)
    assert error["hint"] == "Choose another directory, or pass --overwrite.", error
    assert error["message"] == raised.value.message
    assert "--overwrite" in captured.err and "Traceback" not in captured.err  # the same words, without a traceback
    assert main(argv) == 2
    assert "pass --overwrite." in capsys.readouterr().err
