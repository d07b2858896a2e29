"""What the README promises about behaviour, each held by a test. Most promises are held where their capability is
tested (PROMISES below names the test for each, and checks that it still exists); the rest are tested here: progress
is shown on a terminal's standard error and nowhere else, every result that holds vectors gives them to torch,
`explain`'s parts are named when one is not, and an export is written completely or not at all."""

from __future__ import annotations

import ast
import errno
import importlib
import io
import pkgutil
import random
import re
import sys
from dataclasses import fields, is_dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from tiny_runs import sentence

import bertlens
from bertlens import InputError, export_matrix
from bertlens.cli import main
from bertlens.contextual.distill import distill
from bertlens.contextual.states import hidden_states
from bertlens.contextual.vectors import sentence_vectors, word_vectors
from bertlens.core.results import Result
from bertlens.embeddings import export as export_module
from bertlens.embeddings.layer import explain
from bertlens.embeddings.layer_results import PARTS
from bertlens.embeddings.static import token_vector, vectors
from bertlens.extend.inputs import ExtendOptions
from bertlens.extend.plan import plan_extension
from bertlens.training import TokenizerConfig, train_tokenizer

ROOT = Path(__file__).resolve().parents[1]

# A promise of the README (its words, whitespace aside) -> the tests that hold it ("path/under/tests.py::test").
PROMISES = {
    "Every block below runs as written, top to bottom, in a new empty folder": [
        "test_readme.py::test_block_runs_as_written_after_the_ones_above_it",
    ],
    "add `--json` for exactly the data of the Python result's `to_dict()`": [
        "cli/test_commands.py::test_tokens_json_is_the_library_result",
        "cli/test_commands.py::test_explain_json",
        "web/test_api.py::test_tokens_equal_cli",
    ],
    "show progress on standard error; `--no-progress` turns it off, and it is off with `--json` or when standard "
    "error is not a terminal": [
        "test_readme_behaviour.py::test_pretrain_shows_progress_only_on_a_terminal",
        "test_readme_behaviour.py::test_long_commands_show_progress_only_on_a_terminal",
        "contextual/test_contextual_answers_explain.py::test_progress_on_standard_error_and_not_in_json",
    ],
    "A query that is not a single token says so: its vector is pooled from its pieces, and the answer names them": [
        "embeddings/test_static_answers_explain.py::test_a_word_that_is_not_a_token_is_said_to_be_pooled",
    ],
    'A query of several words (`"banana bread"`) is refused, never silently averaged': [
        "embeddings/test_static_answers_explain.py::test_several_words_are_refused_not_averaged",
        "embeddings/test_static_answers_explain.py::test_cli_vector_takes_several_queries_and_refuses_phrases",
    ],
    "0.0 (the check asks for equality)": ["test_docs.py::test_readme_python_example_runs"],
    "what computed the model's side": [
        "embeddings/test_embedding_layer.py::test_table_and_dict",
        "embeddings/test_embedding_layer.py::test_a_projection_is_the_models_own_module_and_the_check_names_what_ran",
    ],
    'also "word_row", "position_row", "sum"': [
        "test_readme_behaviour.py::test_explain_matrix_gives_every_part_by_name"
    ],
    "`.as_torch()` a tensor where it holds vectors": [
        "test_readme_behaviour.py::test_every_result_that_holds_vectors_has_as_torch",
        "test_readme_behaviour.py::test_as_torch_is_the_result_s_own_vectors",
        "core/test_notebook_display.py::test_as_torch_equals_the_arrays_and_transformers",
    ],
    "`bertlens COMMAND --help` describes every option; [docs/commands.md](docs/commands.md) lists every command": [
        "test_docs.py::test_every_command_is_documented",
    ],
    "each calls one library function and passes every argument on (`help(Lens.search)` names it)": [
        "test_docs.py::test_every_public_name_and_lens_method_has_a_docstring_with_an_example",
        "test_lens.py::test_every_lens_method_names_the_function_it_calls",
        "test_lens.py::test_a_method_passes_every_argument_on_and_refuses_what_the_function_refuses",
    ],
    "In Jupyter every result shows as HTML; `.to_pandas()` gives a DataFrame where a result is a table": [
        "core/test_notebook_display.py::test_generic_html_is_the_text_table_cell_by_cell",
        "core/test_notebook_display.py::test_to_pandas_holds_the_raw_values",
    ],
    "`demo-bert/` is then a Hugging Face model with its masked-LM head": [
        "training/test_training.py::test_saved_model_loads_in_transformers_and_bertlens",
    ],
    "--open opens it (or says it could not)": [
        "web/test_views.py::test_serve_open_says_when_no_browser_opened_and_prints_the_url",
    ],
    "answers only its own host names and never other sites' pages": [
        "web/test_security.py::test_a_real_server_on_any_loopback_spelling_refuses_a_foreign_host",
        "web/test_security.py::test_requests_from_another_site_are_refused_before_any_work",
    ],
}


