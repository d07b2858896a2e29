"""Shared fixtures: the real default model (loaded once), and tiny random models of every family (built once)."""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

# Any accidental hub access must fail loudly; set before transformers is imported anywhere.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.pop("BERTLENS_MODEL", None)
os.environ["BERTLENS_CACHE"] = tempfile.mkdtemp(prefix="bertlens-test-cache-")  # never the user's ~/.cache
# Several workers share the cores (scripts/test runs two): each worker, and every command a test starts from it,
# computes on its share of them. Left to their defaults, torch in every worker takes every core: training tests crawl.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_name, str(max(1, (os.cpu_count() or 1) // _WORKERS)))

sys.path.insert(0, str(Path(__file__).parent))

from tiny import FAMILIES, make_tiny  # noqa: E402  (after the thread settings above, before torch loads)

from bertlens import Model, load_model  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
WORDS = ["cat", "dog", "king", "queen", "man", "woman", "city", "river", "house", "car", "tree", "red", "big"]


# The longest files start first, so that none begun last leaves the other workers idle while it finishes: scripts/test
# runs three workers that take whole files, dealt in collection order (`--no-loadscope-reorder`: xdist would otherwise
# deal the files with the most tests first), a worker getting its next file as it nears the end of the one it holds.
# Order within a file is kept.
LONGEST_FIRST = (
    "test_readme.py",
    "test_hostile_inputs.py",
    "test_notebook.py",
    "test_training_runs.py",
    "test_cpu_paths.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the longest test files first (see LONGEST_FIRST), keeping every file's own order."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Remove the session's bertlens cache folder (made above, before any test ran)."""
    shutil.rmtree(os.environ["BERTLENS_CACHE"], ignore_errors=True)


@pytest.fixture(scope="session")
def default_model() -> Model:
    """The bundled default model; its torch model is loaded once and kept for the session."""
    return load_model()


@pytest.fixture(scope="session")
def generated_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 6 KB of generated sentences ("The cat saw the river." ...), in a folder anyone can read (the tests that
    run as an unprivileged user read it too): the text of the tiny training runs, extracts and indexes."""
    rng = random.Random(0)
    file = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    lines = [" ".join(f"The {rng.choice(WORDS)} saw the {rng.choice(WORDS)}." for _ in range(3)) for _ in range(60)]
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return file


@pytest.fixture(scope="session")
def generated_tokenizer(generated_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A WordPiece tokenizer of 80 pieces trained on `generated_corpus`."""
    from bertlens.training import TokenizerConfig, train_tokenizer

    out = tmp_path_factory.mktemp("tokenizer") / "tok"
    train_tokenizer(generated_corpus, out, TokenizerConfig(vocab_size=80))
    return out


@pytest.fixture(scope="session")
def paragraphs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 12 KB of generated paragraphs, two to four sentences each: the text of the tiny training runs."""
    from tiny_runs import sentence

    rng = random.Random(0)
    file = tmp_path_factory.mktemp("paragraphs") / "corpus.txt"
    lines = [" ".join(sentence(rng) for _ in range(rng.randint(2, 4))) for _ in range(80)]
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return file


@pytest.fixture(scope="session")
def paragraphs_tokenizer(paragraphs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A WordPiece tokenizer of 120 pieces trained on `paragraphs`."""
    from bertlens.training import TokenizerConfig, train_tokenizer

    out = tmp_path_factory.mktemp("paragraphs-tokenizer")
    train_tokenizer(paragraphs, out, TokenizerConfig(vocab_size=120))
    return out


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A saved tiny model directory per family (base model, safetensors)."""
    root = tmp_path_factory.mktemp("tiny")
    return {family: make_tiny(family, root / family) for family in FAMILIES}


@pytest.fixture(scope="session")
def tiny_models(tiny_dirs: dict[str, Path]) -> dict[str, Model]:
    return {family: load_model(str(path)) for family, path in tiny_dirs.items()}


@pytest.fixture
def tiny_copy(tiny_dirs: dict[str, Path], tmp_path: Path) -> Callable[[str], Path]:
    """A private copy of a tiny model directory, for tests that damage or change files."""

    def copy(family: str) -> Path:
        target = tmp_path / family
        shutil.copytree(tiny_dirs[family], target)
        return target

    return copy
