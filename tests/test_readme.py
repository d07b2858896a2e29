"""The README cannot rot: every ```sh and ```python block runs as written, top to bottom, in ONE new empty folder, as a
reader who follows it runs them (as sqlite-utils and datasette test their docs). Shell blocks run through bash -e with
this environment's `bertlens` first on PATH, Python blocks in this environment's Python; each must exit 0, and every
file or folder a command says it writes (`--out X`, `-o X`, `> X`) must exist afterwards and not be empty. A failing
block names its page, its line and the command or statement that failed.

The documentation pages in PAGES run after the README, in the same folder and in their order: they go on from what the
tour made (the export, the models with new words).

Blocks share the folder: a block may use what an earlier one wrote, and must not trip over it (an export into a folder
the tour filled is refused, as it would be for the reader). Every block is slow (each command is a cold start, a few
with torch: the tour takes ~40 s, the training run and the pictures longer) except those named fast below, which must
use nothing a slow block writes; that keeps `pytest -m "not slow"` honest. A test selected alone first runs the earlier
blocks it may depend on: all of them for a slow block, the fast ones for a fast block. Lines a test cannot run (the
install, the test command itself, a server that runs until Ctrl-C) are skipped by name below, each with its reason;
a line that runs for minutes (the training demo) runs shortened, as SHORTENED says.
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
# documentation pages whose blocks run after the README's, in the same folder, in this order
PAGES = ("docs/plots.md", "docs/extend.md")
BIN = Path(sys.executable).parent  # this environment's scripts: `bertlens` lives here

# Whole blocks not run, by the heading they sit under, and why.
SKIP_BLOCKS = {
    "Install": "it installs the package: this suite runs inside that install",
    "Run the tests": "it runs this suite (tests/test_docs.py checks CI runs exactly this command)",
}
# Blocks that run in a few seconds and use no file another block writes, by heading; every other block is slow.
FAST_BLOCKS = {"The web explorer"}
SERVER_REASON = "a server runs until Ctrl-C; the --get/--post lines run the same app, and tests/web/ serves it"
# Lines run shortened, and why: the demo trains for minutes (bench/demo_levers.py runs it at length); here it runs a
# few steps, enough for every file and report it makes.
SHORTENED = {"--preset demo": "--preset demo --max-steps 40 --warmup-steps 4 --checkpoint-every 20"}
OUTPUT_FLAGS = ("--out", "-o")
FAILED_AT = "readme-test: failed at line"  # what a shell block's ERR trap prints, with the line


@dataclass(frozen=True)
class Command:
    line: int  # its first line in the page, from 1
    lines: int  # physical lines (a `\` continuation makes more than one)
    text: str  # the logical line, continuations joined


@dataclass(frozen=True)
class Block:
    page: str  # the page's path from the repository root
    index: int  # among every runnable block of every page, in running order, from 0
    language: str  # "sh" or "python"
    heading: str  # the heading it sits under
    first_line: int  # the line of its first body line in the page, from 1
    body: tuple[str, ...]  # its lines as written

    @property
    def name(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.heading.lower()).strip("-")
        return f"{Path(self.page).stem}-{self.index}-{self.language}-{slug}"

    @property
    def where(self) -> str:
        return f"{self.page}, the {self.language} block under '{self.heading}' (line {self.first_line})"

    @property
    def commands(self) -> tuple[Command, ...]:
        """A shell block's logical lines, each with where it starts (blank lines left out)."""
        found: list[Command] = []
        start, parts = 0, []
        for offset, line in enumerate(self.body):
            if not parts:
                start = offset
            parts.append((line[:-1] if line.endswith("\\") else line).strip())
            if not line.endswith("\\"):
                text = " ".join(parts)
                if text.strip():
                    found.append(Command(self.first_line + start, offset - start + 1, text))
                parts = []
        return tuple(found)

    @property
    def slow(self) -> bool:
        return self.heading not in FAST_BLOCKS

    @property
    def skipped(self) -> str | None:
        return SKIP_BLOCKS.get(self.heading)


def page_blocks(page: str, text: str, first_index: int = 0) -> list[Block]:
    """A page's ```sh and ```python blocks in order, each with its heading and where it starts."""
    blocks: list[Block] = []
    heading = ""
    lines = text.splitlines()
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        if re.match(r"#{1,4} ", line):
            heading = line.lstrip("#").strip()
        elif line.strip() in ("```sh", "```python"):
            first = number + 1  # 1-based line of the body's first line
            body: list[str] = []
            while number < len(lines) and lines[number].strip() != "```":
                body.append(lines[number])
                number += 1
            number += 1
            language = line.strip()[3:]
            blocks.append(Block(page, first_index + len(blocks), language, heading, first, tuple(body)))
    return blocks


def all_blocks() -> list[Block]:
    """The README's blocks, then each page's in PAGES, numbered in running order."""
    blocks: list[Block] = []
    for page in ("README.md", *PAGES):
        blocks += page_blocks(page, (ROOT / page).read_text(encoding="utf-8"), len(blocks))
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


def shell_script(block: Block) -> str:
    """The block as bash runs it: each line at its own line number in the page (so that $LINENO is the page's line),
    skipped lines as `:` with their reason, and an ERR trap that says which line failed."""
    script = [""] * (block.first_line - 1) + list(block.body)
    for command in block.commands:
        reason = skip_reason(command.text)
        if reason:
            at = command.line - 1
            script[at : at + command.lines] = [": " + shlex.quote(f"skipped ({reason}): {command.text}")] + [""] * (
                command.lines - 1
            )
        for long, short in SHORTENED.items():
            at = command.line - 1
            script[at] = script[at].replace(long, short)
    script[0] = f"trap 'echo \"{FAILED_AT} $LINENO\" >&2' ERR"  # line 1 is above the block: the fence at the least
    return "\n".join(script)


