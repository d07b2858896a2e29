"""Reading text corpora: a file or a folder of files, plain text or WikiExtractor `<doc>` blocks, streamed.

Each non-blank line is one text (a paragraph in WikiText and WikiExtractor dumps; WikiText headings ` = Title = ` and
`<doc …>` / `</doc>` markers are skipped). Files are read in sorted path order, line by line, so memory stays flat
whatever the corpus size; invalid UTF-8 is an error that names the file and line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError

_HEADING = re.compile(r"^\s*=+ .* =+\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


@dataclass(frozen=True)
class Text:
    file: str
    line: int  # 1-based line number in its file
    text: str


def corpus_files(path: str | os.PathLike[str]) -> list[Path]:
    """The files of a corpus: the file itself, or every non-hidden file under the folder, in sorted order."""
    root = Path(path).expanduser()
    if not root.exists():
        raise InputError(f"No such file or folder: {root}", "Give a text file or a folder of text files.")
    if root.is_file():
        return [root]
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    if not files:
        raise InputError(f"The folder {root} holds no files.", "Give a folder with text files in it.")
    return files


def iter_texts(path: str | os.PathLike[str]) -> Iterator[Text]:
    """Every text (non-blank line, markers and headings skipped) of a corpus, streamed."""
    found = False
    for file in corpus_files(path):
        with file.open("rb") as handle:
            for number, raw in enumerate(handle, 1):
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