def squeezed(text: str) -> str:
    return " ".join(text.split())


def test_every_promise_is_in_the_readme_and_its_tests_exist():
    readme = squeezed((ROOT / "README.md").read_text(encoding="utf-8"))
    for promise, tests in PROMISES.items():
        assert squeezed(promise) in readme, f"the README no longer says: {promise!r} (update PROMISES)"
        for test in tests:
            file, name = test.split("::")
            source = (ROOT / "tests" / file).read_text(encoding="utf-8")
            assert name in {n.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)}, test


# --- progress: on a terminal's standard error, and nowhere else -------------------------------------------------------


class Terminal(io.StringIO):
    """Standard error as a terminal shows it (what a person sees), to tell a shown bar from none."""

    def isatty(self) -> bool:
        return True


def shows_progress(err: str) -> bool:
    """A bar (tqdm) or a ticking clock rewrites its line with a carriage return; nothing else bertlens says does."""
    return "\r" in err


def run(argv: list[str], stderr: io.StringIO, monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as patched:
        patched.setattr(sys, "stderr", stderr)
        code = main(argv)
    assert code == 0, stderr.getvalue()
    return stderr.getvalue()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = random.Random(3)
    file = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    file.write_text("\n".join(" ".join(sentence(rng) for _ in range(3)) for _ in range(40)) + "\n", encoding="utf-8")
    return file


def test_pretrain_shows_progress_only_on_a_terminal(corpus, tmp_path, monkeypatch, capsys):
    """With standard error a pipe (here: not a terminal), no --no-progress and no --json, pretrain writes no bar."""
    tokenizer = tmp_path / "tok"
    train_tokenizer(corpus, tokenizer, TokenizerConfig(vocab_size=120))
    shape = ["--hidden-size", "32", "--heads", "2", "--intermediate-size", "64", "--num-layers", "1", "--max-positions"]
    shape += ["64", "--seq-length", "32", "--batch-size", "4", "--max-steps", "3", "--precision", "float32"]
    shape += ["--threads", "1", "--probe", "king", "--benchmarks", "rg65", "--no-report"]
    argv = ["pretrain", str(corpus), "--tokenizer", str(tokenizer), *shape]
    piped = run([*argv, "--out", str(tmp_path / "piped")], io.StringIO(), monkeypatch)
    assert not shows_progress(piped), piped
    shown = run([*argv, "--out", str(tmp_path / "terminal")], Terminal(), monkeypatch)
    assert shows_progress(shown) and "pretrain" in shown
    capsys.readouterr()


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "--format", "word2vec", "--out", "{tmp}/vectors"],
        ["distill", "{corpus}", "--words", "cat", "dog"],
        ["extract", "{corpus}", "--out", "{tmp}/shards"],
        ["context", "cat", "--corpus", "{corpus}"],
        ["extend-report", "--words", "catdog", "--texts", "{corpus}", "--init", "mean"],
    ],
    ids=lambda argv: argv[0],
)
def test_long_commands_show_progress_only_on_a_terminal(argv, tiny_dirs, tmp_path, monkeypatch, capsys):
    """Commands the README names as showing progress: a bar on a terminal, none in a pipe (and, for one, none with
    --no-progress or --json on a terminal). The choice is one function for every command (cli.common.Call.progress)."""
    corpus = tmp_path / "texts.txt"
    corpus.write_text("the cat sat on the mat\na dog ran to the cat\nthe cat and the dog\n" * 4, encoding="utf-8")
    model = ["--model", str(tiny_dirs["bert"])]

    def filled(run_name: str) -> list[str]:
        folder = tmp_path / run_name
        folder.mkdir()
        return [a.format(tmp=folder, corpus=corpus) for a in argv] + model

    assert shows_progress(run(filled("terminal"), Terminal(), monkeypatch))
    quiet = [("piped", io.StringIO(), [])]
    if argv[0] == "export":
        quiet += [("no-progress", Terminal(), ["--no-progress"]), ("json", Terminal(), ["--json"])]
    for name, stderr, extra in quiet:
        said = run(filled(name) + extra, stderr, monkeypatch)
        assert not shows_progress(said), (name, said)
    capsys.readouterr()


# --- as_torch where a result holds vectors ----------------------------------------------------------------------------

VECTOR_FIELDS = {"vector", "vectors", "states", "rows"}  # the names results give the vectors they hold


def result_types() -> set[type]:
    for module in pkgutil.walk_packages(bertlens.__path__, "bertlens."):
        if not re.search(r"\.(web|cli|__main__)\b|ray_engine", module.name):
            importlib.import_module(module.name)
    found, todo = set(), [Result]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("bertlens.") and sub not in found:
                found.add(sub)
                todo.append(sub)
    return found


