"""Every CLI command over hostile inputs: exit 0 or 2, never a traceback or an "unexpected error", no stray files.

The cases are generated from the click commands (`bertlens.cli.program`): each command's options and arguments are
found there and each gets hostile values of its kind (numbers: zero, negative, huge, not-a-number; paths: devices, a
FIFO, a folder, a file, a file's child, nothing; texts: empty, whitespace, NUL, undecodable, a megabyte). Each case
runs in a fresh temporary working folder; what a successful run may create is only what its --out (or --cache-dir)
names. A refusal says what to do (a hint); with --json (every other case) the result or the error is one JSON object
on stdout.

An option shared by several commands (the same flag, help and kind) is tried on the first of them. `pretrain` gets a
tokenizer folder that does not exist, so that a value it accepts fails right after its checks instead of training.
`serve` is only asked single requests (--get/--post): no server is started. One case runs as a real process, with
undecodable bytes in its command line and on standard input.

The corpus commands meet a real index too (one small index of the default model, built once and copied into each
such case's working folder): `search` (from a sentence and from an occurrence), `senses`, `index --add/--resume` into
it, `evaluate wic` on small WiC files (and damaged ones), and `serve --index` with hostile requests. Their own
options get numbers past every type (int32, int64, a 31-digit id), odd words (quotes, backslashes, LIKE's wildcards,
NUL) and paths of every kind.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from bertlens.cli import main, program
from bertlens.occurrences.baseline import CACHE as BASELINE

pytestmark = pytest.mark.slow  # ~700 cases, about a minute: CI runs them; `-m "not slow"` leaves them out

CORPUS = "\n".join(
    [
        "The dog chased the cat across the garden.",
        "A bank of the river was covered in snow.",
        "She went to the bank to take out money.",
        "Bread and butter make a simple meal.",
        "He bought fresh bread at the bakery.",
        "The cat slept on the warm windowsill.",
    ]
    * 3
)
MEGABYTE = "bank " * 200_000  # 1,000,000 characters

INTS = ["0", "-1", "10000000000", "true"]
FLOATS = ["nan", "-1", "1e400"]
PATHS = ["", "/dev/zero", "/dev/null", "fifo", "folder", "empty", "text.txt", "text.txt/below"]
TEXTS = ["", " \t\n", "a\x00b", "\udcff\udcfe"]  # the last: undecodable bytes in a command line
STDIN = [b"", b"\xff\xfe\xfd", b"a\x00b"]

# options whose value names a file or folder
PATH_OPTIONS = {
    "corpus",
    "--corpus",
    "--out",
    "--plot",
    "--words-file",
    "--rows",
    "--texts",
    "--cache-dir",
    "--calibrate",
    "--config",
    "--validation",
    "--tokenizer",
    "--save-config",
    "run_dir",
    "--word2vec",
    "--init-from",
    "source",
    "benchmarks",
    "model_a",
    "model_b",
}
OUTPUT_OPTIONS = {"--out", "--cache-dir", "--save-config", "--plot"}  # what a successful run may create
SKIPPED = {"--help", "--json", "--model", "--version", "--host", "--port", "--open"}  # --model: once, below
TEXT_COMMANDS = {"tokens", "explain", "layers", "plot embedding-layer", "plot contextual"}  # take '-' for stdin
# commands whose texts are tokenized only (no forward pass): a megabyte is cheap there
CHEAP_TEXT = {"tokens", "neighbors"}


@dataclass(frozen=True)
class Command:
    """A command's valid, cheap call: positionals in order and options, each replaceable."""

    name: str
    positionals: tuple[tuple[str, tuple[str, ...]], ...]
    options: tuple[str, ...] = ()


