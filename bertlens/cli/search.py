"""Commands that search an occurrence index by example: search."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.options import ANY_WORD_OPTION, EXCLUDE_SAME_TEXT_OPTION, K_OPTION, LAYER_OPTION, TARGET_WORD_OPTION
from ..core.results import Result
from .common import Commands, FlagParser, add_option, load, run_options, run_parser

if TYPE_CHECKING:
    from ..occurrences.search_results import SearchResult


def register(commands: Commands, common: FlagParser) -> None:
    """Add the search command."""
    cmd = commands.add_parser(
        "search",
        parents=[common, run_parser()],
        help="occurrences in an index used most like a word in an example sentence",
        description="Occurrences in an index (bertlens index) of the same word, or with --any-word of other words, "
        "ranked by cosine with the example's occurrence at one layer, each with its sentence, score and source, "
        "read against the layer's baseline.",
    )
    cmd.add_argument("index", help="the index folder (bertlens index CORPUS --out DIR)")
    cmd.add_argument(
        "example",
        nargs="?",
        help="a sentence with the word marked: 'I sat on the river [bank]' (or plain with --word); "
        "a literal bracket is written \\[ or \\]",
    )
    add_option(cmd, TARGET_WORD_OPTION)
    add_option(cmd, LAYER_OPTION, command="search", help="a stored layer (default: the index's last)")
    add_option(cmd, ANY_WORD_OPTION)
    add_option(cmd, EXCLUDE_SAME_TEXT_OPTION)
    cmd.add_argument(
        "--all-per-text",
        action="store_true",
        help="every occurrence of a text (default: one hit per text, its best occurrence)",
    )
    add_option(cmd, K_OPTION, help="how many hits (default 10, at most 1000)")
    cmd.add_argument(
        "--from",
        dest="occurrence",
        metavar="TEXT_ID:POSITION",
        help="start from an occurrence of the index instead of a sentence (as a hit's text_id and position)",
    )
    cmd.set_defaults(run=_run_search)


@dataclass(frozen=True, repr=False)
class _Shown(Result):
    """A search result printed on a terminal: the word in bold; the same `to_dict()`."""

    result: SearchResult

    def to_dict(self) -> dict[str, Any]:
        return self.result.to_dict()

    def to_table(self) -> str:
        return self.result.render(color=True)


def _occurrence(value: str | None) -> tuple[int, int] | None:
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


def _run_search(args: argparse.Namespace) -> SearchResult | _Shown:
    from ..core.errors import InputError
    from ..occurrences.search import SearchOptions, search_occurrences

    occurrence = _occurrence(args.occurrence)
    if args.example is None and occurrence is None:
        raise InputError(
            "Give an example sentence with the word marked, or --from TEXT_ID:POSITION.",
            "Example: bertlens search INDEX 'I sat on the river [bank]'",
        )
    options = SearchOptions(
        word=args.word,
        layer=args.layer,
        any_word=args.any_word,
        k=args.k,
        exclude_same_text=args.exclude_same_text,
        occurrence=occurrence,
        one_per_text=not args.all_per_text,
    )
    result = search_occurrences(load(args), args.index, args.example, options=options, run=run_options(args))
    return _Shown(result) if sys.stdout.isatty() and not args.json else result
