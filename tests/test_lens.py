"""`Lens` only delegates: each method gives exactly what the library function gives for the same model and inputs;
and every capability (a public function taking a model and answering with a result) is reachable from its package."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil

import numpy as np
import pytest

import bertlens
from bertlens import Lens, PlotOptions
from bertlens.contextual import compare_contexts, hidden_states, sentence_vectors, word_vectors
from bertlens.core.results import Result
from bertlens.embeddings import position_similarity
from bertlens.extend import plan_extension
from bertlens.similarity import analogy, evaluate_pairs
from bertlens.views import project_tokens, trajectory

BREAD = ["I like eating bread", "The banana bread was horrible"]

# Public functions that take a model and answer with a result, yet are steps inside a capability, not one.
INTERNAL = {"describe", "term_vector", "tokenization_of"}


@pytest.fixture(scope="module")
def lens(default_model):
    return Lens(default_model)


def same(a, b) -> bool:
    """Equal results: the same plain data (numbers to the last bit, as JSON text)."""
    return json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)


def capabilities() -> dict[str, tuple[str, object]]:
    """Every public function of every bertlens module whose first parameter is `model` and whose return annotation
    names a `Result`: name -> (the package its module is in, the function)."""
    found: dict[str, tuple[str, object]] = {}
    for info in pkgutil.walk_packages(bertlens.__path__, "bertlens."):
        if info.ispkg or info.name.split(".")[1] in ("__main__", "cli", "web"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(value) or value.__module__ != module.__name__:
                continue
            signature = inspect.signature(value)
            returned = getattr(module, str(signature.return_annotation), None)
            answers = inspect.isclass(returned) and issubclass(returned, Result)
            if list(signature.parameters)[:1] == ["model"] and answers:
                found[name] = (info.name.rpartition(".")[0], value)
    return found


def test_lens_covers_every_capability():
    """Each capability is exported by its package (`from bertlens.<package> import name`), whether or not the `Lens`
    has a method for it; the top level is a short list of the most used names, each also in its package."""
    found = capabilities()
    assert len(found) > 30, sorted(found)
    unreachable = [
        f"{package}.{name}"
        for name, (package, function) in found.items()
        if name not in INTERNAL and getattr(importlib.import_module(package), name, None) is not function
    ]
    assert unreachable == [], "add each to its package's __init__ (import and __all__)"
    packages = [f"bertlens.{package.name}" for package in pkgutil.iter_modules(bertlens.__path__) if package.ispkg]
    exported = {name for package in packages for name in getattr(importlib.import_module(package), "__all__", ())}
    assert set(bertlens.__all__) - {"Lens"} <= exported
    assert len(bertlens.__all__) <= 40


def test_every_lens_method_names_the_function_it_calls():
    methods = [name for name, member in vars(Lens).items() if not name.startswith("_") and callable(member)]
    assert len(methods) > 25
    for name in methods:
        called = (inspect.getdoc(getattr(Lens, name)) or "").splitlines()[0]
        assert "`" in called and called.rstrip(".").endswith(")"), name  # "... (`bertlens.function`)."


def test_similarity_capabilities(lens, default_model):
    assert same(lens.analogy("man", "king", "woman", k=3), analogy(default_model, "man", "king", "woman", k=3))
    assert same(lens.evaluate("rg65"), evaluate_pairs(default_model, "rg65"))


def test_contextual_capabilities(lens, default_model):
    model = default_model
    a, b = lens.hidden_states(BREAD), hidden_states(model, BREAD)
    for ours, theirs in zip(a.results, b.results, strict=True):
        assert np.array_equal(ours.states, theirs.states)  # (layers, tokens, hidden)
    assert same(lens.word_vectors(BREAD[0], layers=(2, 4)), word_vectors(model, BREAD[0], layers=(2, 4)))
    assert same(lens.sentence_vectors(BREAD, method="cls"), sentence_vectors(model, BREAD, method="cls"))
    assert same(lens.context("bread", BREAD, pool="max"), compare_contexts(model, "bread", BREAD, pool="max"))


def test_view_and_embedding_capabilities(lens, default_model, tmp_path):
    tokens = ["king", "queen", "man", "woman"]
    assert same(lens.project_tokens(tokens), project_tokens(default_model, tokens))
    assert same(lens.trajectory("bread", BREAD), trajectory(default_model, "bread", BREAD))
    assert same(lens.position_similarity(limit=16), position_similarity(default_model, limit=16))
    drawn = lens.plot(lens.position_similarity(limit=16), tmp_path / "positions.svg")
    assert drawn.path == str(tmp_path / "positions.svg") and (tmp_path / "positions.svg").read_bytes().startswith(b"<")
    again = lens.plot(lens.position_similarity(limit=8), drawn.path, options=PlotOptions(overwrite=True))
    assert again.path == drawn.path


def test_new_word_capabilities(lens, default_model):
    planned = lens.plan_extension(["covid"])
    assert planned.to_dict() == plan_extension(default_model, ["covid"]).to_dict()


def test_a_method_passes_every_argument_on_and_refuses_what_the_function_refuses(lens):
    assert lens.tokens("I am Sinan", add_special_tokens=False).ids == [1045, 2572, 8254, 2319]
    with pytest.raises(TypeError, match="topk"):
        lens.neighbors("dog", topk=3)


def test_two_spaces_capability(tiny_models, tiny_dirs):
    """`other` is a Lens, a Model or what load_model takes; each gives what `diff` gives for the same two models."""
    from bertlens.spaces import diff

    bert, albert = tiny_models["bert"], tiny_models["albert"]
    expected = diff(bert, albert, top=3)
    lens = Lens(bert)
    assert same(lens.diff(albert, top=3), expected)
    assert same(lens.diff(Lens(albert), top=3), expected)
    assert same(lens.diff(str(tiny_dirs["albert"]), top=3), expected)  # loaded from the folder it was loaded from