def failed_line(block: Block, output: str) -> str:
    """The line of the page that failed, with its text, from a shell trap's report or a Python traceback."""
    found = re.findall(rf"{FAILED_AT} (\d+)", output) + re.findall(
        rf'File "{re.escape(block.page)}", line (\d+)', output
    )
    if not found:
        return f"{block.where} failed"
    line = int(found[-1])
    command = next((c for c in block.commands if c.line <= line < c.line + c.lines), None)
    if block.language == "sh" and command is not None:  # bash names a continued command's last line: say its first
        line, text = command.line, command.text
    else:
        text = block.body[line - block.first_line] if 0 <= line - block.first_line < len(block.body) else ""
    return f"{block.page}:{line} failed: {text.strip()}\n  ({block.where})"


class Workspace:
    """One folder for the README and its pages, and which blocks have run in it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.done: set[int] = set()
        self.env = {key: value for key, value in os.environ.items() if key != "BERTLENS_MODEL"}
        self.env.update(PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", MPLBACKEND="Agg", COLUMNS="120")

    def run(self, block: Block) -> None:
        if block.index in self.done:
            return
        self.done.add(block.index)
        if block.language == "sh":
            argv = ["bash", "-e", "-o", "pipefail", "-x", "-c", shell_script(block)]
            source = None
        else:  # compiled under the page's name, at its own lines: a traceback names the page's line
            argv = [sys.executable, "-c", "import sys; exec(compile(sys.stdin.read(), sys.argv[1], 'exec'), {})"]
            argv.append(block.page)
            source = "\n" * (block.first_line - 1) + "\n".join(block.body) + "\n"
        result = subprocess.run(
            argv,
            cwd=self.folder,
            env=self.env,
            input=source,
            stdin=None if source is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=600,
        )
        output = f"{result.stdout}\n{result.stderr}"
        assert result.returncode == 0, f"{failed_line(block, output)}\n\n{output[-6000:]}"
        if block.language == "python":
            if any("print(" in line for line in block.body):
                assert result.stdout.strip(), f"{block.where} prints nothing"
            return
        for command in block.commands:
            if skip_reason(command.text):
                continue
            for written in outputs(command.text):
                path = self.folder / written
                assert path.exists(), f"{block.page}:{command.line}: {command.text!r} did not write {written}"
                assert any(path.iterdir()) if path.is_dir() else path.stat().st_size > 0, f"{written} is empty"


BLOCKS = all_blocks()


def test_the_readme_and_its_pages_have_their_blocks():
    headings = {block.heading for block in BLOCKS if block.page == "README.md"}
    assert set(SKIP_BLOCKS) | FAST_BLOCKS <= headings  # a renamed heading must not silently drop a block from the test
    assert any(skip_reason(c.text) for block in BLOCKS for c in block.commands)  # the server lines are still there
    assert {"sh", "python"} <= {block.language for block in BLOCKS if block.page == "README.md"}
    for page in PAGES:
        assert any(block.page == page for block in BLOCKS), f"{page} has no block to run"


def test_nothing_in_the_readme_needs_files_a_reader_lacks():
    for block in BLOCKS:
        for line in block.body:
            for absent in ("../shared/", "corpus.txt", "path/to/"):
                assert absent not in line.split("#")[0], (block.where, line)


def test_what_a_line_says_it_writes():
    assert outputs("bertlens export --format word2vec --out vectors/   # for gensim > numpy") == ["vectors/"]
    assert outputs("printf 'a > b\\n' > words.txt  # one word > per line") == ["words.txt"]
    assert outputs("bertlens extract sample -o shards/") == ["shards/"]
    assert skip_reason("bertlens serve --open   # --get") == SERVER_REASON
    assert skip_reason('bertlens serve --post /api/neighbors \'{"queries": ["dog"]}\'') is None


def test_a_failing_line_is_named_with_its_page_and_line(tmp_path):
    """The runner's own report: a block whose second command fails names that command and its line in the page."""
    page = "## Somewhere\n\ntext\n\n```sh\ntrue\nfalse \\\n  --no-such-flag\ntrue\n```\n\n"
    page += "```python\nx = 1\nraise SystemExit(x / 0)\n```\n"
    shell, python = page_blocks("page.md", page)
    assert [(c.line, c.lines) for c in shell.commands] == [(6, 1), (7, 2), (9, 1)]
    workspace = Workspace(tmp_path)
    for block, line, text in ((shell, 7, "false --no-such-flag"), (python, 14, "raise SystemExit(x / 0)")):
        with pytest.raises(AssertionError) as failed:
            workspace.run(block)
        assert f"page.md:{line} failed: {text}" in str(failed.value)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return Workspace(tmp_path_factory.mktemp("readme"))


def block_param(block: Block) -> object:
    if block.skipped:
        return pytest.param(block, id=block.name, marks=pytest.mark.skip(reason=block.skipped))
    return pytest.param(block, id=block.name, marks=[pytest.mark.slow] if block.slow else [])


@pytest.mark.parametrize("block", [block_param(block) for block in BLOCKS])
def test_block_runs_as_written_after_the_ones_above_it(block: Block, workspace: Workspace):
    for earlier in BLOCKS[: block.index]:  # what a reader has made by now (for a test selected alone)
        if not earlier.skipped and (block.slow or not earlier.slow):
            workspace.run(earlier)
    workspace.run(block)
