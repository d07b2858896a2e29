"""Docs that cannot rot: the README shows every command, CI runs the README's test command, __all__ is true."""

from __future__ import annotations

import re
from pathlib import Path

import bertlens
from bertlens.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]


def commands() -> set[str]:
    return set(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]


def test_readme_shows_every_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for command in commands():
        assert f"bertlens {command}" in readme, command


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    match = re.search(r"^## Run the tests\n\n```sh\n(.*?)```", readme, re.MULTILINE | re.DOTALL)
    assert match, "README names no test command"
    command = match.group(1).strip()
    assert "\n" not in command and command in ci.splitlines()
    script = (ROOT / "scripts" / "test").read_text(encoding="utf-8")
    passes = [line for line in script.splitlines() if "python -m pytest -q" in line]
    assert len(passes) == 2 and "NARROW" in passes[1]  # this CPU's paths, then the narrow ones
    assert "ATEN_CPU_CAPABILITY=avx2" in script


def test_all_names_exist():
    for name in bertlens.__all__:
        assert hasattr(bertlens, name), name


def test_lens_facade_delegates(default_model):
    lens = bertlens.Lens(default_model)
    assert lens.model is default_model
    assert lens.tokens("I am Sinan").ids == [101, 1045, 2572, 8254, 2319, 102]
    assert lens.vector("Sinan").pieces == ("sin", "##an")
    assert lens.info().vocab_size == 30522
    assert lens.compare("I like eating bread", "The banana bread was horrible", check=False).shared[0].piece == "[CLS]"
    assert "Lens(Model(BERT" in repr(lens)
    assert lens.neighbors("dog", 1).neighbors[0].token == "dogs"
    assert lens.neighbors_many(["dog", "cat"], 1)[1].query == "cat"
    assert lens.similarity("dog", "cat").score > 0.3


def test_readme_python_example_runs(tmp_path, monkeypatch):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", readme, re.DOTALL).group(1)
    monkeypatch.chdir(tmp_path)  # the example exports into vectors/
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["x"].matches  # within its tolerance, derived from the data: 0 where bit for bit
    assert (tmp_path / "vectors" / "word_embeddings.w2v.txt").exists()
