"""The README cannot rot: every ```sh block runs as written, in order, in one new empty folder (as sqlite-utils and
datasette test their docs), through bash -e with this environment's `bertlens` first on PATH. Each block must exit 0,
and every file or folder a command says it writes (`--out X`, `-o X`, `> X`) must exist afterwards and not be empty.

Blocks run in README order, sharing the folder: a block may use what an earlier one wrote, as a reader would. Every
block is slow (each command is a cold start, a few with torch: the tour takes ~40 s, the training run and the
pictures longer) except those named fast below, which must use nothing a slow block writes; that keeps
`pytest -m "not slow"` honest. A test selected alone first runs the earlier blocks it may depend on: all of them for a
slow block, the fast ones for a fast block. Lines a test cannot run (the install, the test command itself, a server
that runs until Ctrl-C) are skipped by name below, each with its reason.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent  # this environment's scripts: `bertlens` lives here

# Whole blocks not run, by the heading they sit under, and why.
SKIP_BLOCKS = {
    "Install": "it installs the package: this suite runs inside that install",
    "Run the tests": "it runs this suite (tests/test_docs.py checks CI runs exactly this command)",
}
# Blocks that run in a few seconds and use no file another block writes, by heading; every other block is slow.
FAST_BLOCKS = {"The web explorer"}
SERVER_REASON = "a server runs until Ctrl-C; the --get/--post lines run the same app, and tests/test_web_*.py serve it"
OUTPUT_FLAGS = ("--out", "-o")


@dataclass(frozen=True)
class Block:
    index: int  # among the README's ```sh blocks, from 0
    heading: str  # the `##` heading it sits under
    commands: tuple[str, ...]  # logical lines: `\` continuations joined

    @property
    def name(self) -> str:
        return f"{self.index}-{re.sub(r'[^a-z0-9]+', '-', self.heading.lower()).strip('-')}"


def sh_blocks(text: str) -> list[Block]:
    """The README's ```sh blocks in order, each with its heading and its commands."""
    blocks: list[Block] = []
    heading = ""
    lines = iter(text.splitlines())
    for line in lines:
        if line.startswith("## "):
            heading = line[3:].strip()
        elif line.strip() == "```sh":
            body: list[str] = []
            for inner in lines:
                if inner.strip() == "```":
                    break
                body.append(inner)
            commands = "\n".join(body).replace("\\\n", " ").splitlines()
            blocks.append(Block(len(blocks), heading, tuple(c for c in commands if c.strip())))
    return blocks


