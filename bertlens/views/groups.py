"""The teaching default of a token projection: common words in groups a reader knows (numbers, months, colours,
family, countries, …), shipped as bertlens/data/groups/words.csv (columns group,word; our own list, MIT).

- `word_groups`: the shipped groups, group name -> words;
- `project_word_groups`: their rows of `word_embeddings` projected, each point's group in the metadata column 'group'.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from ..core.checks import items
from ..core.errors import InputError
from ..core.model import Model
from ..core.options import ProjectionMethod
from ..core.tokens import check_text
from .projection import MIN_POINTS, Projection, ProjectionSettings
from .tokens import model_name, project_tokens

WORD_GROUPS_FILE = Path(__file__).resolve().parent.parent / "data" / "groups" / "words.csv"  # columns group,word


def word_groups() -> dict[str, tuple[str, ...]]:
    """The shipped word groups, in file order: group name -> its words (bertlens/data/groups/words.csv).

    Twelve groups of 8 to 16 common English words each (168 in all: numbers, months, days of the week, colours,
    family, countries, cities, animals, food, body parts, jobs, sports), every one a single token of BERT's uncased
    vocabulary.

    >>> groups = word_groups()
    >>> groups["months"][:3]
    ('january', 'february', 'march')
    """
    groups: dict[str, list[str]] = {}
    with WORD_GROUPS_FILE.open(encoding="utf-8", newline="") as file:
        for row in csv.DictReader(file):
            groups.setdefault(row["group"], []).append(row["word"])
    return {name: tuple(words) for name, words in groups.items()}


def project_word_groups(
    model: Model,
    groups: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
    method: ProjectionMethod = "tsne",
    dims: int = 2,
    seed: int = 0,
    *,
    settings: ProjectionSettings = ProjectionSettings(),  # noqa: B008 - frozen dataclass
    nearest: int = 0,
    progress: bool = False,
) -> Projection:
    """Common words in groups a reader knows, projected: the rows of `word_embeddings` of the shipped `word_groups`
    (all of them, or the names given), or of your own groups (a mapping group -> words). The metadata column 'group'
    says each point's group, so a picture can colour by it: words of one group should lie together.

    The default method is t-SNE, which keeps neighbourhoods (each group its own island, about a second for the
    168 shipped words); PCA keeps the largest directions of spread instead. A word that is not one token is the mean
    of its pieces' rows (as in `project_tokens`); words the vocabulary cannot spell (a piece is the unknown token)
    are left out, and the title says how many.

    >>> projection = project_word_groups(model, ["months", "numbers", "colours"])  # doctest: +SKIP
    >>> projection.metadata["group"][:2]  # doctest: +SKIP
    ('numbers', 'numbers')
    """
    shipped = word_groups()
    if groups is None:
        chosen = shipped
    elif isinstance(groups, Mapping):
        chosen = {
            str(name): tuple(items(words, f"words of group {name!r}", "['red', 'blue']"))
            for name, words in groups.items()
        }
    else:
        names = items(groups, "groups", "['months', 'colours']")
        unknown = [name for name in names if name not in shipped]
        if unknown:
            raise InputError(
                f"No shipped word group is called {', '.join(map(repr, unknown))}.",
                f"Choose from: {', '.join(shipped)}; or give your own as a dict: {{'royals': ['king', 'queen']}}.",
            )
        chosen = {name: shipped[name] for name in names}
    from ..embeddings.static import word_vector

    pairs = [(word, name) for name, members in chosen.items() for word in members]  # (word, its group)
    spelled = [
        (word, name)
        for word, name in pairs
        if model.vocabulary.token_to_id(check_text(word, "word")) is not None or not word_vector(model, word).unknown
    ]
    left_out = len(pairs) - len(spelled)
    if len(spelled) < MIN_POINTS:
        raise InputError(
            f"This model's vocabulary cannot spell {left_out} of the {len(pairs)} words: too few are left to project.",
            "Give groups of words this vocabulary knows, or project the most frequent words: project_tokens(model, "
            "count=1000).",
        )
    words = [word for word, _ in spelled]
    projected = project_tokens(
        model,
        words,
        method=method,
        dims=dims,
        seed=seed,
        label=[name for _, name in spelled],
        settings=settings,
        nearest=nearest,
        progress=progress,
    )
    metadata = {("group" if name == "label" else name): values for name, values in projected.metadata.items()}
    kept = len(set(metadata["group"]))
    title = f"Input-matrix rows (word_embeddings) of {len(words)} words in {kept} groups, {model_name(model)}"
    if left_out:
        title += f" ({left_out} words the vocabulary cannot spell left out)"
    return replace(projected, metadata=metadata, title=title)