BASES = [
    Command("info", ()),
    Command("tokens", (("text", ("dog",)),)),
    Command("explain", (("text", ("dog",)),), ("--no-check",)),
    Command("vector", (("queries", ("dog",)),)),
    Command("export", (), ("--out", "exported", "--format", "npy")),
    Command("neighbors", (("queries", ("dog",)),), ("-k", "3")),
    Command("similarity", (("a", ("dog",)), ("b", ("cat",)))),
    Command("analogy", (("a", ("man",)), ("b", ("king",)), ("c", ("woman",))), ("-k", "3")),
    Command("evaluate", (("benchmarks", ("mc30",)),)),
    Command("layers", (("text", ("hi",)),)),
    Command("context", (("word", ("bank",)), ("sentences", ("the bank.", "a bank.")))),
    Command("distill", (("corpus", ("text.txt",)),), ("--words", "bread", "--max-texts", "6")),
    Command("extract", (("corpus", ("text.txt",)),), ("--out", "shards", "--no-progress")),
    Command("index", (("corpus", ("text.txt",)),), ("--out", "idx", "--no-progress")),
    Command("search", (("index", ("idx",)), ("example", ("the [bank] .",)))),  # no index there: refused, never a crash
    Command("senses", (("first", ("bank",)),), ("--corpus", "text.txt", "--k", "2", "--no-progress")),
    Command("same-sense", (("word", ("bank",)), ("sentence_1", ("the bank.",)), ("sentence_2", ("a bank.",)))),
    Command("precision", ()),
    Command("plot tokens", (("tokens", ("king", "queen", "man")),)),
    Command("plot contextual", (("texts", ("a dog.", "a cat.")),)),
    Command("plot trajectory", (("word", ("bank",)), ("sentences", ("the bank.", "a bank.")))),
    Command("plot positions", (), ("--limit", "8")),
    Command("plot embedding-layer", (("text", ("hi",)),), ("--no-check",)),
    Command("plot context", (("word", ("bank",)), ("sentences", ("the bank.", "a bank.")))),
    Command("plot contextuality", (("corpus", ("text.txt",)),), ("--max-texts", "6")),
    Command("serve", (), ("--get", "/api/info")),
    Command("train-tokenizer", (("corpus", ("text.txt",)),), ("--out", "tok", "--vocab-size", "120")),
    Command(
        "pretrain",
        (("corpus", ("text.txt",)),),
        ("--out", "run", "--tokenizer", "missing-tokenizer", "--stop-at-step", "1", "--no-progress"),
    ),
    Command("watch", (("run_dir", ("run",)),)),
    Command("extend", (), ("--words", "zzyzxq", "--out", "extended")),
    Command("extend-report", (), ("--words", "zzyzxq", "--init", "mean", "--texts", "text.txt", "--max-texts", "3")),
    Command("diff", (("model_a", ("tiny-a",)), ("model_b", ("tiny-b",))), ("--top", "3")),
]
# diff's two models, copied into each of its cases' working folder: tiny, of one vocabulary and two widths
DIFF_MODELS = {"tiny-a": "bert", "tiny-b": "albert"}


def _command(name: str) -> click.Command:
    """The click command `name` ("plot tokens": a group's subcommand)."""
    found: click.Command = program
    for word in name.split():
        assert isinstance(found, click.Group)
        sub = found.get_command(click.Context(found), word)
        assert sub is not None, name
        found = sub
    return found


def _command_names(group: click.Group = program, prefix: tuple[str, ...] = ()) -> Iterator[str]:
    for word in group.list_commands(click.Context(group)):
        sub = group.get_command(click.Context(group), word)
        if isinstance(sub, click.Group):
            yield from _command_names(sub, (*prefix, word))
        else:
            yield " ".join((*prefix, word))


def _name(param: click.Parameter) -> str:
    """An option's first flag, an argument's name."""
    return param.opts[0] if isinstance(param, click.Option) else str(param.name)


def _shared(param: click.Parameter) -> tuple[str, str, str]:
    """What makes two commands' options the same option: its flag, help and kind."""
    return (_name(param), getattr(param, "help", "") or "", param.type.name)