def shell_words(command: str) -> list[str]:
    """A line as the shell splits it: quotes removed, the comment dropped, `>` and `|` as words of their own."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def skip_reason(command: str) -> str | None:
    """Why a line is not run, or None: `bertlens serve` without --get or --post runs until it is stopped."""
    words = shell_words(command)
    if words[:2] == ["bertlens", "serve"] and not {"--get", "--post"} & set(words):
        return SERVER_REASON
    return None


def outputs(command: str) -> list[str]:
    """What a command says it writes: the value of --out / -o, and the target of a `>` redirection."""
    words = shell_words(command)
    return [words[i + 1] for i, word in enumerate(words[:-1]) if word in (*OUTPUT_FLAGS, ">")]


BLOCKS = sh_blocks(README.read_text(encoding="utf-8"))


def test_the_readme_has_its_blocks():
    headings = {block.heading for block in BLOCKS}
    assert set(SKIP_BLOCKS) | FAST_BLOCKS <= headings  # a renamed heading must not silently drop a block from the test
    assert any(skip_reason(c) for block in BLOCKS for c in block.commands)  # the server lines are still there


def test_nothing_in_the_readme_needs_files_a_reader_lacks():
    for block in BLOCKS:
        for command in block.commands:
            for absent in ("../shared/", "corpus.txt", "path/to/"):
                assert absent not in command, (block.heading, command)


def test_what_a_line_says_it_writes():
    assert outputs("bertlens export --format word2vec --out vectors/   # for gensim > numpy") == ["vectors/"]
    assert outputs("printf 'a > b\\n' > words.txt  # one word > per line") == ["words.txt"]
    assert outputs("bertlens extract sample -o shards/") == ["shards/"]
    assert skip_reason("bertlens serve --open   # --get") == SERVER_REASON
    assert skip_reason('bertlens serve --post /api/neighbors \'{"queries": ["dog"]}\'') is None


class Workspace:
    """One folder for the whole README, and which blocks have run in it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.done: set[int] = set()
        self.env = {key: value for key, value in os.environ.items() if key != "BERTLENS_MODEL"}
        self.env.update(PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", MPLBACKEND="Agg", COLUMNS="120")

    def run(self, block: Block) -> None:
        if block.index in self.done:
            return
        self.done.add(block.index)
        script = []
        for command in block.commands:
            reason = skip_reason(command)
            script.append(": " + shlex.quote(f"skipped ({reason}): {command}") if reason else command)
        result = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-x", "-c", "\n".join(script)],
            cwd=self.folder,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, f"README block under '{block.heading}' failed:\n{result.stdout}\n{result.stderr}"
        for command in block.commands:
            if skip_reason(command):
                continue
            for written in outputs(command):
                path = self.folder / written
                assert path.exists(), f"{command!r} did not write {written}"
                assert any(path.iterdir()) if path.is_dir() else path.stat().st_size > 0, f"{written} is empty"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return Workspace(tmp_path_factory.mktemp("readme"))


def block_param(block: Block) -> object:
    if block.heading in SKIP_BLOCKS:
        return pytest.param(block, id=block.name, marks=pytest.mark.skip(reason=SKIP_BLOCKS[block.heading]))
    marks = [] if block.heading in FAST_BLOCKS else [pytest.mark.slow]
    return pytest.param(block, id=block.name, marks=marks)


@pytest.mark.parametrize("block", [block_param(block) for block in BLOCKS])
def test_readme_block_runs_as_written(block: Block, workspace: Workspace):
    fast = block.heading in FAST_BLOCKS
    for earlier in BLOCKS[: block.index]:  # what a reader has made by now (for a test selected alone)
        if earlier.heading not in SKIP_BLOCKS and (earlier.heading in FAST_BLOCKS or not fast):
            workspace.run(earlier)
    workspace.run(block)


# ```python blocks that use what the commands above them made, by heading: each runs in the same folder, after every
# block up to its own section's commands (the first ```python block, under "Python", runs in tests/test_docs.py).
PYTHON_BLOCKS = {"A corpus: where else is a word used like this?"}


def python_blocks(text: str) -> list[tuple[str, str]]:
    """The README's ```python blocks with the `##` heading each sits under."""
    found: list[tuple[str, str]] = []
    heading, body = "", None
    for line in text.splitlines():
        if body is not None:
            if line.strip() == "```":
                found.append((heading, "\n".join(body) + "\n"))
                body = None
            else:
                body.append(line)
        elif line.startswith("## "):
            heading = line[3:].strip()
        elif line.strip() == "```python":
            body = []
    return found


@pytest.mark.slow
@pytest.mark.parametrize("heading", sorted(PYTHON_BLOCKS))
def test_readme_python_block_runs_after_its_commands(heading: str, workspace: Workspace):
    code = [c for h, c in python_blocks(README.read_text(encoding="utf-8")) if h == heading]
    assert len(code) == 1, f"one ```python block expected under '{heading}'"
    for block in BLOCKS:
        if block.heading not in SKIP_BLOCKS:
            workspace.run(block)
        if block.heading == heading:
            break
    result = subprocess.run(
        [sys.executable, "-c", code[0]], cwd=workspace.folder, env=workspace.env, capture_output=True, text=True
    )
    assert result.returncode == 0, f"README's Python under '{heading}' failed:\n{result.stdout}\n{result.stderr}"
    assert result.stdout.strip(), "the example prints its results"
