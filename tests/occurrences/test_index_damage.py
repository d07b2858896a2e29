"""A damaged index read by a search: never an internal error (exit 70) nor a crash of the process.

The small structure files of each table (version manifests, transactions, search structures under `_indices`) are
hashed against the build's record before LanceDB opens a table (`integrity.check_structures`): LanceDB's Rust code
panics or aborts the whole process (SIGABRT, which no Python code can catch) on some damage to them, so a damaged
one is `DamagedError` naming the file. The data files are only checked for their size on open, so one changed in
place opens and fails when read: the index's read boundary (occurrences/reads.py) turns every failure of LanceDB,
pyarrow or its Rust code into `DamagedError` (exit 2, HTTP 500), saying the index is damaged and how to find the
file (`bertlens index DIR --verify`).

Here 8 bytes are flipped at several offsets of every kind of file, each in a fresh copy of one tiny index (a tiny
random BERT, 40 texts): in-process for the errors' words, and through `python -m bertlens search` in child
processes, where an abort would show as the child's death.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
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
from bertlens.occurrences.integrity import RECORD, is_structure, manifest_text
from bertlens.occurrences.reads import guarded, is_panic
from bertlens.occurrences.search import SearchOptions, search_occurrences
from bertlens.occurrences.store import MANIFEST
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


def test_a_damaged_data_file_makes_every_read_a_damaged_error_never_a_crash(tiny, built, tmp_path):
    name = largest_data_file(built)
    failures: list[BaseException] = []  # what LanceDB raised, kept as each DamagedError's context
    for offset in offsets((built / name).stat().st_size):
        index = damaged_copy(built, tmp_path / str(offset), name, offset)
        assert not verify_index(index).whole
        for error in each_read(tiny, index):
            says_damaged(error, index)
            if error.__context__ is None:  # LanceDB read no error, but lost a text its occurrences name
                assert "does not give text" in error.message
            else:
                failures.append(error.__context__)
    kinds = {type(f).__name__ for f in failures}
    assert len(failures) >= 4 and "ValueError" in kinds, kinds  # lance's "Invalid input" of a damaged footer
    assert any(is_panic(f) for f in failures), kinds  # a Rust panic (pyo3's RustPanic) among them


def structure_files(index: Path) -> list[str]:
    """Each table's search structures and version manifests."""
    found = [*index.glob("*.lance/_indices/*/*.lance"), *index.glob("*.lance/_versions/*.manifest")]
    return sorted(p.relative_to(index).as_posix() for p in found)


def test_a_damaged_structure_file_is_refused_on_open_naming_it(tiny, built, tmp_path):
    names = structure_files(built)
    assert len(page_data_files(built)) == 2 and len(names) >= 6  # both tables' search structures and manifests
    for name in names:
        size = (built / name).stat().st_size
        for offset in (0, size // 2, size - 8):
            index = damaged_copy(built, tmp_path / f"{name.replace('/', '-')}-{offset}", name, offset)
            errors = each_read(tiny, index)
            assert len(errors) == len(SEARCHES) + 1  # every read refused, before LanceDB reads the file
            for error in errors:
                says_damaged(error, index)
                assert f"{name}: its bytes differ from those written (checksum)" in error.message


def test_without_checksums_of_its_structure_files_an_index_opens_and_a_panic_is_a_damaged_error(tiny, built, tmp_path):
    index = tmp_path / "unrecorded"
    shutil.copytree(built, index)
    manifest = json.loads((index / MANIFEST).read_text(encoding="utf-8"))
    files = manifest[RECORD]["files"]
    for name in [n for n in files if is_structure(n)]:  # as a record without their checksums
        files[name] = {"bytes": files[name]["bytes"]}
    (index / MANIFEST).write_text(manifest_text(manifest), encoding="utf-8")
    assert search_occurrences(tiny, index, "the [cat] sat").hits  # opens and answers
    name = next(n for n in files if n.startswith("occurrences.lance/_versions/") and n.endswith(".manifest"))
    damaged = damaged_copy(index, tmp_path / "damaged", name, 0)  # LanceDB's Rust code panics opening the table
    with pytest.raises(DamagedError, match="its tables cannot be opened") as raised:
        search_occurrences(tiny, damaged, "the [cat] sat")
    assert "--overwrite" in raised.value.hint


# One child process searches damaged copies in turn, as `python -m bertlens ...` does (one model load for all); a
# copy that ends the child (an abort) is reported as a shell reports it (128 + the signal), and the next child goes on.
CHILD = """
import runpy, sys
for line in sys.stdin:
    case, *args = line.rstrip("\\n").split("\\t")
    print("start", case, flush=True)
    sys.argv = ["bertlens", *args]
    try:
        runpy.run_module("bertlens", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    print("exit", case, code, flush=True)
"""


def exit_statuses(commands: list[list[str]]) -> tuple[list[int], str]:
    """Each command's exit status (`bertlens ARGS`, run as `python -m bertlens`), and everything written on stderr."""
    statuses: dict[int, int] = {}
    errors = ""
    while len(statuses) < len(commands):
        todo = [i for i in range(len(commands)) if i not in statuses and i > max(statuses, default=-1)]
        lines = "".join("\t".join([str(i), *commands[i]]) + "\n" for i in todo)
        child = subprocess.run(
            [sys.executable, "-c", CHILD], input=lines, capture_output=True, text=True, timeout=600, check=False
        )
        errors += child.stderr
        started = None
        for line in child.stdout.splitlines():
            if line.startswith("start "):
                started = int(line.split()[1])
            elif line.startswith("exit "):
                _, case, code = line.split()
                statuses[int(case)] = int(code)
        if child.returncode != 0:  # the child died on `started`
            assert started is not None and started not in statuses, child.stderr[-2000:]
            statuses[started] = 128 - child.returncode if child.returncode < 0 else child.returncode
    return [statuses[i] for i in range(len(commands))], errors


def test_bytes_flipped_in_any_file_never_crash_a_search(tiny_dir, built, tmp_path):
    names = sorted(p.relative_to(built).as_posix() for p in built.rglob("*") if p.is_file())
    kinds = {
        "data": "/data/",
        "search structure": "/_indices/",
        "version": "/_versions/",
        "transaction": "/_transactions/",
    }
    for kind, part in {**kinds, "bertlens": "bertlens-"}.items():
        assert any(part in name for name in names), kind
    commands, cases = [], []
    for name in names:
        size = (built / name).stat().st_size
        for offset in sorted({0, size // 2, max(size - 8, 0)}):
            index = damaged_copy(built, tmp_path / f"{len(cases)}", name, offset)
            for query in (["the [cat] sat"], ["--from", "3:2"]):
                commands.append(["search", str(index), *query, "--model", str(tiny_dir), "--json"])
                cases.append((name, offset))
    statuses, errors = exit_statuses(commands)
    assert "Traceback" not in errors, errors[-3000:]
    for (name, offset), status in zip(cases, statuses, strict=True):
        assert status in (0, 2), (name, offset, status)  # never 70 (an internal error) nor 134 (an abort)
        if is_structure(name):
            assert status == 2, (name, offset)  # refused on open: its checksum differs
    assert statuses.count(2) >= len(statuses) // 2


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
