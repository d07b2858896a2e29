"""The text side of senses: a sentence around an occurrence (with the word's offsets), and the words that set a sense
apart from the word's other senses.

`snippet_of` cuts the sentence that holds an occurrence out of its text (sentence ends as `core.corpus.sentences` finds
them), at most `width` characters around the word. `distinctive` ranks each sense's words by class-based TF-IDF
(c-TF-IDF, as BERTopic names topics): frequent in the sense's sentences, rare across all of the word's occurrences.
Function words (a fixed English list), words with digits, one-letter words, the word itself and names (words written
with a capital inside a sentence more often than in lower case) are left out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")  # as core.corpus.sentences splits
_WORD = re.compile(r"(?<![\w'’-])[^\W\d_][\w'’-]*")  # a word starts with a letter, not inside another word
_OPENING = " \t\n\"'“‘([{-–—"  # what may stand between a sentence's start and its first word
_CLOSING = ".!?:;…"  # what ends the sentence before a word (or a snippet's start, when nothing is left)
SNIPPET_WIDTH = 240  # characters at most around the word

# Function words and the most common verbs and adverbs: they say nothing about a sense. A list of our own, kept small;
# scikit-learn's ENGLISH_STOP_WORDS also drops content words a sense can be named by ("interest", "bill", "fire").
_STOP = """a about above across after again against all almost along already also although always am among an and
    another any anyone anything are around as at away be became because become becomes been before being below
    between both but by can cannot could did do does doing done down during each either else even ever every few for
    from further get gets got had has have having he her here hers herself him himself his how however i if in into is
    it its itself just least less many me more most much my myself neither never no nor not now of off often on once
    one only onto or other others our ours ourselves out over own per perhaps quite rather same she should since so
    some something sometimes still such than that the their theirs them themselves then there therefore these they
    this those though through throughout thus to too toward towards under until up upon us very via was we well were
    what whatever when where whether which while who whom whose why will with within without would yet you your yours
    yourself yourselves two three four five six seven eight nine ten first second third new later may might must shall
    said says say made make makes like also s t d ll m re ve n't 's"""
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
    """A word that sets a sense apart: in how many of its occurrences' sentences, in how many of the other senses',
    and its class-based TF-IDF weight in the sense (what ranks it)."""

    word: str
    count: int
    others: int
    score: float


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


@dataclass(frozen=True)
class Context:
    """The content words of one occurrence's sentence (casefolded), and how they were written there."""

    words: frozenset[str]
    capitalised: frozenset[str]  # written with a capital inside the sentence (not as its first word)
    lower: frozenset[str]  # written in lower case


def context_words(snippet: str, start: int, end: int, key: str) -> Context:
    """The content words of a snippet other than the occurrence itself (casefolded; stop words, words with digits,
    one-letter words and the word's own form left out), and which were written with a capital inside a sentence."""
    words: set[str] = set()
    capitalised: set[str] = set()
    lower: set[str] = set()
    for match in _WORD.finditer(snippet):
        if match.start() < end and match.end() > start:  # the occurrence itself
            continue
        written = match.group().strip("'’-")
        word = written.casefold()
        if len(word) < 2 or word == key or word in STOP_WORDS or any(c.isdigit() for c in word):
            continue
        words.add(word)
        if written[0].isupper():
            before = snippet[: match.start()].rstrip(_OPENING)
            if before and before[-1] not in _CLOSING:
                capitalised.add(word)
        elif written.islower():
            lower.add(word)
    return Context(frozenset(words), frozenset(capitalised), frozenset(lower))


def names(contexts: Sequence[Context]) -> set[str]:
    """The words taken for names: written with a capital inside a sentence more often than in lower case."""
    capitalised = Counter(w for c in contexts for w in c.capitalised)
    lower = Counter(w for c in contexts for w in c.lower)
    return {w for w, n in capitalised.items() if n > lower[w]}


def distinctive(
    contexts: Sequence[Context], labels: np.ndarray, k: int, most: int, *, minimum: int = 2
) -> list[list[CoWord]]:
    """The `most` words that set each sense apart, by class-based TF-IDF (BERTopic's c-TF-IDF): a word's frequency
    among the sense's words (each sentence counts a word once) times log(1 + A / f), with A the mean number of words
    per sense and f the word's frequency across all senses. Names, stop words and words seen in fewer than `minimum`
    of the sense's sentences (1 for a sense smaller than 10) are left out, and so, with several senses, are words no
    more frequent in this sense's sentences than in the others' (add-one smoothed)."""
    named = names(contexts)
    counts = [Counter[str]() for _ in range(k)]  # sense -> word -> sentences of the sense that hold it
    for context, label in zip(contexts, labels, strict=True):
        counts[int(label)].update(context.words - named)
    sizes = np.bincount(labels, minlength=k)  # (k,) sentences per sense
    total = sum(counts, Counter[str]())  # f: each word's frequency across all senses
    average = sum(total.values()) / k  # A: the mean number of words per sense
    found: list[list[CoWord]] = []
    for s in range(k):
        n_in, n_out = int(sizes[s]), int(len(labels) - sizes[s])
        length = max(sum(counts[s].values()), 1)  # the sense's words, for its term frequencies
        least = minimum if n_in >= 10 else 1
        rows = []
        for word, c in counts[s].items():
            other = total[word] - c
            if c < least or (k > 1 and (c + 1) / (n_in + 2) <= (other + 1) / (n_out + 2)):
                continue
            rows.append((-(c / length) * float(np.log1p(average / total[word])), -c, word, other))
        rows.sort()
        found.append([CoWord(word, -c, other, -score) for score, c, word, other in rows[:most]])
    return found
