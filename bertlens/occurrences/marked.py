"""An example sentence with its target word: `[marked]` in the text, or named with --word; and a snippet around a word.

Marks: the target is written between square brackets, exactly once ("I sat on the river [bank]"). A literal bracket
is escaped with a backslash (`\\[`, `\\]`; `\\\\` is a backslash). With `word=`, the sentence is plain text: its
brackets are literal, except a single `[word]` mark around that very word, which is read as the mark. The word must
occur as a whole word (case does not matter); when it occurs several times the first occurrence is used and
`Example.note` says so (mark the one you mean to choose another).

`snippet` cuts the sentence around a word out of a stored passage, keeping the word's offsets for highlighting.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..core.errors import NAME, InputError

MARK_HINT = "Mark the word once with square brackets, e.g. 'I sat on the river [bank]', or name it with {word}."
MARK_ARGUMENTS = {"word": NAME}  # the argument MARK_HINT names
SNIPPET_CHARS = 240  # the most characters of a snippet (a longer sentence is cut around the word)


@dataclass(frozen=True)
class Example:
    """A sentence (marks removed) and the character span of its target word."""

    text: str
    start: int
    end: int
    note: str | None = None  # said to the user: which occurrence was taken

    @property
    def word(self) -> str:
        return self.text[self.start : self.end]


WordFinder = Callable[[str, str], list[tuple[int, int]]]  # (text, word) -> the word's spans in the text


def parse_example(example: str, word: str | None = None, *, find: WordFinder | None = None) -> Example:
    """The sentence and target of `example`: its one `[mark]`, or (with `word`) the first whole-word `word`.

    `find` finds a named word as the model splits words (search passes `core.tokens.find_word` with its model);
    without it a whole word is one not touching a letter, digit or underscore."""
    if not isinstance(example, str) or not example.strip():
        raise InputError("The example sentence is empty.", MARK_HINT, arguments=MARK_ARGUMENTS)
    if word is not None:
        return _named(example, word, find)
    text, marks = _unmark(example)
    if not marks:
        raise InputError(f"The example {example!r} has no [marked] word.", MARK_HINT, arguments=MARK_ARGUMENTS)
    if len(marks) > 1:
        found = ", ".join(repr(text[s:e]) for s, e in marks)
        raise InputError(
            f"The example marks {len(marks)} words ({found}); a search starts from one.",
            "Keep one [mark]; write a literal bracket as \\[ or \\].",
        )
    start, end = marks[0]
    return _checked(text, start, end)


def _unmark(example: str) -> tuple[str, list[tuple[int, int]]]:
    """The text without marks and escapes, and each mark's span in it."""
    out: list[str] = []
    marks: list[tuple[int, int]] = []
    opened: int | None = None
    i = 0
    while i < len(example):
        ch = example[i]
        if ch == "\\" and i + 1 < len(example) and example[i + 1] in "[]\\":
            out.append(example[i + 1])
            i += 2
            continue
        if ch == "[":
            if opened is not None:
                raise InputError(f"The example {example!r} opens a mark inside a mark.", _ESCAPE_HINT)
            opened = len("".join(out))
        elif ch == "]":
            if opened is None:
                raise InputError(f"The example {example!r} closes a mark it never opened.", _ESCAPE_HINT)
            marks.append((opened, len("".join(out))))
            opened = None
        else:
            out.append(ch)
        i += 1
    if opened is not None:
        raise InputError(f"The example {example!r} opens a mark it never closes.", _ESCAPE_HINT)
    return "".join(out), marks


_ESCAPE_HINT = "Mark the word as [word]; write a literal bracket as \\[ or \\]."


def _checked(text: str, start: int, end: int) -> Example:
    inner = text[start:end]
    if not inner.strip():
        raise InputError("The example's [mark] is empty.", "Put the word inside the brackets: the river [bank].")
    if inner != inner.strip() or any(ch.isspace() for ch in inner):
        raise InputError(f"The mark [{inner}] is not one word.", "Mark a single word, without spaces.")
    return Example(text, start, end)


def _named(example: str, word: str, find: WordFinder | None) -> Example:
    if not isinstance(word, str) or not word.strip() or any(ch.isspace() for ch in word.strip()):
        raise InputError(f"{{word}} must be one word, got {word!r}.", "Example: {word}", arguments={"word": "bank"})
    word = word.strip()
    marked = re.fullmatch(rf"(.*?)\[({re.escape(word)})\](.*)", example, flags=re.IGNORECASE | re.DOTALL)
    if marked is not None and "[" not in marked.group(1) + marked.group(3):
        start = len(marked.group(1))
        return Example(marked.group(1) + marked.group(2) + marked.group(3), start, start + len(word))
    if find is not None:
        found = find(example, word)
    else:
        found = [m.span() for m in re.finditer(rf"(?<!\w){re.escape(word)}(?!\w)", example, flags=re.IGNORECASE)]
    if not found:
        raise InputError(
            f"{word!r} does not occur as a whole word in {example!r}.",
            "Give a sentence that contains the word (case does not matter), or mark it: the river [bank].",
        )
    note = None
    if len(found) > 1:
        note = f"{word!r} occurs {len(found)} times in the example; the first is used (mark another to choose it)."
    return Example(example, found[0][0], found[0][1], note)


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+")


def snippet(text: str, start: int, end: int, *, limit: int = SNIPPET_CHARS) -> tuple[str, int, int]:
    """The sentence of `text` around the span [start, end), and the span's offsets in it.

    Sentences end at `.`, `!` or `?` followed by white space; a sentence longer than `limit` characters is cut
    around the word, the cuts marked with "…".
    """
    lo, hi = 0, len(text)
    for match in _SENTENCE_END.finditer(text):
        if match.end() <= start:
            lo = match.end()
        elif match.start() >= end:
            hi = match.start()
            break
    if hi - lo > limit:
        room = max(limit - (end - start), 0)
        lo2 = max(lo, start - room // 2)
        hi2 = min(hi, lo2 + (end - start) + room)
        lo2 = max(lo, hi2 - (end - start) - room)
        if lo2 > lo:  # cut at a space, not inside a word
            space = text.find(" ", lo2, start)
            lo2 = space + 1 if space >= 0 else lo2
        if hi2 < hi:
            space = text.rfind(" ", end, hi2)
            hi2 = space if space >= 0 else hi2
        head = "…" if lo2 > lo else ""
        tail = "…" if hi2 < hi else ""
        piece = head + text[lo2:hi2].strip() + tail
        shift = lo2 + (len(text[lo2:hi2]) - len(text[lo2:hi2].lstrip())) - len(head)
        return piece, start - shift, end - shift
    piece = text[lo:hi]
    stripped = piece.lstrip()
    shift = lo + len(piece) - len(stripped)
    return stripped.rstrip(), start - shift, end - shift
