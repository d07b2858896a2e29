"""Each bad input fed as a user would: one clear error with a hint, exit 2, the error as JSON
with --json, and nothing written. Library calls with wrong types raise bertlens' own InputError."""

from __future__ import annotations

import ast
import importlib
import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

import bertlens
from bertlens import InputError, Lens
from bertlens.cli import main
from bertlens.contextual import RunOptions, hidden_states, sentence_vectors, word_vectors
from bertlens.contextual.context import compare_contexts
from bertlens.contextual.contextuality import measure_contextuality
from bertlens.contextual.distill import distill
from bertlens.core.corpus import corpus_files, iter_texts
from bertlens.core.errors import BertlensError
from bertlens.embeddings.token_classes import TokenFilter
from bertlens.extend import ExtendOptions, plan_extension, read_rows, read_words
from bertlens.extend.report import ReportOptions, compare_strategies
from bertlens.similarity.analogy import analogy
from bertlens.similarity.evaluate import evaluate_pairs
from bertlens.similarity.index import Adjustment
from bertlens.similarity.nearest import Expression, neighbors, neighbors_many, similarity
from bertlens.views.projection import ProjectionSettings, project
from bertlens.views.tokens import project_contextual, project_tokens
from bertlens.views.trajectory import trajectory

CORPUS = "The dog chased the cat.\nShe went to the bank for bread.\nThe bank of the river.\n"


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder with a small corpus in it (corpus.txt)."""
    (tmp_path / "corpus.txt").write_text(CORPUS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def refused(capsys, argv: list[str], message: str) -> dict:
    """Run argv with --json: exit 2, the JSON error on stdout with `message` and a hint, the same on stderr."""
    assert main([*argv, "--json"]) == 2
    captured = capsys.readouterr()
    error = json.loads(captured.out)
    assert message in error["message"], error
    assert error["hint"].strip(), error
    assert "Traceback" not in captured.err and "unexpected error" not in captured.err
    assert captured.err.startswith("bertlens: error: ") and "hint: " in captured.err
    return error


# --- 1. k bounded by the candidates -----------------------------------------------------------------------------------


def test_huge_k_returns_every_candidate_and_keeps_the_k_asked(capsys, default_model):
    assert main(["analogy", "man", "king", "woman", "-k", "10000000000", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["k"] == 10_000_000_000
    assert len(data["answers"]) == data["candidates"] - 3  # every whole word but man, king, woman
    lens = Lens(default_model)
    found = lens.neighbors("dog", 10**12)
    assert found.k == 10**12 and len(found.neighbors) == int(lens.index.allowed(TokenFilter()).sum()) - 1
    assert "Only " in found.to_table()


@pytest.mark.parametrize("k", [0, -1, True, 2.5, "3"])
def test_k_must_be_a_positive_whole_number(default_model, k):
    for call in (
        lambda: neighbors(default_model, "dog", k),
        lambda: neighbors_many(default_model, ["dog"], k),
        lambda: analogy(default_model, "man", "king", "woman", k=k),
    ):
        with pytest.raises(InputError, match="k must be a positive whole number") as caught:
            call()
        assert caught.value.hint


def test_cli_k_zero(capsys, cwd):
    refused(capsys, ["neighbors", "dog", "-k", "0"], "k must be a positive whole number, got 0")
    refused(capsys, ["analogy", "man", "king", "woman", "-k", "-1"], "k must be a positive whole number, got -1")
    assert _files(cwd) == {"corpus.txt"}


# --- 2. extend: words are never paths; seeds in range; bounded, regular word and rows files ---------------------------


def test_a_huge_word_is_not_tried_as_a_path(capsys, cwd):
    error = refused(capsys, ["extend", "--words", "a" * 100_000, "--out", "new"], "100,000 characters")
    assert "File name too long" not in error["message"]
    refused(capsys, ["extend", "--words", "words.txt", "--out", "new"], "looks like a file name")
    (cwd / "words.txt").write_text("aspirinex\n", encoding="utf-8")
    error = refused(capsys, ["extend", "--words", "words.txt", "--out", "new"], "looks like a file name")
    assert "--words-file words.txt" in error["hint"]  # an existing file is still not read from --words
    assert _files(cwd) == {"corpus.txt", "words.txt"}


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_extend_seed_out_of_range(capsys, cwd, seed):
    argv = ["extend", "--words", "aspirinex", "--init", "random", "--seed", seed, "--out", "new"]
    refused(capsys, argv, f"seed must be {'at least 0' if seed == '-1' else 'at most 4,294,967,295'}")
    assert _files(cwd) == {"corpus.txt"}


def test_extend_options_checked_in_the_library(default_model):
    for options, message in (
        (ExtendOptions(strategy="random", seed=-1), "seed must be at least 0"),
        (ExtendOptions(strategy="random", seed=True), "seed must be a whole number"),
        (ExtendOptions(strategy="neighbors", temperature=float("nan")), "temperature must be a finite number"),
        (ExtendOptions(strategy="neighbors", k=0), "k must be at least 1"),
    ):
        with pytest.raises(InputError, match=message):
            plan_extension(default_model, ["aspirinex"], options)


@pytest.mark.parametrize("option", ["--words-file", "--rows"])
@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null", "fifo", "folder"])
def test_words_and_rows_files_must_be_regular_files(capsys, cwd, option, path):
    os.mkfifo(cwd / "fifo")  # never opened: the type is checked first, so nothing blocks
    (cwd / "folder").mkdir()
    argv = ["extend", "--words", "aspirinex", option, path, "--out", "new"]
    if option == "--rows":
        argv += ["--init", "rows"]
    kind = "a folder" if path == "folder" else "not a regular file"
    refused(capsys, argv, kind)
    assert _files(cwd) == {"corpus.txt", "fifo", "folder"}


def test_words_and_rows_files_undecodable_or_too_large(cwd):
    (cwd / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    for read in (read_words, read_rows):
        with pytest.raises(InputError, match="not valid UTF-8") as caught:
            read(cwd / "latin1.txt")
        assert "UTF-8" in caught.value.hint
    with open(cwd / "big.txt", "wb") as handle:  # sparse: 20 MB of size, no data written
        handle.truncate(20 << 20)
    with pytest.raises(InputError, match="larger than"):
        read_words(cwd / "big.txt")


# --- 3. corpora: unreadable, devices, FIFOs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["distill", "CORPUS", "--words", "bread"],
        ["extract", "CORPUS", "--out", "shards"],
        ["train-tokenizer", "CORPUS", "--out", "tok"],
        ["context", "bank", "--corpus", "CORPUS"],
        ["plot", "contextuality", "CORPUS"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_corpus_that_is_not_a_file_or_folder(capsys, cwd, argv):
    os.mkfifo(cwd / "fifo")
    for corpus, message in (
        ("/dev/null", "/dev/null is not a regular file or folder"),
        ("fifo", "fifo is not a regular file or folder"),
        ("corpus.txt/below", "Cannot read corpus.txt/below: Not a directory"),
        ("missing.txt", "No such file or folder: missing.txt"),
    ):
        refused(capsys, [corpus if a == "CORPUS" else a for a in argv], message)
    assert _files(cwd) == {"corpus.txt", "fifo"}


def test_corpus_errors_in_the_library(cwd):
    os.mkfifo(cwd / "fifo")
    (cwd / "folder").mkdir()
    (cwd / "folder" / "a.txt").write_text("one text\n", encoding="utf-8")
    os.mkfifo(cwd / "folder" / "pipe")  # a FIFO inside a corpus folder is skipped, never opened
    assert [p.name for p in corpus_files(cwd / "folder")] == ["a.txt"]
    assert [t.text for t in iter_texts(cwd / "folder")] == ["one text"]
    for path in ("", "   ", "fifo", "/dev/zero"):
        with pytest.raises(InputError) as caught:
            corpus_files(path)
        assert caught.value.hint
    with pytest.raises(InputError, match="must be a path"):
        corpus_files(None)  # type: ignore[arg-type]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file: permissions cannot refuse it")
def test_unreadable_corpus_file_and_folder(capsys, cwd):
    locked = cwd / "locked.txt"
    locked.write_text(CORPUS, encoding="utf-8")
    locked.chmod(0)
    folder = cwd / "closed"
    folder.mkdir()
    (folder / "a.txt").write_text(CORPUS, encoding="utf-8")
    folder.chmod(stat.S_IWUSR)
    try:
        refused(capsys, ["distill", "locked.txt", "--words", "bread"], "Cannot read locked.txt")
        refused(capsys, ["train-tokenizer", "closed", "--out", "tok"], "Cannot read the folder closed")
    finally:
        folder.chmod(0o755)
        locked.chmod(0o644)


# --- 4. --json prints an error object, whatever the error -------------------------------------------------------------


def test_json_for_an_unexpected_error(capsys, monkeypatch):
    def broken(model):
        raise RuntimeError("boom")

    monkeypatch.setattr(
        importlib.import_module("bertlens.embeddings.info"), "info", broken
    )  # a bug stands in for main to report
    assert main(["info", "--json"]) == 70
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {
        "error": "InternalError",
        "message": "RuntimeError: boom",
        "hint": "This is a bug in bertlens: please report it with the command line that caused it.",
    }
    assert "unexpected error" in captured.err and "Traceback" not in captured.err


def test_json_for_a_usage_error(capsys):
    assert main(["neighbors", "dog", "-k", "many", "--json"]) == 2
    captured = capsys.readouterr()
    error = json.loads(captured.out)
    assert error["error"] == "UsageError" and "'many' is not a valid integer" in error["message"] and error["hint"]
    assert "Usage:" in captured.err


# --- 5. adjustments: how much may be removed, and of what type --------------------------------------------------------


def test_remove_top_bounded_by_the_dimensions(capsys, default_model, cwd):
    refused(capsys, ["neighbors", "dog", "--remove-top", "100000"], "384 dimensions")
    refused(capsys, ["similarity", "dog", "cat", "--remove-top", "193"], "more than half of them (192)")
    assert neighbors(default_model, "dog", 3, adjustment=Adjustment(remove_top=192)).adjustment.endswith("removed")
    assert _files(cwd) == {"corpus.txt"}


def test_adjustment_types(default_model):
    with pytest.raises(InputError, match="remove_top must be a whole number, got '3'"):
        Adjustment(remove_top="3")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="must be a whole number"):
        Adjustment(remove_top=True)
    with pytest.raises(InputError, match="center must be True or False"):
        Adjustment(center="yes")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="adjustment must be an Adjustment, got 'center'"):
        Lens(default_model).similarity("dog", "cat", adjustment="center")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="adjustment must be an Adjustment"):
        similarity(default_model, "dog", "cat", adjustment=None)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="filters must be a TokenFilter"):
        neighbors(default_model, "dog", filters="words")  # type: ignore[arg-type]


# --- 6. no option is silently ignored ---------------------------------------------------------------------------------


IGNORED = [
    (["layers", "hi", "--layers", "7"], "--layers applies only with --words, --sentence or --vectors"),
    (["layers", "hi", "--combine", "sum"], "--combine applies only with --words or --sentence"),
    (["layers", "hi", "--sentence", "cls", "--pool", "max"], "--pool applies only with --words"),
    (["layers", "hi", "--words", "--sentence", "cls"], "cannot be used together"),
    (["context", "bank", "a bank.", "the bank.", "--max-texts", "5"], "--max-texts applies only with --corpus"),
    (["context", "bank", "--corpus", "corpus.txt", "--pool", "max"], "--pool applies only with SENTENCEs"),
    (["distill", "corpus.txt", "--words", "bread", "--overwrite"], "--overwrite applies only with --out"),
    (["vector", "3899", "--id", "--pool", "first"], "--pool applies only to words"),
    (["evaluate", "--list", "mc30"], "--list takes no BENCHMARKs"),
    (["evaluate", "mc30", "--method", "3cosmul"], "--method applies only to analogy benchmarks"),
    (["plot", "tokens", "king", "queen", "man", "--title", "x"], "--title applies only with --out"),
    (["plot", "tokens", "king", "queen", "man", "--perplexity", "5"], "--perplexity applies only with --method tsne"),
    (["plot", "tokens", "king", "queen", "man", "--seed", "1"], "--seed applies only with --method tsne or umap"),
    (["plot", "tokens", "--count", "5", "--ids"], "--ids applies only with TOKENs"),
    (["plot", "contextual", "a dog.", "a cat.", "--max-texts", "5"], "--max-texts applies only with --corpus"),
    (["plot", "contextual", "a dog.", "a cat.", "--special"], "--special applies only with --level token"),
    (["extend", "--words", "aspirinex", "--seed", "3", "--out", "new"], "--seed applies only to --init random"),
    (["extend", "--words", "aspirinex", "--temperature", "0.5", "--out", "new"], "--temperature applies only to"),
    (["extend-report", "--words", "aspirinex", "--max-texts", "3"], "--max-texts applies only with --texts"),
    (["neighbors", "3899", "--id", "--pool", "first"], "--pool applies only to words"),
    (["extract", "corpus.txt", "--out", "shards", "--level", "token", "--pool", "max"], "--pool applies only with"),
    (["extend", "default", "--model", "default", "--words", "aspirinex", "--out", "new"], "Give the model once"),
]


@pytest.mark.parametrize(("argv", "message"), IGNORED, ids=[" ".join(a) for a, _ in IGNORED])
def test_an_option_that_would_be_ignored_is_refused(capsys, cwd, argv, message):
    refused(capsys, argv, message)
    assert _files(cwd) == {"corpus.txt"}


def test_layers_out_of_range(capsys, default_model, cwd):
    refused(capsys, ["layers", "hi", "--words", "--layers", "7"], "Layer 7 does not exist")
    refused(capsys, ["layers", "hi", "--sentence", "mean", "--layers", "-8"], "Layer -8 does not exist")
    assert word_vectors(default_model, "hi", layers=[0, -1]).layers == (0, -1)


# --- 7. library calls with wrong types --------------------------------------------------------------------------------


def test_wrong_types_raise_input_error(default_model, tmp_path):
    lens = Lens(default_model)
    calls = [
        (lambda: hidden_states(default_model, None), "texts must be a string or a list of strings, got NoneType"),
        (lambda: hidden_states(default_model, 5), "got int"),
        (lambda: sentence_vectors(default_model, None), "got NoneType"),
        (lambda: sentence_vectors(default_model, "hi", special="no"), "special must be True or False"),
        (lambda: word_vectors(default_model, "hi", layers="1"), "layers must be a non-empty list"),
        (lambda: lens.extend(None, tmp_path / "new"), "words must be a list of words"),
        (lambda: neighbors_many(default_model, "dog"), "queries must be a list of queries, got str"),
        (lambda: compare_contexts(default_model, "bank", "a bank. the bank."), "sentences must be a list"),
        (lambda: measure_contextuality(default_model, "some text"), "texts must be a list of texts"),
        (lambda: distill(default_model, None, ["a text"]), "words must be a list of words"),
        (lambda: distill(default_model, ["bread"], None), "texts must be an iterable"),
        (lambda: RunOptions(batch_tokens=0), "batch_tokens must be at least 1"),
        (lambda: RunOptions(device="gpu"), "Unknown device"),
        (lambda: ReportOptions(texts="abc").__class__ and compare_strategies(
            default_model, ["aspirinex"], ["mean"], options=ReportOptions(texts="abc")), "texts must be a tuple"),
        (lambda: ProjectionSettings(perplexity=float("nan")), "perplexity must be a finite number"),
        (lambda: ProjectionSettings(neighbors=1), "neighbors must be at least 2"),
        (lambda: project(np.eye(4), list("abcd"), "tsne", seed=2**32), "seed must be at most"),
        (lambda: Expression(positive=[None]), "Expression positive terms must be words"),
        (lambda: neighbors(default_model, "dog", index="cache"), "index must be a VectorIndex, got str"),
        (lambda: analogy(default_model, "man", "king", "woman", index=5), "index must be a VectorIndex"),
        (lambda: evaluate_pairs(default_model, "mc30", vectors=[]), "vectors must map words to vectors"),
        (lambda: project_contextual(default_model, None), "texts must be a list, got NoneType"),
        (lambda: trajectory(default_model, "bank", None), "sentences must be a list, got NoneType"),
        (lambda: project_tokens(default_model, 5), "tokens (of tokens, ids or words) must be a list"),
        (lambda: plan_extension(default_model, ["aspirinex"], ExtendOptions(strategy="rows"), rows=5),
         "rows must be a mapping of word to vector or a file's path"),
        (lambda: plan_extension(default_model, ["aspirinex"], ExtendOptions(strategy="rows"), rows={"aspirinex": "a"}),
         "is not a vector of numbers"),
    ]  # fmt: skip
    for call, message in calls:
        with pytest.raises(InputError) as caught:
            call()
        assert message in caught.value.message and caught.value.hint, (message, caught.value)
    assert not any(tmp_path.iterdir())


def test_an_expression_term_given_as_a_string_is_one_term(default_model):
    assert Expression(positive="king", negative="man") == Expression(positive=("king",), negative=("man",))
    assert Expression(positive=["king", "woman"]).positive == ("king", "woman")
    found = neighbors(default_model, Expression(positive="king"), 3)
    assert found.pieces == ("king",)  # not k, i, n, g


# --- 8. every error says what to do -----------------------------------------------------------------------------------


def _called(node: ast.Call) -> str:
    return getattr(node.func, "id", getattr(node.func, "attr", ""))


def test_every_error_made_anywhere_in_the_package_has_a_hint():
    """Each `SomeBertlensError(message, hint)` in every module of bertlens gives a non-empty hint. The error classes
    are found in the source too: BertlensError and every class (in any module) derived from one of them."""
    root = Path(bertlens.__file__).parent
    trees = {p.relative_to(root).as_posix(): ast.parse(p.read_text(encoding="utf-8")) for p in root.rglob("*.py")}
    classes = {BertlensError.__name__}
    definitions = [n for tree in trees.values() for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    while derived := {
        n.name
        for n in definitions
        if n.name not in classes and {getattr(b, "id", getattr(b, "attr", "")) for b in n.bases} & classes
    }:
        classes |= derived
    assert {"InputError", "InputTooLongError", "CorruptModelError", "RequestTooLargeError"} <= classes
    made, missing = 0, []
    for module, tree in sorted(trees.items()):
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and _called(node) in classes):
                continue
            made += 1
            hint = (
                node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "hint"), None)
            )
            if hint is None or (isinstance(hint, ast.Constant) and not str(hint.value).strip()):
                missing.append(f"{module}:{node.lineno}")
    assert made > 300, made  # the scan found the package's errors
    assert not missing, f"errors without a hint: {missing}"


# --- 9. options that would be ignored, empty paths, undecodable request text ------------------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["extract", "", "--out", "shards"], "No corpus was given (an empty path)"),
        (["extract", " ", "--out", "shards"], "No corpus was given (an empty path)"),
        (["extract", "corpus.txt", "--out", "shards", "--shard-texts", "0"], "at least 1, got 0"),
        (["watch", "run", "--threads", "2"], "--threads applies only with --word2vec CORPUS"),
        (["watch", "run", "--max-texts", "10"], "--max-texts applies only with --word2vec CORPUS"),
        (["watch", "run", "--word2vec-minutes", "1"], "--word2vec-minutes applies only with --word2vec CORPUS"),
        (["extend", "", "--words", "aspirinex", "--out", "new"], "The MODEL argument is empty"),
        (["extend", "  ", "--words", "aspirinex", "--out", "new"], "The MODEL argument is empty"),
        (["serve", "--get", "/api/info", "--cache-dir", "corpus.txt"], "is a file, not a folder"),
        (["serve", "--get", "/api/info", "--cache-dir", ""], "is blank"),
        (["serve", "--get", "\udcff\udcfe"], "The request path holds characters that are not valid Unicode"),
        (["serve", "--post", "/api/tokens", '{"text": "\udcff"}'], "request JSON (--post) holds characters"),
        (["serve", "--get", "/api/info", "--workers", "0"], "--workers applies only to a running server"),
    ]
    + [
        (["serve", "--get", "/api/info", *option], f"{option[0]} applies only to a running server")
        for option in (
            ["--workers", "2"],
            ["--threads", "2"],
            ["--allow-host", ""],
            ["--allow-host", "my-machine.local"],
            ["--no-precompute"],
            ["--open"],
            ["--host", "127.0.0.1"],
            ["--port", "8000"],
        )
    ],
)
def test_what_would_be_ignored_or_misread_is_refused(capsys, cwd, argv, message):
    refused(capsys, argv, message)
    assert _files(cwd) == {"corpus.txt"}  # nothing written, the current folder not read as a corpus


@pytest.mark.parametrize("value", ["0", "-1"])
def test_serve_workers_and_threads_must_be_positive(capsys, value):
    for option in ("--workers", "--threads"):
        error = refused(capsys, ["serve", "--port", "1", option, value], f"{option} must be 1 or more")
        assert option in error["hint"]


def test_library_refuses_an_empty_corpus_and_odd_shard_sizes(tiny_models, cwd):
    from bertlens.contextual.extract import ExtractOptions, extract
    from bertlens.training.baseline import word2vec_baseline

    for corpus in ("", "   "):  # Path("") is Path("."): only a str can say "nothing"
        for call, args in (
            (extract, (tiny_models["bert"], corpus, cwd / "shards")),
            (word2vec_baseline, (corpus, 1.0)),
        ):
            with pytest.raises(InputError, match="No corpus was given") as caught:
                call(*args)
            assert caught.value.hint
    for size in (0, -1, True, 2.5, "3"):
        with pytest.raises(InputError, match="texts per shard") as caught:
            extract(tiny_models["bert"], "corpus.txt", cwd / "shards", options=ExtractOptions(shard_texts=size))
        assert caught.value.hint
    assert _files(cwd) == {"corpus.txt"}


def test_undecodable_text_in_any_request_is_a_400(tiny_models, tmp_path):
    """A JSON string may hold lone surrogates (\\udcff escapes): a clear 400, with the neighbour table too."""
    from bertlens.web import ServerLimits, create_app
    from bertlens.web.app import call

    app = create_app([tiny_models["bert"]], ServerLimits(precompute=True, cache_dir=str(tmp_path)))
    assert app.state.registry.preparation.wait(120)  # the table, built in the background
    assert app.state.registry.models[0].index.table is not None  # token queries are table lookups here
    bad = '"\\udcff"'
    for path, body in [
        ("/api/neighbors", f'{{"queries": [{bad}]}}'),
        ("/api/neighbors", f'{{"queries": ["cat", {bad}]}}'),
        ("/api/neighbors", f'{{"positive": [{bad}]}}'),
        ("/api/tokens", f'{{"text": {bad}}}'),
        ("/api/tokens", f'{{"text": "a", "pair": {bad}}}'),
        ("/api/explain", f'{{"text": {bad}}}'),
        ("/api/context", f'{{"word": {bad}, "sentences": ["a cat", "the cat"]}}'),
        ("/api/trajectory", f'{{"word": "cat", "sentences": [{bad}, "the cat"]}}'),
        ("/api/projection", f'{{"source": "tokens", "tokens": [{bad}]}}'),
        ("/api/projection", f'{{"source": "contextual", "texts": [{bad}]}}'),
    ]:
        status, answer = call(app, "POST", path, body.encode())
        assert status == 400, (path, body, answer)
        assert "not valid Unicode" in answer["message"] and answer["hint"], answer


def test_a_lone_surrogate_in_an_answer_stays_valid_json():
    from bertlens.web.responses import dumps

    assert json.loads(dumps({"echo": "a\udcffb", "x": float("nan")})) == {"echo": "a\udcffb", "x": None}