def _hostile(param: click.Parameter, command: str) -> list[str]:
    """Hostile values for one option or argument, by its kind."""
    name = _name(param)
    if (isinstance(param, click.Option) and param.is_flag) or isinstance(param.type, click.Choice) or name in SKIPPED:
        return []
    if isinstance(param.type, click.types.IntParamType):
        return INTS
    if isinstance(param.type, click.types.FloatParamType):
        return FLOATS
    if name in PATH_OPTIONS:
        return PATHS
    texts = TEXTS + (["-"] if command in TEXT_COMMANDS else [])
    return texts + ([MEGABYTE] if command in CHEAP_TEXT and isinstance(param, click.Argument) else [])


@dataclass(frozen=True)
class Case:
    command: Command
    argv: tuple[str, ...]
    stdin: bytes = b""
    outputs: tuple[str, ...] = ()  # what the call may create when it succeeds

    @property
    def id(self) -> str:
        shown = [a if len(a) < 24 else f"<{len(a)} chars>" for a in self.argv]
        return " ".join(repr(a) if not a.isprintable() or not a.strip() else a for a in shown) + (
            f" <stdin {self.stdin[:8]!r}>" if self.stdin else ""
        )


def _argv(command: Command, replace: str, value: str) -> tuple[list[str], list[str]]:
    """The call with one option or argument replaced; the outputs it names (positionals first, so that an option
    taking several values cannot swallow them)."""
    options = list(command.options)
    positionals = []
    for dest, values in command.positionals:
        positionals += [value] if dest == replace else list(values)
    if replace.startswith("-"):
        options += [replace, value]  # the last value of an option wins
    elif replace not in dict(command.positionals):
        positionals.append(value)  # an optional positional (extend's MODEL) that the base call leaves out
    outputs = [options[i + 1] for i, o in enumerate(options[:-1]) if o in OUTPUT_OPTIONS or o == "-o"]
    return [*command.name.split(), *positionals, *options], outputs


def cases() -> list[Case]:
    """Each option or argument over its hostile values, once: options shared by several commands (the same flag, help
    and kind) are tried on the first command that has them."""
    found, seen = [], set()
    for command in BASES:
        for param in _command(command.name).params:
            if isinstance(param, click.Option) and _shared(param) in seen:
                continue
            seen.add(_shared(param))
            name = _name(param)
            if name == "--post":
                for path, body in (("/api/neighbors", "{"), ("/api/tokens", '{"text": 5}'), ("/nowhere", "")):
                    found.append(Case(command, (*command.name.split(), "--post", path, body)))
                continue
            for value in _hostile(param, command.name):
                argv, outputs = _argv(command, name, value)
                found.append(Case(command, tuple(argv), outputs=tuple(outputs)))
                if value == "-":
                    found += [Case(command, tuple(argv), data) for data in STDIN]
    found.append(Case(BASES[0], ("info", "--model", "fifo")))
    for path in ("/dev/null", "/dev/zero", "text.txt", "empty", "", " "):
        found.append(Case(BASES[0], ("info", "--model", path)))
    diff = next(c for c in BASES if c.name == "diff")  # its layers compared too: the options only that reads
    for flag in ("--layer", "--layer-b", "--occurrences", "-k"):
        for value in INTS:
            argv = ("diff", "tiny-a", "tiny-b", "--contextual", "--corpus", "text.txt", "--occurrences", "40")
            found.append(Case(diff, (*argv, flag, value)))
    # every other case asks for JSON, so that both the tables and the JSON objects meet every kind of input
    return [dataclasses.replace(c, argv=(*c.argv, "--json")) if i % 2 else c for i, c in enumerate(found)]


# --- the corpus commands against a real index ---------------------------------------------------------------------

