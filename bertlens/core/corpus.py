"""Reading text corpora: a file or a folder of files, plain text or WikiExtractor `<doc>` blocks, streamed.

Each non-blank line is one text (a paragraph in WikiText and WikiExtractor dumps; WikiText headings ` = Title = ` and
`<doc …>` / `</doc>` markers are skipped). Files are read in sorted path order, line by line, so memory stays flat
whatever the corpus size; invalid UTF-8 is an error that names the file and line.

The names `sample` and `genesis` (the strs, exactly) are the corpora bertlens ships: `sample` is the raw WikiText-2
validation split, 1.1 MB of encyclopaedia text (bertlens/data/sample/, CC BY-SA 3.0); `genesis` is the Book of Genesis
in the King James Version, 197 kB of text of another kind, for continuing a model on new text (bertlens/data/genesis/,
public domain); each has its README beside it. A name always means the bundled corpus, even where the current folder
holds a file or folder of that name: that one is `./sample` (or a `pathlib.Path`, which is always a path).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError
from .paths import INPUT, user_path

SAMPLE = "sample"  # the name of the bundled corpus wherever a corpus path is taken
SAMPLE_FILE = Path(__file__).resolve().parent.parent / "data" / "sample" / "wikitext-2-valid.txt"
GENESIS = "genesis"  # the bundled text of another kind: continued runs and `diff`'s examples
GENESIS_FILE = Path(__file__).resolve().parent.parent / "data" / "genesis" / "genesis.txt"
BUNDLED = {SAMPLE: SAMPLE_FILE, GENESIS: GENESIS_FILE}  # corpus name -> the file it means

_HEADING = re.compile(r"^\s*=+ .* =+\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


@dataclass(frozen=True)
class Text:
    file: str
    line: int  # 1-based line number in its file
    text: str


MAX_LINE_BYTES = 64 << 20  # one text (line) of a corpus: longer is not a text but a file without line breaks


def _stat(path: Path, what: str, missing: str | None = None) -> os.stat_result:
    """os.stat of a path the user gave, with every OSError as an InputError that names it."""
    try:
        return path.stat()
    except FileNotFoundError:
        hint = f"Check the path of the {what}" + (
            f", or give {SAMPLE!r} for the bundled one." if what == "corpus" else "."
        )
        raise InputError(f"No such {missing or what}: {path}", hint) from None
    except OSError as exc:
        raise InputError(
            f"Cannot read {path}: {exc.strerror or exc}.", f"Give the path of a readable {what} (check permissions)."
        ) from None


def sample_corpus(name: str = SAMPLE) -> Path:
    """A bundled corpus's file: `sample` (WikiText-2 raw, validation split) or `genesis` (the KJV's Genesis)."""
    file = BUNDLED[name]
    if not file.is_file():
        raise InputError(
            f"The bundled {name} corpus is missing from this installation ({file}).",
            f"Reinstall bertlens (the wheel ships bertlens/data/{name}/), or give a corpus path.",
        )
    return file


def corpus_path(path: str | os.PathLike[str]) -> Path:
    """The corpus path a user gave, checked before it becomes a Path: the strs `sample` and `genesis` are bundled
    corpora (a local `sample` is `./sample`); an empty or blank path (which Path would read as the current folder) or
    one with a NUL character is an InputError."""
    if isinstance(path, str) and path in BUNDLED:
        return sample_corpus(path)
    return user_path(path, "corpus", INPUT)


def corpus_files(path: str | os.PathLike[str]) -> list[Path]:
    """The files of a corpus: the file itself, or every non-hidden regular file under the folder, in sorted order."""
    root = corpus_path(path)
    mode = _stat(root, "corpus", "file or folder")
    if stat.S_ISREG(mode.st_mode):
        return [root]
    if not stat.S_ISDIR(mode.st_mode):
        raise InputError(
            f"{root} is not a regular file or folder (a device, FIFO or socket).",
            "Give a text file, or a folder of text files.",
        )

    def refuse(exc: OSError) -> None:
        raise InputError(
            f"Cannot read the folder {exc.filename}: {exc.strerror or exc}.", "Check the corpus folder's permissions."
        )

    files, seen = [], set()
    for folder, subfolders, names in os.walk(root, onerror=refuse, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:  # a link back into the corpus: each folder once
            subfolders[:] = []
            continue
        seen.add(real)
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        for name in names:
            file = Path(folder) / name
            if not name.startswith(".") and file.is_file():  # regular files only: no FIFOs or devices
                files.append(file)
    if not files:
        raise InputError(f"The folder {root} holds no files.", "Give a folder with text files in it.")
    return sorted(files)


def _lines(file: Path) -> Iterator[bytes]:
    """A file's lines as bytes, each at most MAX_LINE_BYTES; read errors name the file."""
    try:
        with file.open("rb") as handle:
            while line := handle.readline(MAX_LINE_BYTES + 1):
                if len(line) > MAX_LINE_BYTES:
                    raise InputError(
                        f"{file} has a line longer than {MAX_LINE_BYTES:,} bytes.",
                        "Give plain text with one text (sentence or paragraph) per line.",
                    )
                yield line
    except OSError as exc:
        raise InputError(
            f"Cannot read {file}: {exc.strerror or exc}.", "Check the corpus file exists and is readable."
        ) from None


def iter_texts(path: str | os.PathLike[str]) -> Iterator[Text]:
    """Every text (non-blank line, markers and headings skipped) of a corpus, streamed."""
    found = False
    for file in corpus_files(path):
        for number, raw in enumerate(_lines(file), 1):
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{file}, line {number}: not valid UTF-8 (byte {exc.start} of the line).",
                    "Convert the corpus to UTF-8 (e.g. iconv -f LATIN1 -t UTF-8).",
                ) from None
            if not line or line.startswith(("<doc ", "<doc>", "</doc>")) or _HEADING.match(line):
                continue
            found = True
            yield Text(str(file), number, line)
    if not found:
        raise InputError(
            f"{path} holds no text (only blank lines, headings or <doc> markers).", "Give a non-empty corpus."
        )


def sentences(text: str) -> list[str]:
    """A paragraph split into sentences at ., ! or ? followed by a capital, digit or quote (a simple rule)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def iter_sentences(path: str | os.PathLike[str]) -> Iterator[str]:
    """Every sentence of every text of a corpus, streamed."""
    for text in iter_texts(path):
        yield from sentences(text.text)
