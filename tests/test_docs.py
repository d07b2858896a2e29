"""Docs that cannot rot: every command is documented, CI runs the README's test command, the README stays a short
page whose links resolve, the documentation site builds with warnings as errors, its API reference covers `__all__`,
and every public name and `Lens` method has a docstring with an example."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bertlens
from bertlens.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"


def commands() -> set[str]:
    return set(COMMANDS)


def pages() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(DOCS.glob("*.md"))}


def test_every_command_is_documented():
    reference = (DOCS / "commands.md").read_text(encoding="utf-8")
    everywhere = README.read_text(encoding="utf-8") + "".join(pages().values())
    for command in commands():
        assert f"| `bertlens {command}" in reference, command  # the commands page's table has a row for it
        assert len(re.findall(rf"\bbertlens {command}\b", everywhere)) >= 2, command  # and a page shows it in use


def test_the_command_reference_is_written_from_the_commands():
    """docs/commands.md's reference is what `python -m bertlens.cli.reference docs/commands.md` writes now."""
    from bertlens.cli.reference import BEGIN, reference

    page = (DOCS / "commands.md").read_text(encoding="utf-8")
    assert BEGIN in page, "no reference: run python -m bertlens.cli.reference docs/commands.md"
    assert page[page.index(BEGIN) :] == reference(), "stale: run python -m bertlens.cli.reference docs/commands.md"


def test_ci_runs_the_readme_test_command():
    readme = README.read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    match = re.search(r"^## Run the tests\n\n```sh\n(.*?)```", readme, re.MULTILINE | re.DOTALL)
    assert match, "README names no test command"
    command = match.group(1).strip()
    assert "\n" not in command and command in ci.splitlines()
    script = (ROOT / "scripts" / "test").read_text(encoding="utf-8")
    runs = [line for line in script.splitlines() if "python -m pytest -q" in line]
    assert "NARROW" in runs[-1] and not any("NARROW" in run for run in runs[:-1])  # this CPU's paths, then narrow
    assert "ATEN_CPU_CAPABILITY=avx2" in script


def test_the_readme_is_one_short_page_whose_links_resolve():
    readme = README.read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    local = [link.split("#")[0] for link in links if not re.match(r"[a-z]+://", link)]
    assert local, "the README links to the documentation"
    for link in local:
        assert (ROOT / link).exists(), link


def test_every_page_is_in_the_site_and_says_nothing_of_how_it_was_made():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s*([\w-]+\.md)\s*$", config, flags=re.M))
    assert listed == set(pages()), "mkdocs.yml's nav and docs/*.md differ"
    making = re.compile(r"\bissue \d+|\bhelper [A-Z]\b|\bthe lead\b|\b(this|an earlier|a later) session\b", re.I)
    for name, text in {"README.md": README.read_text(encoding="utf-8"), **pages()}.items():
        assert not making.search(text), (name, making.search(text))


def test_the_api_reference_covers_every_public_name():
    reference = (DOCS / "api.md").read_text(encoding="utf-8")
    documented = {line.rsplit(".", 1)[-1] for line in re.findall(r"^::: (\S+)$", reference, flags=re.M)}
    missing = set(bertlens.__all__) - documented
    assert not missing, f"add a `::: module.name` line to docs/api.md for each of {sorted(missing)}"


def test_the_site_builds_offline_with_warnings_as_errors(tmp_path: Path):
    """The whole site, API reference included (a few seconds): a broken link, a missing page or a docstring
    mkdocstrings cannot render fails here, as `mkdocs build --strict` would in CI."""
    pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]'")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8").count("doc-function") > 40
    for page in (tmp_path / "site").rglob("*.html"):  # the site loads nothing from the internet: no fonts, no CDN
        assert not re.search(r'(src="|<link[^>]*href=")https?://', page.read_text(encoding="utf-8")), page


def documented_with_an_example(thing: object) -> bool:
    doc = inspect.getdoc(thing) or ""
    return bool(doc.strip()) and (">>>" in doc or "```" in doc)


def test_every_public_name_and_lens_method_has_a_docstring_with_an_example():
    """`help(name)` is enough to use it: `bertlens.__all__` (functions and classes) and every `Lens` method."""
    public = [getattr(bertlens, name) for name in bertlens.__all__]
    lacking = [
        t.__name__ for t in public if inspect.isclass(t) or inspect.isfunction(t) if not documented_with_an_example(t)
    ]
    for name, member in vars(bertlens.Lens).items():
        target = member.fget if isinstance(member, property) else member
        if not name.startswith("_") and callable(target) and not documented_with_an_example(target):
            lacking.append(f"Lens.{name}")
    assert not lacking, f"no docstring with a `>>>` example: {lacking}"


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
    readme = README.read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", readme, re.DOTALL).group(1)
    monkeypatch.chdir(tmp_path)  # the example exports into vectors/
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["x"].matches  # bit for bit: the model's own LayerNorm on the sum equals the model's output
    assert namespace["x"].checked_against.endswith(" BertEmbeddings")
    assert (tmp_path / "vectors" / "word_embeddings.w2v.txt").exists()
