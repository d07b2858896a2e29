"""The text side of senses: a sentence around an occurrence (with the word's offsets), and a sense's telling words.

`snippet` cuts the sentence that holds an occurrence out of its text (sentence ends as `core.corpus.sentences` finds
them), at most `width` characters around the word. `cooccurring` counts, per sense, in how many of its occurrences'
sentences each other word appears, and ranks the words that are more frequent with this sense than with the word's
other senses; function words (a fixed English list), numbers, one-letter words and the word itself are left out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")  # as core.corpus.sentences splits
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
SNIPPET_WIDTH = 240  # characters at most around the word

_STOP = """a about above after again against all also am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here hers
    herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves one two three first new later may might must
    shall us upon within without among however although though since via per s t d ll m re ve n't 's"""
STOP_WORDS = frozenset(_STOP.split())


@dataclass(frozen=True)
class Snippet:
    """An occurrence in its sentence: `snippet[start:end]` is the word."""

    snippet: str
    start: int
    end: int
    file: str
    line: int  # 1-based line of the text in its file
    text_id: int  # the text's id in the index (-1 when read from a corpus without an index)


@dataclass(frozen=True)
class CoWord:
    """A word seen with a sense: in how many of its occurrences' sentences, and in how many of the other senses'."""

    word: str
    count: int
    others: int


def snippet_of(text: str, start: int, end: int, width: int = SNIPPET_WIDTH) -> tuple[str, int, int]:
    """The sentence of `text` holding text[start:end], cut to at most `width` characters around the word ("…" marks
    a cut), and the word's offsets in it."""
    left = 0
    right = len(text)
    for boundary in _SENTENCE_END.finditer(text):
        if boundary.end() <= start:
            left = boundary.end()
        elif boundary.start() >= end:
            right = boundary.start()
            break
    if right - left > width:
        room = max(width - (end - start), 0)
        lo = max(left, start - room // 2)
        hi = min(right, lo + width)
        lo = max(left, min(lo, hi - width))
        prefix, suffix = ("…" if lo > left else ""), ("…" if hi < right else "")
        cut = prefix + text[lo:hi].strip() + suffix
        offset = lo + (len(text[lo:hi]) - len(text[lo:hi].lstrip()))
        return cut, start - offset + len(prefix), end - offset + len(prefix)
    sentence = text[left:right]
    stripped = len(sentence) - len(sentence.lstrip())
    return sentence.strip(), start - left - stripped, end - left - stripped


def context_words(snippet: str, start: int, end: int, key: str) -> set[str]:
    """The content words of a snippet other than the occurrence itself (casefolded; stop words, numbers and the
    word's own form left out)."""
    words = _WORD.findall(snippet[:start] + " " + snippet[end:])
    return {w for w in (w.casefold().strip("'’-") for w in words) if len(w) > 1 and w != key and w not in STOP_WORDS}


def cooccurring(
    contexts: Sequence[set[str]], labels: np.ndarray, k: int, most: int, *, minimum: int = 2
) -> list[list[CoWord]]:
    """The `most` telling words of each sense: seen in at least `minimum` of its sentences (1 for a sense smaller
    than 10) and relatively more often than in the other senses' sentences, ranked by that ratio (add-one smoothed)
    and then by count. With one sense, the most frequent words."""
    counts = [Counter[str]() for _ in range(k)]
    for words, label in zip(contexts, labels, strict=True):
        counts[int(label)].update(words)
    sizes = np.bincount(labels, minlength=k)
    total = sum(counts, Counter[str]())
    found: list[list[CoWord]] = []
    for s in range(k):
        n_in, n_out = int(sizes[s]), int(len(labels) - sizes[s])
        least = minimum if n_in >= 10 else 1
        rows = []
        for word, c in counts[s].items():
            other = total[word] - c
            if c < least:
                continue
            ratio = (c + 1) / (n_in + 2) / ((other + 1) / (n_out + 2)) if k > 1 else float(c)
            if k > 1 and ratio <= 1:
                continue
            rows.append((-ratio * np.log1p(c), -c, word, other))
        rows.sort()
        found.append([CoWord(word, -c, other) for _, c, word, other in rows[:most]])
    return found
