"""The tutorial notebook (docs/tutorial.ipynb): it asks the questions in order, and run top to bottom in a fresh kernel
of this interpreter (nbclient) it answers them: token rows equal `get_input_embeddings()(ids)`, `explain` equals
`model.embeddings(ids)` with max_abs_diff 0.0, the position rows show as a picture, "dog"'s neighbours hold "dogs", a
corpus search by example finds "record" and its senses, the new word is one token with its planned row, a small BERT
trains from random rows (its category purity above step 0's, its report's pictures inline) and loads, and continued on
one article every one of its rows moved. Every result shows as HTML or SVG, every picture inline."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "tutorial.ipynb"
QUESTIONS = [
    "How do token ids become vectors?",
    "A token's row, without position or segment parts",
    "The embedding layer: the sum, then LayerNorm, checked",
    "Nearest tokens",
    '"bread" in two sentences, across layers',
    "Where else is a word used like this?",
    "New words and their first rows",
    "Train a tiny BERT",
]


def headings(notebook: nbformat.NotebookNode) -> list[str]:
    found = []
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            found += [m.group(1) for m in re.finditer(r"^## \d+\. (.+)$", cell.source, flags=re.M)]
    return found


def test_the_notebook_asks_the_questions_in_order():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    assert headings(notebook) == QUESTIONS
    stored = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in stored if o.output_type == "error"]  # outputs kept in the file show no failure
    assert not [o for o in stored if o.output_type == "stream" and o.name == "stderr"]


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernel spec for this very interpreter, found before any the user has installed; the kernel's own files
    (IPython profile, connection files) go to the test's folder."""
    spec = tmp_path / "jupyter" / "kernels" / "bertlens-tutorial"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "bertlens", "language": "python"})
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    return "bertlens-tutorial"


def text_of(output: nbformat.NotebookNode) -> str:
    if output.output_type == "stream":
        return output.text
    return "".join(output.get("data", {}).get("text/plain", ""))


@pytest.mark.slow
def test_the_notebook_runs_and_answers(kernel: str, tmp_path: Path):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    work = tmp_path / "run"
    work.mkdir()
    NotebookClient(notebook, kernel_name=kernel, timeout=300, resources={"metadata": {"path": str(work)}}).execute()
    code = [c for c in notebook.cells if c.cell_type == "code"]
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    printed = "".join(text_of(o) for o in outputs)
    for line in (
        "token rows equal get_input_embeddings()(ids): True",
        "explain equals model.embeddings(ids): True",
        "max_abs_diff 0.0",
        "(7, 6, 384) layer 0 equal: True",
        "every layer within 1e-5: True",
        "['[CLS]', 'take', 'aspirinex', '[SEP]']",
        "first row as planned: True",
        "steps 120 of 120 (finished)",
        "explain matches the model: True max_abs_diff 0.0",
    ):
        assert line in printed, line

    def shown(fragment: str) -> nbformat.NotebookNode:
        """The output of the cell whose source holds `fragment` (its last display)."""
        cell = next(c for c in code if fragment in c.source)
        return [o for o in cell.outputs if o.output_type in ("execute_result", "display_data")][-1]

    dog = shown('lens.neighbors("dog", 8)')
    assert "Neighbors('dog': dogs" in text_of(dog)
    assert re.search(r"<td>dogs</td>.*?bl-bar", dog.data["text/html"], flags=re.S)
    assert "bl-chip" in shown('tokens = lens.tokens("I like eating bread")').data["text/html"]
    explained = shown('x = lens.explain("I like eating bread")').data["text/html"]
    assert "matches the model" in explained and "BertEmbeddings" in explained
    assert "<td>queen</td>" in shown("Expression(").data["text/html"]
    for plotted in ('lens.plot(bread, "png"', 'lens.plot(positions, "png"', 'lens.plot(senses, "png"'):
        picture = shown(plotted)
        assert picture.data["image/png"] and "data:image/png;base64," in picture.data["text/html"], plotted
    assert "54 sentences, 1971 word occurrences indexed" in printed
    search = shown("hits = lens.search(")
    assert "5 hits for 'record'" in text_of(search) and "world endurance flight" in search.data["text/html"]
    assert "'record': 2 senses of 56 occurrences" in text_of(shown('senses = lens.senses("record"'))
    assert "<table" in shown("to_pandas()").data["text/html"]  # pandas' own rendering
    purity = re.search(r"category purity (\d\.\d\d) at step 0 \(chance (\d\.\d\d)\), (\d\.\d\d) at step 120", printed)
    assert purity and float(purity.group(3)) > float(purity.group(1)), "the rows leave their random start"
    for figure in ("groups_figure(", "purity_figure("):
        assert shown(figure).data["image/svg+xml"].lstrip().startswith("<svg"), figure
    moved = re.search(r"(\d+) of (\d+) rows moved \(tied decoder: True\)", printed)
    assert moved and moved.group(1) == moved.group(2) and int(moved.group(2)) > 1000
    drift = shown("drift_section(").data["text/html"]
    assert "Mean relative change of the rows, by their token" in drift and "Rows that moved most" in drift
    results = [o for o in outputs if o.output_type in ("execute_result", "display_data")]
    assert all("text/html" in o.data or "image/svg+xml" in o.data for o in results)  # every result renders
