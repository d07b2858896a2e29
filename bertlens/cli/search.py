"""Commands that search an occurrence index by example: search."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from ..core.options import ANY_WORD_OPTION, EXCLUDE_SAME_TEXT_OPTION, INDEX_LAYER_OPTION, K_OPTION, TARGET_WORD_OPTION
from ..core.results import Result
from .common import Call, command
from .params import argument, option, run_flags

if TYPE_CHECKING:
    from ..occurrences.search_results import SearchResult


@command(
    "search",
    "occurrences in an index used most like a word in an example sentence",
    "Occurrences in an index (bertlens index) of the same word, or with --any-word of other words, ranked by cosine "
    "with the example's occurrence at one layer, each with its sentence, score and source, read against the layer's "
    "baseline.",
)
@argument("index", "the index folder (bertlens index CORPUS --out DIR)")
@argument(
    "example",
    "a sentence with the word marked: 'I sat on the river [bank]' (or plain with --word); a literal bracket is "
    "written \\[ or \\]",
    required=False,
)
@option(TARGET_WORD_OPTION)
@option(INDEX_LAYER_OPTION, help="a stored layer: 0 = embedding output, -1 = the last (default: the index's last)")
@option(ANY_WORD_OPTION)
@option(EXCLUDE_SAME_TEXT_OPTION)
@click.option(
    "--all-per-text", is_flag=True, help="every occurrence of a text (default: one hit per text, its best occurrence)"
)
@option(K_OPTION, help="how many hits (at most 1000)")
@click.option(
    "--from",
    "occurrence",
    metavar="TEXT_ID:POSITION",
    help="start from an occurrence of the index instead of a sentence (as a hit's text_id and position)",
)
@run_flags()
def search(
    call: Call,
    index: str,
    example: str | None,
    word: str | None,
    layer: int | None,
    any_word: bool,
    exclude_same_text: bool,
    all_per_text: bool,
    k: int,
    occurrence: str | None,
    **run: object,  # the run flags: call.run_options()
) -> SearchResult | Shown:
    from ..core.errors import InputError
    from ..occurrences.search import SearchOptions, search_occurrences

    start = occurrence_of(occurrence)
    if example is None and start is None:
        raise InputError(
            "Give an example sentence with the word marked, or --from TEXT_ID:POSITION.",
            "Example: bertlens search INDEX 'I sat on the river [bank]'",
        )
    options = SearchOptions(
        word=word,
        layer=layer,
        any_word=any_word,
        k=k,
        exclude_same_text=exclude_same_text,
        occurrence=start,
        one_per_text=not all_per_text,
    )
    result = search_occurrences(call.model(), index, example, options=options, run=call.run_options())
    return Shown(result) if sys.stdout.isatty() and not call.json else result


@dataclass(frozen=True, repr=False)
class Shown(Result):
    """A search result printed on a terminal: the word in bold; the same `to_dict()`."""

    result: SearchResult

    def to_dict(self) -> dict[str, Any]:
        return self.result.to_dict()

    def to_table(self) -> str:
        return self.result.render(color=True)


def occurrence_of(value: str | None) -> tuple[int, int] | None:
    """The (text_id, position) of --from TEXT_ID:POSITION; None when not given."""
    from ..core.errors import InputError

    if value is None:
        return None
    parts = [p.strip() for p in value.split(":")]
    if len(parts) != 2 or not all(p.isascii() and p.isdigit() for p in parts):
        raise InputError(
            f"--from takes TEXT_ID:POSITION, two whole numbers of 0 or more, got {value!r}.",
            "Example: --from 120:7 (as a hit shows).",
        )
    return int(parts[0]), int(parts[1])  # bounded by the index (search_occurrences says its range)
