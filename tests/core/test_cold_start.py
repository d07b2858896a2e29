"""What the commands that answer in a fresh process import: the cold start is mostly imports, so they are guarded.

`explain` (and `explain --compare`) checks itself against the model's embedding layer and `context` runs the whole
model, both in PyTorch modules built from the model's tensors (core/encoder.py), so neither needs transformers, whose
import costs more than torch's. Nor do they need the plotting, table, statistics or web stacks. One fresh interpreter
runs the three commands through the CLI and reports what it imported.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Top-level packages none of the three commands may import (each costs a cold start a noticeable part of a second).
HEAVY = ("transformers", "sklearn", "scipy", "matplotlib", "pandas", "fastapi", "uvicorn", "pyarrow", "lancedb")
# Parts of torch that a plain `import torch` leaves out and that slow a start (torch.compile's machinery).
HEAVY_TORCH = ("torch._dynamo", "torch._inductor")

SCRIPT = """
import contextlib, io, json, sys
from bertlens.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    codes = [
        main(["explain", "hello, world!"]),
        main(["explain", "I like eating bread", "--compare", "The banana bread was horrible"]),
        main(["context", "bread", "I like eating bread", "The banana bread was horrible"]),
    ]
print(json.dumps({"codes": codes, "modules": sorted(sys.modules), "output": out.getvalue()}))
"""


@pytest.fixture(scope="module")
def fresh_run() -> dict:
    """The three commands in one fresh interpreter: their exit codes, output and every module it imported."""
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=300)
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow  # a fresh interpreter loads torch and the default model (the module's fixture)
def test_explain_compare_and_context_answer_in_a_fresh_process(fresh_run):
    assert fresh_run["codes"] == [0, 0, 0]
    output = fresh_run["output"]
    assert "[CLS]" in output and "hello" in output  # explain's table
    assert "bread" in output and "unrelated words" in output  # context's table


@pytest.mark.slow  # the same fresh interpreter
def test_they_import_neither_transformers_nor_the_plotting_or_web_stacks(fresh_run):
    loaded = {name.split(".")[0] for name in fresh_run["modules"]}
    assert "torch" in loaded  # the check and the forward pass run in PyTorch
    assert sorted(loaded.intersection(HEAVY)) == []


@pytest.mark.slow  # the same fresh interpreter
def test_they_leave_torch_compile_machinery_alone(fresh_run):
    assert [name for name in fresh_run["modules"] if name.startswith(HEAVY_TORCH)] == []


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