INDEX = "built-index"  # a copy of the module's index, in the working folder of each case that names it
WIC_TRAIN, WIC_DEV = "wic/train/train.data.txt", "wic/dev/dev.data.txt"
WIC_LINES = [
    "bank\tN\t3-1\tI sat on the bank of the river .\tThe bank lent me money .",
    "bank\tN\t1-1\tThe bank was closed .\tThe bank approved the loan .",
    "bread\tN\t0-3\tBread is good .\tHe ate fresh bread .",
    "dog\tN\t1-1\tThe dog barked .\tA dog slept .",
]
WIC_FILES = {
    WIC_TRAIN: "\n".join(WIC_LINES) + "\n",
    "wic/train/train.gold.txt": "F\nT\nT\nF\n",
    WIC_DEV: "\n".join(WIC_LINES[:2]) + "\n",
    "wic/dev/dev.gold.txt": "F\nT\n",
    "wic/bad/fields.data.txt": "bank\tN\t3-1\tone sentence only\n",
    "wic/bad/fields.gold.txt": "T\n",
    "wic/bad/index.data.txt": "bank\tN\t99999999999999999999-1\tI sat .\tThe bank .\n",
    "wic/bad/index.gold.txt": "T\n",
    "wic/bad/label.data.txt": WIC_LINES[0] + "\n",
    "wic/bad/label.gold.txt": "maybe\n",
    "wic/bad/short.data.txt": "\n".join(WIC_LINES) + "\n",
    "wic/bad/short.gold.txt": "T\n",
    "wic/bad/digits.data.txt": "bank\tN\t\u0663-\u0661\tI sat on the bank of the river .\tThe bank lent me money .\n",
    "wic/bad/digits.gold.txt": "T\n",
    "wic/same/train.data.txt": "\n".join(WIC_LINES) + "\n",
    "wic/same/train.gold.txt": "T\nT\nT\nT\n",  # one label only: no read-out can be fitted
}
WIC_PATHS = [*(f"wic/bad/{name}.data.txt" for name in ("fields", "index", "label", "short", "digits")),
             "wic/same/train.data.txt", "wic/bad", "wic", "wic/dev/dev.gold.txt"]  # fmt: skip
BIG_INTS = ["2147483648", "9223372036854775808", "-9223372036854775809", "1" * 31]  # past int32, int64, any
ODD_WORDS = ["'", "\\", "%", "_", "' OR '1'='1", "bank\x00", "[bank]", "\\[bank\\]", "[", "b\u0301ank", "\u202ebank"]
FROM_VALUES = ["1000000000000000000000000000000:1", "1:1e30", "9223372036854775808:1", "1:9223372036854775807",
               "0:2147483648", "99999:0", "0:99999", "-1:1", "1:-1", "nan:1", "inf:1", ":", "1:2:3", "\u0661:\u0661",
               "0x1:1", "1_0:1", " 0 : 1 "]  # fmt: skip
HOSTILE_BODIES = [
    ("/api/search", '{"occurrence": [1e30, 1]}'),
    ("/api/search", '{"occurrence": [1000000000000000000000000000000, 1]}'),
    ("/api/search", '{"occurrence": [0, 9223372036854775808]}'),
    ("/api/search", '{"occurrence": [-1, -1]}'),
    ("/api/search", '{"example": "the [\'] ."}'),
    ("/api/search", '{"example": "a \\u0000 [bank] .", "exclude_same_text": true}'),
    ("/api/search", '{"example": "the [bank] .", "layer": 1e400}'),
    ("/api/senses", '{"word": "bank", "seed": 99999999999999999999}'),
    ("/api/senses", '{"word": "\\udcff"}'),
    ("/api/senses", '{"word": ["bank"]}'),
    ("/api/indexes", ""),
]


@dataclass(frozen=True)
class CorpusBase:
    """A corpus command's valid call against the index, and its own options to make hostile (each once more here,
    though another command may share them: what they reach differs)."""

    command: Command
    targets: tuple[str, ...]


