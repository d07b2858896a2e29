"""A damaged index read by a search: the index's read boundary (occurrences/reads.py) turns every failure of LanceDB,
pyarrow or its Rust code into `DamagedError` (exit 2, HTTP 500), saying the index is damaged and how to find the file
(`bertlens index DIR --verify`); never an internal error (exit 70).

The cheap checks of every open compare file sizes only, so a file changed in place opens and fails when read: here 8
bytes are flipped at several offsets of the largest occurrences data file and of each table's search structure
(`_indices/*/page_data.lance`), each in a fresh copy of one tiny index (a tiny random BERT, 40 texts).

Not covered, as no Python code can catch it: a length field changed so that LanceDB's Rust code asks for memory it
cannot have aborts the process (SIGABRT); `--verify` finds that damage as it finds any other.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tiny import WORDS, make_tiny

import bertlens
from bertlens import load_model
from bertlens.cli import main
from bertlens.core.errors import DamagedError
from bertlens.occurrences.build import IndexOptions, index_corpus
from bertlens.occurrences.folder import verify_index
from bertlens.occurrences.reads import guarded, is_panic
from bertlens.occurrences.search import SearchOptions, search_occurrences
from bertlens.senses.senses import word_senses
from bertlens.web import ServerLimits, create_app

SEARCHES = {
    "sentence": ("the [cat] sat", SearchOptions()),
    "occurrence": (None, SearchOptions(occurrence=(3, 2))),
    "any word": (None, SearchOptions(occurrence=(3, 2), any_word=True)),
}


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny("bert", tmp_path_factory.mktemp("damage-tiny") / "bert")


@pytest.fixture(scope="module")
def tiny(tiny_dir: Path) -> bertlens.Model:
    return load_model(str(tiny_dir))


@pytest.fixture(scope="module")
def built(tiny: bertlens.Model, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("damage")
    rng = random.Random(3)
    (root / "corpus").mkdir()
    for f in range(2):
        body = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 10))) + " cat" for _ in range(20)]
        (root / "corpus" / f"part-{f}.txt").write_text("\n".join(body) + "\n", encoding="utf-8")
    index_corpus(tiny, root / "corpus", root / "index", options=IndexOptions(layers=(0, -1), batch_texts=10))
    return root / "index"


def largest_data_file(index: Path) -> str:
    found = max((index / "occurrences.lance" / "data").iterdir(), key=lambda p: p.stat().st_size)
    return found.relative_to(index).as_posix()


def page_data_files(index: Path) -> list[str]:
    return sorted(p.relative_to(index).as_posix() for p in index.glob("*.lance/_indices/*/page_data.lance"))


def damaged_copy(built: Path, folder: Path, name: str, offset: int) -> Path:
    """A copy of the index in `folder` with the 8 bytes of `name` at `offset` inverted (a fresh path: nothing LanceDB
    cached of another copy applies)."""
    shutil.copytree(built, folder)
    data = bytearray((folder / name).read_bytes())
    data[offset : offset + 8] = bytes(b ^ 0xFF for b in data[offset : offset + 8])
    (folder / name).write_bytes(bytes(data))
    return folder


def offsets(size: int) -> list[int]:
    """Its first bytes, its middle, and three places of its last 100 (its footer and column metadata)."""
    return sorted({0, size // 2, size - 100, size - 40, size - 8})


def each_read(tiny: bertlens.Model, index: Path) -> list[DamagedError]:
    """Every search and a word's senses on `index`: each answers or raises DamagedError (any other error fails)."""
    raised = []
    for example, options in SEARCHES.values():
        try:
            search_occurrences(tiny, index, example, options=options)
        except DamagedError as error:
            raised.append(error)
    try:
        word_senses(tiny, "cat", index=index)
    except DamagedError as error:
        raised.append(error)
    return raised


def says_damaged(error: DamagedError, index: Path) -> None:
    assert f"The index at {index} is damaged" in error.message, error.message
    assert f"`bertlens index {index} --verify`" in error.hint and "--overwrite" in error.hint


@pytest.mark.parametrize("kind", ["data", "search structure"])
def test_a_damaged_file_makes_every_read_a_damaged_error_never_a_crash(tiny, built, tmp_path, kind):
    names = [largest_data_file(built)] if kind == "data" else page_data_files(built)
    assert names
    failures: list[BaseException] = []  # what LanceDB raised, kept as each DamagedError's context
    for name in names:
        for offset in offsets((built / name).stat().st_size):
            index = damaged_copy(built, tmp_path / f"{Path(name).parent.name}-{offset}", name, offset)
            assert not verify_index(index).whole
            for error in each_read(tiny, index):
                says_damaged(error, index)
                if error.__context__ is None:  # LanceDB read no error, but lost a text its occurrences name
                    assert "does not give text" in error.message
                else:
                    failures.append(error.__context__)
    kinds = {type(f).__name__ for f in failures}
    assert len(failures) >= 8 and "ValueError" in kinds, kinds  # lance's "Invalid input" of a damaged footer
    if kind == "data":
        assert any(is_panic(f) for f in failures), kinds  # a Rust panic (pyo3's RustPanic) among them


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    """The CLI in-process with --json: its exit code and the JSON it printed."""
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def test_the_cli_exits_2_naming_the_index_and_verify(tiny_dir, built, tmp_path, capsys):
    name = largest_data_file(built)
    size = (built / name).stat().st_size
    for offset in (size - 8, size - 60):  # the file's magic number; its column metadata
        index = damaged_copy(built, tmp_path / str(offset), name, offset)
        for args in (("search", str(index), "the river [cat]"), ("search", str(index), "--from", "3:2")):
            code, error = run(capsys, *args, "--model", str(tiny_dir))
            assert code == 2, error
            assert error["error"] == "DamagedError" and f"The index at {index} is damaged" in error["message"]
            assert f"bertlens index {index} --verify" in error["hint"]
        code, report = run(capsys, "index", str(index), "--verify")
        assert code == 2 and name in report["message"]  # --verify names the file


def test_over_http_a_damaged_index_is_a_500_with_the_same_message(tiny, built, tmp_path):
    name = largest_data_file(built)
    index = damaged_copy(built, tmp_path / "served", name, (built / name).stat().st_size - 8)
    client = TestClient(create_app([tiny], ServerLimits(precompute=False), indexes=[index]))  # opens: sizes agree
    for body in ({"example": "the [cat] sat"}, {"occurrence": [3, 2]}):
        response = client.post("/api/search", json=body)
        assert response.status_code == 500, response.text
        answer = response.json()
        assert answer["error"] == "DamagedError" and "is damaged" in answer["message"] and "--verify" in answer["hint"]
    assert client.get("/api/indexes").status_code == 200  # the server goes on answering


class PanicException(BaseException):
    """Named as pyo3's panic (which pyo3 does not export): a BaseException, like KeyboardInterrupt."""


def test_the_read_boundary_catches_a_panic_but_not_an_interrupt(tmp_path):
    def raises(exc: BaseException) -> None:
        raise exc

    with pytest.raises(DamagedError, match="LanceDB says 'panicked'"):
        guarded(tmp_path, "texts", raises, PanicException("panicked"))
    with pytest.raises(KeyboardInterrupt):
        guarded(tmp_path, "texts", raises, KeyboardInterrupt())
    with pytest.raises(KeyError):  # not a read failure of LanceDB's: a bug goes on as raised
        guarded(tmp_path, "texts", raises, KeyError(3))