def test_every_result_that_holds_vectors_has_as_torch():
    """A result with a field of vectors, or of results that have as_torch, has as_torch itself."""
    lacking = []
    types = result_types()
    with_torch = {t.__name__ for t in types if hasattr(t, "as_torch")}
    for kind in types:
        if not is_dataclass(kind) or hasattr(kind, "as_torch"):
            continue
        for field in fields(kind):
            annotation = str(field.type)
            holds_vectors = field.name in VECTOR_FIELDS and "ndarray" in annotation
            holds_results = field.name == "results" and any(re.search(rf"\b{n}\b", annotation) for n in with_torch)
            if holds_vectors or holds_results:
                lacking.append(f"{kind.__module__}.{kind.__name__}.{field.name}")
    assert not lacking, f"results that hold vectors but have no as_torch(): {lacking}"
    assert {"StaticVectors", "DistilledVectors", "Extension", "EmbeddingLayerExplanation"} <= with_torch


def test_as_torch_is_the_result_s_own_vectors(tiny_models):
    model = tiny_models["bert"]
    texts = ["the cat sat", "a dog ran"]
    several = vectors(model, ["cat", "dog", 7])
    states = hidden_states(model, texts)
    held = [
        (several, np.stack([r.vector for r in several])),
        (token_vector(model, "cat"), token_vector(model, "cat").vector),
        (states[0], states[0].states),
        (word_vectors(model, "the cat sat"), word_vectors(model, "the cat sat").vectors),
        (sentence_vectors(model, texts), sentence_vectors(model, texts).vectors),
        (distill(model, ["cat", "dog"], texts * 2), distill(model, ["cat", "dog"], texts * 2).vectors),
        (plan_extension(model, ["catdog"], ExtendOptions(strategy="mean")), None),
        (explain(model, "the cat sat", check=False), explain(model, "the cat sat", check=False).matrix("output")),
    ]
    for result, expected in held:
        tensor = result.as_torch()
        expected = result.rows if expected is None else expected
        assert isinstance(tensor, torch.Tensor) and tensor.dtype == torch.float32, type(result).__name__
        assert np.array_equal(tensor.numpy(), expected), type(result).__name__
    assert [tuple(t.shape) for t in states.as_torch()] == [s.states.shape for s in states]
    assert torch.equal(several.as_torch()[1], several[1].as_torch())  # row i is the i-th query's vector


# --- explain's parts -------------------------------------------------------------------------------------------------


def test_explain_matrix_gives_every_part_by_name(tiny_models):
    """Every part a token has stacks into (tokens, size); another name is an error naming the parts there are."""
    x = explain(tiny_models["bert"], "the cat sat")
    tokens = len(x.tokens)
    for part in ("word_row", "position_row", "token_type_row", "sum", "layer_norm_output", "output", "model_output"):
        assert x.matrix(part).shape == (tokens, 32) and x.as_torch(part).shape == (tokens, 32), part
    for wrong in ("type_row", "outputs", ""):
        with pytest.raises(InputError) as refused:
            x.matrix(wrong)
        assert repr(wrong) in refused.value.message and all(repr(p) in refused.value.hint for p in PARTS)
    with pytest.raises(InputError, match="'projected'") as absent:  # BERT has no projection: said, not a crash
        x.matrix("projected")
    assert "'output'" in absent.value.hint
    with pytest.raises(InputError, match="check=False"):
        explain(tiny_models["bert"], "the cat sat", check=False).matrix("model_output")


# --- exports: written completely or not at all -----------------------------------------------------------------------


def test_an_export_that_fails_while_writing_leaves_nothing_and_keeps_an_earlier_one(tiny_models, tmp_path, monkeypatch):
    model = tiny_models["bert"]
    writer = export_module._WRITERS["word2vec"]

    def disk_full(folder, *args):  # the disk fills once the file is written, before the export is complete
        writer(folder, *args)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setitem(export_module._WRITERS, "word2vec", disk_full)
    with pytest.raises(InputError, match="No space left"):
        export_matrix(model, tmp_path / "new", "word2vec")
    assert not (tmp_path / "new").exists() and sorted(p.name for p in tmp_path.iterdir()) == []
    monkeypatch.setitem(export_module._WRITERS, "word2vec", writer)
    first = export_matrix(model, tmp_path / "kept", "word2vec")
    before = {f: Path(f).read_bytes() for f in first.files}
    monkeypatch.setitem(export_module._WRITERS, "word2vec", disk_full)
    with pytest.raises(InputError, match="No space left"):
        export_matrix(model, tmp_path / "kept", "word2vec", overwrite=True)
    assert {f: Path(f).read_bytes() for f in first.files} == before  # the earlier export, as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]  # no staging folder left beside it