CORPUS_BASES = [
    CorpusBase(
        Command("search", (("index", (INDEX,)), ("example", ("the [bank] .",)))),
        ("index", "example", "--word", "--layer", "-k"),
    ),
    CorpusBase(Command("search", (("index", (INDEX,)),), ("--from", "0:1")), ("--from", "--layer", "-k")),
    CorpusBase(
        Command("senses", (("first", (INDEX,)), ("word", ("bank",))), ("--k", "2", "--no-progress")),
        ("first", "word", "--k", "--layer", "--max-occurrences", "--typical", "--words", "--seed"),
    ),
    CorpusBase(
        Command("index", (("corpus", ("text.txt",)),), ("--out", INDEX, "--add", "--no-progress")),
        ("corpus", "--max-texts", "--layers"),
    ),
    CorpusBase(Command("index", (("corpus", ("text.txt",)),), ("--out", INDEX, "--resume", "--no-progress")), ()),
    CorpusBase(
        Command("evaluate", (("benchmarks", ("wic", WIC_DEV)),), ("--train", WIC_TRAIN, "--no-progress")),
        ("--train",),
    ),
    CorpusBase(Command("serve", (), ("--index", INDEX, "--get", "/api/indexes")), ("--index",)),
]


def _corpus_values(param: click.Parameter, name: str, command: str) -> list[str]:
    if name == "--from":
        return FROM_VALUES
    if isinstance(param.type, click.types.IntParamType) or name in ("--k", "--layers"):
        return INTS + BIG_INTS
    if name == "corpus":
        return [*PATHS, WIC_DEV]
    if name in PATH_OPTIONS or name in ("index", "first", "--index"):
        return [*PATHS, INDEX + "/occurrences.lance", INDEX + "/bertlens-index.json", WIC_DEV]
    return _hostile(param, command) + ODD_WORDS


def corpus_cases() -> list[Case]:
    """Each corpus command's own options over hostile values, against a real index (its base call once as it is)."""
    found = []
    for base in CORPUS_BASES:
        command = base.command
        argv, outputs = _argv(command, "", "")
        found.append(Case(command, tuple(a for a in argv if a), outputs=tuple(outputs)))
        params = _command(command.name).params
        for target in base.targets:
            param = next(p for p in params if target in getattr(p, "opts", ()) or p.name == target)
            for value in _corpus_values(param, target, command.name):
                argv, outputs = _argv(command, target, value)
                found.append(Case(command, tuple(argv), outputs=tuple(outputs)))
    wic = next(b.command for b in CORPUS_BASES if b.command.name == "evaluate")
    for path in [*PATHS, *WIC_PATHS]:
        found.append(Case(wic, ("evaluate", "wic", path, "--train", WIC_TRAIN, "--no-progress")))
        found.append(Case(wic, ("evaluate", "wic", WIC_DEV, "--train", path, "--no-progress")))
    found.append(Case(wic, ("evaluate", "wic", WIC_DEV, "--no-progress")))  # no training split beside it
    serve = next(b.command for b in CORPUS_BASES if b.command.name == "serve")
    for path, body in HOSTILE_BODIES:
        request = ("--get", path) if not body else ("--post", path, body)
        found.append(Case(serve, ("serve", "--index", INDEX, *request)))
    return [dataclasses.replace(c, argv=(*c.argv, "--json")) if i % 2 else c for i, c in enumerate(found)]


CASES = cases()
CORPUS_CASES = corpus_cases()


def test_every_command_is_fuzzed():
    assert sorted(_command_names()) == sorted(c.name for c in BASES)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Path:
    """A fresh working folder: a corpus file, a folder with a text, an empty folder, a FIFO (and diff's models)."""
    case = getattr(getattr(request.node, "callspec", None), "params", {}).get("case")
    if case is not None and case.command.name == "diff":
        tiny = request.getfixturevalue("tiny_dirs")
        for name, family in DIFF_MODELS.items():
            shutil.copytree(tiny[family], tmp_path / name)
    (tmp_path / "text.txt").write_text(CORPUS + "\n", encoding="utf-8")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "inside.txt").write_text(CORPUS + "\n", encoding="utf-8")
    (tmp_path / "empty").mkdir()
    os.mkfifo(tmp_path / "fifo")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="module")
