"""Index damage is detected, never served: the record a build writes (each file's size and checksum, rows, versions),
the cheap checks of every open, `--verify` and the full checks of `--resume` and `--add`; a live build told apart
from an interrupted one; what an add replaces removed by LanceDB's cleanup; an extract verified by the same checks.

One tiny index is built per module (a tiny random BERT, 40 texts in 4 batches); each case damages a copy.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from tiny import WORDS, make_tiny

import bertlens
from bertlens import InputError, load_model
from bertlens.cli import main
from bertlens.contextual.extract import ExtractOptions, extract
from bertlens.contextual.shards import verify_extract
from bertlens.occurrences import integrity
from bertlens.occurrences.build import IndexOptions, index_corpus
from bertlens.occurrences.folder import verify_index
from bertlens.occurrences.integrity import LOCK, RECORD
from bertlens.occurrences.search import SearchOptions, search_occurrences
from bertlens.occurrences.store import MANIFEST, OccurrenceIndex, open_index

OPTIONS = IndexOptions(layers=(0, -1), batch_texts=10)


def write_corpus(folder: Path, seed: int, files: int = 2, lines: int = 20) -> Path:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        body = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 10))) + " cat" for _ in range(lines)]
        (folder / f"part-{f}.txt").write_text("\n".join(body) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny("bert", tmp_path_factory.mktemp("integrity-tiny") / "bert")


@pytest.fixture(scope="module")
def tiny(tiny_dir: Path) -> bertlens.Model:
    return load_model(str(tiny_dir))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("integrity-corpus") / "corpus", seed=3)


@pytest.fixture(scope="module")
def built(tiny: bertlens.Model, corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("integrity-index") / "index"
    index_corpus(tiny, corpus, out, options=OPTIONS)
    return out


@pytest.fixture
def copy(built: Path, tmp_path: Path) -> Path:
    """A private copy of the module's index, to damage."""
    target = tmp_path / "index"
    shutil.copytree(built, target)
    return target


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    """The CLI in-process with --json: its exit code and the JSON it printed (an error's, for exit 2)."""
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def flip(file: Path, offset: int, mask: int = 0xFF) -> None:
    """XOR one byte of `file` with `mask` (doing it twice puts it back)."""
    with file.open("r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)[0]
        handle.seek(offset)
        handle.write(bytes([byte ^ mask]))


def recorded(index: Path) -> list[str]:
    return sorted(json.loads((index / MANIFEST).read_text(encoding="utf-8"))[RECORD]["files"])


def table_files(index: Path, table: str) -> list[str]:
    """Every file in a table's folder, relative to the index folder (sorted)."""
    folder = index / f"{table}.lance"
    return sorted(p.relative_to(index).as_posix() for p in folder.rglob("*") if p.is_file())


def test_the_record_names_every_file_of_the_tables_and_lancedb_keeps_one_version(built):
    files = recorded(built)
    opened = open_index(built)
    for table in ("texts", "occurrences"):
        handle = getattr(opened, table)
        assert [f for f in files if f.startswith(f"{table}.lance/")] == table_files(built, table)
        assert [v["version"] for v in handle.list_versions()] == [handle.version]  # older versions cleaned
        structures = [str(i.index_uuid) for i in handle.list_indices()]
        assert structures and all(any(uuid in f for f in files) for uuid in structures)
    record = json.loads((built / MANIFEST).read_text(encoding="utf-8"))[RECORD]
    assert record["rows"] == {"texts": 40, "occurrences": opened.rows}
    assert record["versions"] == {"texts": opened.texts.version, "occurrences": opened.occurrences.version}
    assert "bertlens-search.json" in files and not (built / LOCK).exists()
    report = verify_index(built)
    assert report.whole and report.files == len(files) + 1 and report.to_table().startswith("The index at")


def test_verify_finds_a_byte_changed_in_any_file(copy, capsys):
    """Every recorded file (data, search structures, version manifests, search settings) and the manifest, a byte
    changed at its start, a third of the way, its middle and its end: each found, the file named."""
    assert run(capsys, "index", str(copy), "--verify")[1]["whole"] is True
    checked = 0
    for name in [*recorded(copy), MANIFEST]:
        size = (copy / name).stat().st_size
        for offset in sorted({0, size // 3, size // 2, size - 1}):
            for mask in (0xFF, 0x01):
                flip(copy / name, offset, mask)
                report = verify_index(copy)
                assert not report.whole and name in {p.file for p in report.problems}, (name, offset, mask)
                flip(copy / name, offset, mask)
                checked += 1
    assert checked >= 100
    assert verify_index(copy).whole
    data = next(n for n in recorded(copy) if "/data/" in n)
    flip(copy / data, 100)
    code, error = run(capsys, "index", str(copy), "--verify")
    assert code == 2 and data in error["message"] and "--overwrite" in error["hint"]


def test_a_data_file_of_another_size_is_refused_on_open(tiny_dir, copy, capsys):
    data = copy / next(n for n in recorded(copy) if n.startswith("occurrences.lance/data/"))
    with data.open("ab") as handle:
        handle.write(b"\0")  # one byte more: lance would still read it
    for args in (("search", str(copy), "--from", "0:0"), ("senses", str(copy), "cat")):
        code, error = run(capsys, *args, "--model", str(tiny_dir))
        assert code == 2 and "damaged" in error["message"] and data.name in error["message"], error
        assert "bytes" in error["message"] and error["hint"]
    with data.open("r+b") as handle:
        handle.truncate(data.stat().st_size // 2)  # cut short
    with pytest.raises(InputError, match="recorded"):
        open_index(copy)
    code, error = run(capsys, "index", str(copy), "--verify")
    assert code == 2 and data.name in error["message"]


@pytest.mark.parametrize(("key", "value", "says"), [("dims", 128, "128 dims"), ("layers", [3], "layers [3]")])
def test_a_manifest_that_disagrees_with_its_tables_is_refused(tiny_dir, copy, capsys, key, value, says):
    manifest = json.loads((copy / MANIFEST).read_text(encoding="utf-8"))
    manifest[key] = value
    (copy / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    code, error = run(capsys, "search", str(copy), "--from", "0:0", "--model", str(tiny_dir))
    assert code == 2, error  # not 70: a lance error
    assert "stores layers [0, 2] (32 dims of float32)" in error["message"] and says in error["message"]
    assert "--overwrite" in error["hint"]
    assert not verify_index(copy).whole


def test_an_edited_manifest_is_refused(copy):
    manifest = json.loads((copy / MANIFEST).read_text(encoding="utf-8"))
    manifest["rows"] -= 1  # the tables still hold every row: only the checksum tells
    (copy / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    with pytest.raises(InputError, match="bertlens-index.json: its content differs"):
        open_index(copy)


def test_any_recorded_file_missing_is_refused_on_open(copy, tmp_path):
    """Whatever file of its tables goes (a data file, a search structure, the file naming the latest version), the
    record says so before LanceDB reads anything."""
    for name in recorded(copy):
        aside = tmp_path / "aside"
        (copy / name).rename(aside)
        with pytest.raises(InputError, match="missing") as refused:
            open_index(copy)
        assert name in str(refused.value)
        aside.rename(copy / name)
    assert open_index(copy).complete


def test_an_index_without_a_record_opens_but_is_not_called_whole(copy):
    """An index written before bertlens kept a record: its tables' columns are still checked on open."""
    manifest = json.loads((copy / MANIFEST).read_text(encoding="utf-8"))
    del manifest[RECORD], manifest[integrity.CHECKSUM]
    (copy / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    assert open_index(copy).rows == manifest["rows"]
    report = verify_index(copy)
    assert not report.whole and "earlier bertlens" in report.problems[0].what and "overwrite" in report.hint


@pytest.fixture(scope="module")
def foreign(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> Path:
    """An index of another model: hidden size 48, another seed."""
    folder = tmp_path_factory.mktemp("integrity-foreign")
    other = load_model(str(make_tiny("bert", folder / "other", seed=1, hidden_size=48)))
    index_corpus(other, corpus / "part-0.txt", folder / "index", options=IndexOptions(batch_texts=10))
    return folder / "index"


def test_another_models_index_is_refused_by_every_corpus_command(tiny_dir, foreign, copy, capsys):
    model = ["--model", str(tiny_dir)]
    for args in (("search", str(foreign), "the [cat] sat"), ("senses", str(foreign), "cat")):
        code, error = run(capsys, *args, *model)
        assert code == 2 and "another model" in error["message"] and error["hint"], error
    serve = ["serve", *model, "--get", "/api/indexes"]
    code, error = run(capsys, *serve, "--index", str(foreign))
    assert code == 2 and "does not serve" in error["message"], error
    assert run(capsys, *serve, "--index", str(copy))[0] == 0
    structure = str(next(iter(open_index(copy).occurrences.list_indices())).index_uuid)
    damaged = next(n for n in recorded(copy) if structure in n)
    flip(copy / damaged, 0)  # a search structure is hashed on opening, before LanceDB reads it
    code, error = run(capsys, *serve, "--index", str(copy))
    assert code == 2 and f"{damaged}: its bytes differ" in error["message"], error
    flip(copy / damaged, 0)
    assert run(capsys, *serve, "--index", str(copy))[0] == 0
    data = sorted((copy / "texts.lance" / "data").iterdir())[0]
    data.write_bytes(data.read_bytes()[:-1])
    code, error = run(capsys, *serve, "--index", str(copy))
    assert code == 2 and "damaged" in error["message"], error  # the server refuses to start


def unfinished(index: Path, pid: int, host: str | None = None) -> None:
    """Make `index` look unfinished, its lock held by `pid`."""
    manifest = json.loads((index / MANIFEST).read_text(encoding="utf-8"))
    manifest["complete"] = False
    (index / MANIFEST).write_text(integrity.manifest_text(manifest), encoding="utf-8")  # as a build writes it
    (index / LOCK).write_text(json.dumps({"pid": pid, "host": host or socket.gethostname()}), encoding="utf-8")


def ended_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_live_build_is_not_called_interrupted(tiny, tiny_dir, corpus, copy, capsys):
    live = os.getppid()  # a process that runs while this test does, and is not this one
    unfinished(copy, live)
    code, error = run(capsys, "search", str(copy), "--from", "0:0", "--model", str(tiny_dir))
    assert code == 2 and f"being built by a live process (pid {live})" in error["message"], error
    assert "interrupted" not in error["message"]
    report = verify_index(copy)
    assert not report.whole and "being built" in report.problems[0].what
    with pytest.raises(InputError, match=f"being built by a live process \\(pid {live}\\)"):
        index_corpus(tiny, corpus, copy, resume=True)  # a second writer is refused
    with pytest.raises(InputError, match="being built"):
        index_corpus(tiny, corpus, copy, options=OPTIONS, overwrite=True)
    unfinished(copy, ended_pid())
    code, error = run(capsys, "search", str(copy), "--from", "0:0", "--model", str(tiny_dir))
    assert code == 2 and "its build was interrupted after 40 texts" in error["message"] and "--resume" in error["hint"]
    report = verify_index(copy)
    assert not report.whole and not report.complete and "interrupted" in report.problems[0].what
    code, error = run(capsys, "index", str(copy), "--verify")
    assert (
        code == 2 and "is not complete: its build was interrupted" in error["message"] and "--resume" in error["hint"]
    )
    unfinished(copy, 1, host="another-host.example")
    with pytest.raises(InputError, match="being built by a process on host another-host.example"):
        open_index(copy)


def test_a_build_killed_before_its_first_batch_is_called_interrupted_not_old(copy, capsys):
    unfinished(copy, ended_pid())
    manifest = json.loads((copy / MANIFEST).read_text(encoding="utf-8"))
    del manifest[integrity.RECORD]  # nothing recorded yet: the build was killed in its first seconds
    (copy / MANIFEST).write_text(integrity.manifest_text(manifest), encoding="utf-8")
    report = verify_index(copy)
    assert not report.whole and not report.complete
    assert "interrupted" in report.problems[0].what and "earlier bertlens" not in report.problems[0].what
    assert "resume" in report.hint
    code, error = run(capsys, "index", str(copy), "--verify")
    assert code == 2 and "interrupted" in error["message"] and "earlier bertlens" not in error["message"]


def test_a_finished_build_leaves_no_lock_and_is_complete_when_it_returns(tiny, tmp_path):
    (tmp_path / "three.txt").write_text("the cat sat\na dog ran\nthe red car\n", encoding="utf-8")
    (tmp_path / "only-lock").mkdir()  # a build killed before it wrote anything but its lock
    (tmp_path / "only-lock" / LOCK).write_text(json.dumps({"pid": ended_pid(), "host": socket.gethostname()}))
    result = index_corpus(tiny, tmp_path / "three.txt", tmp_path / "only-lock", options=OPTIONS)
    assert result.texts == 3 and not (tmp_path / "only-lock" / LOCK).exists()
    assert json.loads((tmp_path / "only-lock" / MANIFEST).read_text(encoding="utf-8"))["complete"] is True


def test_resume_and_add_verify_every_byte_first(tiny, corpus, copy):
    data = next(n for n in recorded(copy) if n.startswith("occurrences.lance/data/"))
    flip(copy / data, (copy / data).stat().st_size // 3)  # same size: only a checksum tells
    with pytest.raises(InputError, match="damaged") as refused:
        index_corpus(tiny, corpus, copy, add=True)
    assert data in str(refused.value)
    flip(copy / data, (copy / data).stat().st_size // 3)
    manifest = json.loads((copy / MANIFEST).read_text(encoding="utf-8"))
    manifest["complete"] = False  # as an interrupted add leaves it
    (copy / MANIFEST).write_text(integrity.manifest_text(manifest), encoding="utf-8")
    flip(copy / data, 7)
    with pytest.raises(InputError, match="checksum"):
        index_corpus(tiny, corpus, copy, resume=True)


def table_bytes(index: Path) -> int:
    """The bytes on disk of both tables."""
    return sum((index / name).stat().st_size for t in ("texts", "occurrences") for name in table_files(index, t))


def test_an_add_leaves_only_what_the_latest_version_uses(tiny, corpus, tmp_path, monkeypatch):
    mine = tmp_path / "corpus"
    shutil.copytree(corpus, mine)
    index_corpus(tiny, mine / "part-0.txt", tmp_path / "pruned", options=OPTIONS)
    shutil.copytree(tmp_path / "pruned", tmp_path / "kept")
    assert index_corpus(tiny, mine, tmp_path / "pruned", add=True).added_texts == 20
    with monkeypatch.context() as patched:
        patched.setattr(integrity, "clean", lambda table: None)  # as LanceDB leaves it without its upkeep
        index_corpus(tiny, mine, tmp_path / "kept", add=True)
    pruned, kept = open_index(tmp_path / "pruned"), open_index(tmp_path / "kept")
    for table in ("texts", "occurrences"):
        assert len(getattr(pruned, table).list_versions()) == 1 < len(getattr(kept, table).list_versions())
        on_disk = table_files(tmp_path / "pruned", table)
        assert on_disk == [n for n in recorded(tmp_path / "pruned") if n.startswith(f"{table}.lance/")]
    assert table_bytes(tmp_path / "pruned") < table_bytes(tmp_path / "kept")
    for options in (SearchOptions(occurrence=(25, 1)), SearchOptions(occurrence=(3, 0), any_word=True)):
        ours = search_occurrences(tiny, pruned, options=options).to_dict()
        theirs = search_occurrences(tiny, kept, options=options).to_dict()
        ours.pop("index"), theirs.pop("index")
        assert ours == theirs and ours["hits"]
    assert verify_index(tmp_path / "pruned").whole


def test_an_interrupted_writes_data_files_are_removed_once_the_build_completes(tiny, copy, monkeypatch):
    more = copy.parent / "more.txt"
    more.write_text("the dog ran\na cat sat\n", encoding="utf-8")
    writes = []
    real = OccurrenceIndex.write_manifest

    def killed(self: OccurrenceIndex) -> None:
        writes.append(self.text_count)
        if len(writes) == 2:  # the add's plan was written, then a batch's rows, but not the manifest that commits them
            raise RuntimeError("killed")
        real(self)

    with monkeypatch.context() as patched:
        patched.setattr(OccurrenceIndex, "write_manifest", killed)
        with pytest.raises(RuntimeError, match="killed"):
            index_corpus(tiny, more, copy, add=True)
    before = {t: len(os.listdir(copy / f"{t}.lance" / "data")) for t in ("texts", "occurrences")}
    assert before == {"texts": 2, "occurrences": 2}  # the sealed index's (its batches compacted) and the uncommitted
    result = index_corpus(tiny, more, copy, resume=True)
    assert result.repaired == 6 and result.texts == 42 and result.added_texts == 2
    reopened = open_index(copy)
    for table in ("texts", "occurrences"):
        assert table_files(copy, table) == [n for n in recorded(copy) if n.startswith(f"{table}.lance/")]
        assert len(getattr(reopened, table).list_versions()) == 1
    assert verify_index(copy).whole


def test_an_extract_is_verified_by_the_same_checks(tiny, tiny_dir, corpus, tmp_path, capsys):
    out = tmp_path / "shards"
    extract(tiny, corpus / "part-0.txt", out, options=ExtractOptions(shard_texts=8))
    assert verify_extract(out).whole and verify_extract(out).files == 6  # 3 shards: vectors and rows each
    code, answer = run(capsys, "extract", str(out), "--verify")
    assert code == 0 and answer["whole"] and answer["kind"] == "extract"
    vectors = out / "vectors-00001.npy"
    flip(vectors, vectors.stat().st_size - 1)
    report = verify_extract(out)
    assert not report.whole and [p.file for p in report.problems] == ["vectors-00001.npy"]
    code, error = run(capsys, "extract", str(out), "--verify")
    assert code == 2 and "vectors-00001.npy" in error["message"] and "--resume" in error["hint"]
    assert extract(tiny, corpus / "part-0.txt", out, options=ExtractOptions(shard_texts=8), resume=True).rows
    assert verify_extract(out).whole
    assert run(capsys, "extract", str(out), "--verify", "--out", str(out))[0] == 2  # --out is for writing
