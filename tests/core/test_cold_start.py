"""What the commands that answer in a fresh process import: the cold start is mostly imports, so they are guarded.

The commands that only read the embedding matrix (`tokens`, `vector`, `neighbors`, `similarity`, `analogy`) read the
tokenizer and the weights' rows with numpy: they import neither torch nor transformers. The commands that run the
model (`explain`'s check, `explain --compare`, `context`) run transformers' own modules, so they import torch and
transformers (and what transformers imports: scipy, parts of torch.compile's machinery), but not the plotting, table,
web or index stacks. One fresh interpreter per group runs its commands through the CLI and reports what it imported.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Top-level packages the model-running commands may not import (each costs a cold start a noticeable part of a second).
HEAVY = ("sklearn", "matplotlib", "pandas", "fastapi", "uvicorn", "pyarrow", "lancedb")
# What the matrix-reading commands may not import either: the model's own stack.
MODEL_STACK = ("torch", "transformers", "scipy")

SCRIPT = """
import contextlib, io, json, sys
from bertlens.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    codes = [main(argv) for argv in json.loads(sys.argv[1])]
print(json.dumps({"codes": codes, "modules": sorted(sys.modules), "output": out.getvalue()}))
"""

MATRIX_COMMANDS = [
    ["tokens", "hello, world!"],
    ["vector", "bread"],
    ["neighbors", "bread"],
    ["similarity", "bread", "banana"],
    ["analogy", "man", "king", "woman"],
]
MODEL_COMMANDS = [
    ["explain", "hello, world!"],
    ["explain", "I like eating bread", "--compare", "The banana bread was horrible"],
    ["context", "bread", "I like eating bread", "The banana bread was horrible"],
]


def fresh_run(commands: list[list[str]]) -> dict:
    """`commands` in one fresh interpreter: their exit codes, output and every module it imported."""
    argv = [sys.executable, "-c", SCRIPT, json.dumps(commands)]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=300)
    return json.loads(done.stdout.splitlines()[-1])


def top_level(run: dict) -> set[str]:
    return {name.split(".")[0] for name in run["modules"]}


@pytest.fixture(scope="module")
def matrix_run() -> dict:
    return fresh_run(MATRIX_COMMANDS)


@pytest.fixture(scope="module")
def model_run() -> dict:
    return fresh_run(MODEL_COMMANDS)


def test_matrix_commands_answer_in_a_fresh_process(matrix_run):
    assert matrix_run["codes"] == [0] * len(MATRIX_COMMANDS)
    assert "hello" in matrix_run["output"] and "banana" in matrix_run["output"]


def test_matrix_commands_import_neither_torch_nor_transformers(matrix_run):
    assert sorted(top_level(matrix_run).intersection(HEAVY + MODEL_STACK)) == []


@pytest.mark.slow  # a fresh interpreter imports torch and transformers and loads the default model
def test_model_commands_answer_in_a_fresh_process(model_run):
    assert model_run["codes"] == [0] * len(MODEL_COMMANDS)
    output = model_run["output"]
    assert "[CLS]" in output and "hello" in output  # explain's table
    assert "bread" in output and "unrelated words" in output  # context's table


@pytest.mark.slow  # the same fresh interpreter
def test_model_commands_run_transformers_and_leave_the_plotting_web_and_index_stacks_alone(model_run):
    loaded = top_level(model_run)
    assert {"torch", "transformers"} <= loaded  # the model's own code runs
    assert sorted(loaded.intersection(HEAVY)) == []


def test_public_names_imported_on_first_use_are_the_same_objects():
    """`bertlens` imports its public names on first use; a name shared with a subpackage (`similarity`) still means
    the function, also once the subpackage is imported."""
    import bertlens
    import bertlens.similarity.nearest
    from bertlens.embeddings.layer import explain
    from bertlens.similarity.nearest import similarity

    assert bertlens.similarity is similarity and bertlens.explain is explain
    assert callable(bertlens.similarity)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        bertlens.nothing  # noqa: B018 - the attribute access is the test