def built_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One small index of the default model (its first and last layers), built once for the module."""
    from bertlens import load_model
    from bertlens.occurrences.build import IndexOptions, index_corpus

    root = tmp_path_factory.mktemp("corpus-index")
    (root / "corpus.txt").write_text(CORPUS + "\n", encoding="utf-8")
    index_corpus(load_model(), root / "corpus.txt", root / INDEX, options=IndexOptions(layers=(1, -1)))
    return root / INDEX


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.lstat().st_size, p.lstat().st_mtime_ns)
        for p in root.rglob("*")
        if not p.is_dir() or p.is_symlink()
    } | {str(p.relative_to(root)) + "/": (0, 0) for p in root.rglob("*") if p.is_dir()}


def _within(path: Path, output: Path) -> bool:
    """Whether `path` is the output, inside it, or one of the folders made for it."""
    return path == output or output in path.parents or path in output.parents


def _run_in_process(case: Case, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(case.stdin)))
    try:
        code = main(list(case.argv))
    except SystemExit as exc:  # nothing should exit past main
        code = exc.code if isinstance(exc.code, int) else 2
    captured = capsys.readouterr()
    if "--json" in case.argv and code == 0:
        json.loads(captured.out)  # the result as one JSON document
    if "--json" in case.argv and code == 2:
        assert set(json.loads(captured.out)) == {"error", "message", "hint"}, captured.out[-2000:]
    return code, captured.err


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(case: Case, workdir: Path, capsys, monkeypatch, kept: tuple[str, ...] = ()):
    """`kept`: files a run may write whatever its outcome (an index's cache of its baselines)."""
    before = _snapshot(workdir)
    code, err = _run_in_process(case, capsys, monkeypatch)
    assert code in (0, 2), err[-2000:]
    assert "Traceback" not in err and "unexpected error" not in err, err[-2000:]
    if code == 2 and "Usage:" not in err:  # a refusal of bertlens (not click's) says what to do
        assert "\n  hint: " in err, err[-2000:]
    after = _snapshot(workdir)
    allowed = [Path(o) for o in case.outputs if code == 0 and o.strip()] + [Path(k) for k in kept]
    changed = set(after) ^ set(before) | {p for p in before if p in after and before[p] != after[p]}
    stray = sorted(p for p in changed if not any(_within(Path(p.rstrip("/")), out) for out in allowed))
    assert not stray, f"exit {code}: stray or changed files {stray}"


@pytest.mark.parametrize("case", CORPUS_CASES, ids=[c.id for c in CORPUS_CASES])
def test_hostile_input_to_a_corpus_command(case: Case, workdir: Path, built_index: Path, capsys, monkeypatch):
    """As test_hostile_input, with the index copied into the working folder (a search may keep its baselines there)
    and small WiC files beside it."""
    shutil.copytree(built_index, workdir / INDEX)
    for name, text in WIC_FILES.items():
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_text(text, encoding="utf-8")
    test_hostile_input(case, workdir, capsys, monkeypatch, kept=(f"{INDEX}/{BASELINE}",))


def test_undecodable_bytes_in_a_real_command_line(workdir):
    """Bytes that are not UTF-8, as a shell passes them, in an argument and on standard input."""
    before = _snapshot(workdir)
    for argv, data in ([b"neighbors", b"\xff\xfe", b"--json"], b""), ([b"tokens", b"-", b"--json"], b"\xff\x00"):
        done = subprocess.run([sys.executable.encode(), b"-m", b"bertlens", *argv], input=data, capture_output=True)
        assert done.returncode == 2 and b"Traceback" not in done.stderr
        assert json.loads(done.stdout)["error"] == "InputError"
    assert _snapshot(workdir) == before


# --- paths that exist but cannot be read or written ---------------------------------------------------------------
# The tests run as root, which reads and writes past any permission. These cases run in one child process that has
# given up that power (setpriv drops CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH), so modes 000 and 0555 bind it as they
# bind a user. The child runs every case in-process and reports each one's exit code, output and new files.

LOCKED = ["locked.txt", "locked"]  # a file and a folder of mode 000
READ_ONLY_OUT = "read-only/out"  # inside a folder of mode 0555

_CHILD = r"""
import contextlib, io, json, os, sys
from bertlens.cli import main

def files():
    found = set()
    for root, dirs, names in os.walk("."):
        found.update(os.path.join(root, n) for n in dirs + names)
    return found

results = []
for argv in json.loads(sys.stdin.read()):
    before, out, err = files(), io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    results.append({"code": code, "out": out.getvalue()[-2000:], "err": err.getvalue()[-2000:],
                    "new": sorted(files() - before)})
print(json.dumps(results))
"""


def permission_cases() -> list[Case]:
    """Every path option or argument given a locked file and a locked folder; every output option a read-only place."""
    found, seen = [], set()
    for command in BASES:
        for param in _command(command.name).params:
            name = _name(param)
            if (isinstance(param, click.Option) and _shared(param) in seen) or name not in PATH_OPTIONS:
                continue
            seen.add(_shared(param))
            for value in [READ_ONLY_OUT] if name in OUTPUT_OPTIONS else LOCKED:
                argv, outputs = _argv(command, name, value)
                found.append(Case(command, (*argv, "--json"), outputs=tuple(outputs)))
    found += [Case(BASES[0], ("info", "--model", path, "--json")) for path in LOCKED]
    return found


PERMISSION_CASES = permission_cases()


@pytest.fixture(scope="module")
def permission_results(tmp_path_factory: pytest.TempPathFactory, tiny_dirs: dict[str, Path]) -> dict[str, dict]:
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("root reads and writes past permissions, and setpriv is missing to drop that power")
    root = tmp_path_factory.mktemp("permissions")
    for name, family in DIFF_MODELS.items():
        shutil.copytree(tiny_dirs[family], root / name)
    (root / "text.txt").write_text(CORPUS + "\n", encoding="utf-8")
    (root / "locked.txt").write_text(CORPUS + "\n", encoding="utf-8")
    (root / "locked").mkdir()
    (root / "locked" / "inside.txt").write_text(CORPUS + "\n", encoding="utf-8")
    (root / "read-only").mkdir()
    (root / "locked.txt").chmod(0)
    (root / "locked").chmod(0)
    (root / "read-only").chmod(0o555)
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", _CHILD],
            input=json.dumps([list(c.argv) for c in PERMISSION_CASES]),
            capture_output=True,
            text=True,
            cwd=root,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
            timeout=600,
        )
    finally:
        for path in ("locked.txt", "locked", "read-only"):
            (root / path).chmod(0o755)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(zip([c.id for c in PERMISSION_CASES], json.loads(done.stdout), strict=True))


@pytest.mark.parametrize("case", PERMISSION_CASES, ids=[c.id for c in PERMISSION_CASES])
def test_paths_that_cannot_be_read_or_written(case: Case, permission_results: dict[str, dict]):
    result = permission_results[case.id]
    code, err = result["code"], result["err"]
    assert code in (0, 2), err
    assert "Traceback" not in err and "unexpected error" not in err, err
    if code == 2:
        assert "\n  hint: " in err, err
        assert set(json.loads(result["out"])) == {"error", "message", "hint"}
    allowed = [Path(o) for o in case.outputs if code == 0]
    stray = [p for p in result["new"] if not any(_within(Path(p), Path(".") / out) for out in allowed)]
    assert not stray, f"exit {code}: stray files {stray}"
