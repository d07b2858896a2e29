"""What gets projected: rows of the input matrix, and contextual vectors at one layer (bertlens.views.projection
does the projecting).

- `project_tokens`: rows of the input matrix (`word_embeddings`) for tokens, ids or words (pieces pooled), or the
  first `count` whole-word tokens of the vocabulary (`whole_word_ids`), coloured by theme (`themes`);
- `project_contextual`: every word's (or token's) vector at one layer, over several texts;
- `model_name`: the short model name the headings use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..contextual.pooling import pool_words, word_runs
from ..contextual.states import RunOptions, hidden_states, select_layers
from ..core.checks import items
from ..core.errors import InputError
from ..core.model import Model
from ..core.options import LEVELS, Level, ProjectionMethod
from ..core.tokens import check_text
from .projection import MIN_POINTS, Projection, ProjectionSettings, check_option, project

_CHUNK = 256  # texts per hidden_states call in project_contextual (bounds memory: one layer is kept)

THEMES = 8  # `count` words are coloured by this many themes (k-means clusters of their rows), each named by its words
THEME_WORDS = 3  # words that name a theme (those nearest its centre); they are also the points pictures label
THEME_SAMPLE = 4000  # past this many rows, themes are found on a seeded sample of them (k-means cost grows with n)


def model_name(model: Model) -> str:
    """A short name for headings: the package, hub id or folder name (the full description has the path)."""
    source = model.source
    if source.kind == "default":
        from ..core.sources import DEFAULT_MODEL_PIP_NAME

        return DEFAULT_MODEL_PIP_NAME
    if source.kind == "hf-cache":
        return source.spec
    return source.path.name if source.path is not None else "a transformers model"


# --- the input matrix ----------------------------------------------------------------------------------------------


def whole_word_ids(model: Model) -> np.ndarray:
    """Ids of whole-word tokens of two or more characters, in id order.

    Whole words as `TokenFilter.words_only()` has them (no pieces, specials, unused rows, numbers or punctuation),
    less single characters: WordPiece vocabularies open with a block of a thousand single characters (a, b, …, ß,
    CJK), and word tokens follow, most frequent first.
    """
    from ..embeddings.token_classes import token_classes

    tokens = model.vocabulary.tokens_by_id(model.matrix_rows)
    classes = token_classes(tokens, model.vocabulary.special_ids)
    excluded = np.zeros(model.matrix_rows, dtype=bool)
    for name in ("continuation", "special", "unused", "numbers", "punctuation"):
        excluded |= classes[name]
    short = np.array([t is None or len(t.lstrip("▁Ġ")) < 2 for t in tokens], dtype=bool)  # markers are not letters
    return np.flatnonzero(~excluded & ~short)


def project_tokens(
    model: Model,
    tokens: Sequence[str | int] | None = None,
    count: int | None = None,
    method: ProjectionMethod = "pca",
    dims: int = 2,
    seed: int = 0,
    label: str | Sequence[str] | None = None,
    *,
    settings: ProjectionSettings = ProjectionSettings(),  # noqa: B008 - frozen dataclass
    nearest: int = 0,
    progress: bool = False,
) -> Projection:
    """Static vectors projected: rows of `word_embeddings` for `tokens`, or for the first `count` whole-word tokens
    (`whole_word_ids`: for BERT's vocabulary, the most frequent words first).

    With `count`, the metadata column 'theme' clusters the rows into `THEMES` groups by direction (k-means on unit
    rows) and names each by the words nearest its centre ("theme 3: sweden, finland, spain"); those words are the
    projection's `featured` points, the ones a picture labels.

    A token is an id (int), a vocabulary token ("dog", "##ing", "[CLS]") or a word, whose pieces' rows are averaged
    (as `embeddings.static.vector` does). `label` is a user label for the metadata column 'label': one string for
    every point or one per token. Metadata: query, piece, id (None for a pooled word), kind, unknown, label.
    `nearest` and `progress` are `project`'s: each point's nearest points in the original space, a clock for t-SNE/UMAP.

    >>> model = load_model()
    >>> project_tokens(model, ["king", "queen", "man", "woman"], method="pca", dims=3).points.shape
    (4, 3)
    >>> project_tokens(model, count=1000).points.shape  # the first 1,000 whole-word tokens
    (1000, 2)
    """
    vectors, columns, labels = _token_rows(model, _queries(model, tokens, count))
    labels_column = _label_column(label, len(vectors))
    metadata: dict[str, Sequence[Any]] = dict(columns)
    featured: list[int] = []
    what = f"{len(vectors):,} tokens"
    if count is not None:
        what = f"the first {count:,} whole-word tokens"
        if count >= 10 * MIN_POINTS:
            metadata["theme"], featured = themes(np.stack(vectors), labels, min(THEMES, count // 10))
    if labels_column is not None:
        metadata["label"] = labels_column
    return project(
        np.stack(vectors) if vectors else np.zeros((0, 1)),  # (n, E)
        labels,
        method,
        dims,
        seed,
        metadata,
        settings=settings,
        title=f"Input-matrix rows (word_embeddings) of {what}, {model_name(model)}",
        nearest=nearest,
        progress=progress,
        featured=featured,
    )


def _queries(model: Model, tokens: Sequence[str | int] | None, count: int | None) -> list[str | int]:
    """What `project_tokens` projects: the tokens given, or the ids of the first `count` whole-word tokens."""
    if (tokens is None) == (count is None):
        raise InputError("Give either tokens or count, not both and not neither.", "Example: tokens=['dog', 'cat'].")
    if count is None:
        return items(tokens, "tokens (of tokens, ids or words)", "['dog', 'cat', 3899]")
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < MIN_POINTS:
        raise InputError(f"count must be an integer of at least {MIN_POINTS}, got {count!r}.", "Example: count=1000.")
    ids = whole_word_ids(model)
    if count > len(ids):
        raise InputError(
            f"The vocabulary has only {len(ids):,} whole-word tokens, fewer than the {count:,} asked for.",
            f"Ask for at most {len(ids):,}, or give the tokens.",
        )
    return [int(i) for i in ids[:count]]


def _token_rows(model: Model, queries: Sequence[str | int]) -> tuple[list[np.ndarray], dict[str, list[Any]], list[str]]:
    """Each query's row of `word_embeddings` (a word's pieces' rows mean-pooled), its metadata columns and label."""
    from ..embeddings.static import unknown_id, word_vector

    rows = model.embedding_weights.word_embeddings  # (vocab, E)
    vocabulary = model.vocabulary
    unknown = unknown_id(model)
    vectors: list[np.ndarray] = []
    columns: dict[str, list[Any]] = {"query": [], "piece": [], "id": [], "kind": [], "unknown": []}
    labels: list[str] = []
    found: int | None  # the row read directly, or None for a word whose pieces are pooled
    row: tuple[Any, ...]  # one value per metadata column
    for query in queries:
        if isinstance(query, (int, np.integer)) and not isinstance(query, bool):
            found, kind = int(query), "id"
            if not 0 <= found < len(rows):
                raise InputError(
                    f"Token id {found} is out of range: the matrix has rows 0 to {len(rows) - 1}.",
                    f"Give ids from 0 to {len(rows) - 1} (bertlens tokens TEXT shows a text's ids).",
                )
        elif isinstance(query, str):
            found, kind = vocabulary.token_to_id(check_text(query, "token")), "token"
        else:
            raise InputError(
                f"A token must be a string or an integer id, got {query!r}.", "Example: tokens=['dog', 3899]."
            )
        if found is not None:  # one row, read directly: fast for tens of thousands of tokens
            piece = vocabulary.id_to_token(found) or f"[row_{found}]"
            vectors.append(rows[found])
            row = (str(query), piece, found, kind, found == unknown)
            labels.append(piece)
        else:  # a word: its pieces' rows mean-pooled, as bertlens.embeddings.static.word_vector does
            pooled = word_vector(model, str(query))  # a string: ids were read directly above
            vectors.append(pooled.vector)
            row = (pooled.query, " ".join(pooled.pieces), None, "word", pooled.unknown)
            labels.append(pooled.query)
        for name, value in zip(columns, row, strict=True):
            columns[name].append(value)
    return vectors, columns, labels


def themes(rows: np.ndarray, labels: Sequence[str], k: int, seed: int = 0) -> tuple[list[str], list[int]]:
    """`rows` (n, E) clustered by direction into `k` themes: each row's theme name ("theme 0: sweden, finland,
    spain", theme 0 the largest), and the indices of the `THEME_WORDS` rows nearest each theme's centre (every
    theme's nearest first, then every theme's second, …: the order in which pictures label them).

    The rows are centred first (the matrix's common direction would otherwise dominate every cosine), then
    clustered as a word's senses are (bertlens.views.clusters: k-means on unit rows, on their top principal
    components, seeded). Past `THEME_SAMPLE` rows the themes are found on a seeded sample of that many and every row
    joins the theme whose centre is nearest (k-means on every row would cost several times more)."""
    from .clusters import centres, kmeans, reduced, unit_rows

    unit = unit_rows(rows - rows.mean(axis=0))  # (n, E)
    n = len(unit)
    sample = np.sort(np.random.default_rng(seed).choice(n, THEME_SAMPLE, replace=False)) if n > THEME_SAMPLE else None
    fitted = unit if sample is None else unit[sample]  # (m, E)
    middles = centres(fitted, kmeans(reduced(fitted), k, seed), k)  # (k, E)
    if sample is not None:  # every row to its nearest centre, then the centres of what each theme holds
        middles = centres(unit, np.argmax(unit @ middles.T, axis=1), k)
    assigned = np.argmax(unit @ middles.T, axis=1)  # (n,) the theme of each row
    order = np.argsort(-np.bincount(assigned, minlength=k), kind="stable")  # theme 0 the largest
    rank = np.empty(k, dtype=np.int64)
    rank[order] = np.arange(k)
    assigned, middles = rank[assigned], middles[order]
    names: dict[int, str] = {}
    central: list[list[int]] = []
    for theme in range(k):
        members = np.flatnonzero(assigned == theme)
        nearest = members[np.argsort(-(unit[members] @ middles[theme]), kind="stable")[:THEME_WORDS]]
        names[theme] = f"theme {theme}: " + ", ".join(labels[i] for i in nearest)
        central.append([int(i) for i in nearest])
    featured = [words[rank] for rank in range(THEME_WORDS) for words in central if rank < len(words)]  # by rank
    return [names[int(t)] for t in assigned], featured


def _label_column(label: str | Sequence[str] | None, n: int) -> tuple[str, ...] | None:
    if label is None:
        return None
    if isinstance(label, str):
        return (label,) * n
    values = tuple(str(v) for v in items(label, "label (one, or one per token)", "'animals'"))
    if len(values) != n:
        raise InputError(f"{len(values)} labels were given for {n} tokens.", "Give one label, or one per token.")
    return values


# --- contextual vectors --------------------------------------------------------------------------------------------


def project_contextual(
    model: Model,
    texts: str | Sequence[str],
    layer: int = -1,
    level: Level = "word",
    method: ProjectionMethod = "pca",
    dims: int = 2,
    seed: int = 0,
    *,
    special: bool = False,
    options: RunOptions = RunOptions(),  # noqa: B008 - frozen dataclass
    settings: ProjectionSettings = ProjectionSettings(),  # noqa: B008 - frozen dataclass
    nearest: int = 0,
    progress: bool = False,
) -> Projection:
    """Every word's (level 'word': pieces mean-pooled) or token's vector at `layer` over `texts`, projected.

    `layer` 0 is the embedding output, -1 the last layer. `special` keeps [CLS]/[SEP]-like tokens (level 'token').
    Metadata: sentence (text index), position (word or token index), word, piece, layer. `nearest` and `progress`
    are `project`'s.

    >>> points = project_contextual(load_model(), ["I like eating bread", "a dog barked"], layer=6)
    >>> points.labels
    ('I', 'like', 'eating', 'bread', 'a', 'dog', 'barked')
    """
    check_option(level, LEVELS, "level", "word or token")
    texts = [texts] if isinstance(texts, str) else items(texts, "texts", "['I like bread', 'A cat sat']")
    if not texts:
        raise InputError("No texts were given.", "Give at least one text.")
    vectors: list[np.ndarray] = []
    columns: dict[str, list[Any]] = {"sentence": [], "position": [], "word": [], "piece": [], "layer": []}
    labels: list[str] = []
    chosen_layer: int | None = None
    for start in range(0, len(texts), _CHUNK):
        for offset, states in enumerate(hidden_states(model, texts[start : start + _CHUNK], options=options)):
            count = states.states.shape[0]
            layer_states = select_layers(states.states, [layer], "mean")  # (tokens, H); checks the layer
            chosen_layer = layer % count
            number = start + offset
            if level == "word":
                runs = word_runs(states.tokens)
                vectors.extend(pool_words(layer_states, [[t.index for t in run] for run in runs], "mean"))  # (w, H)
                for index, run in enumerate(runs):
                    word = states.text[run[0].start : run[-1].end]
                    _append(columns, number, index, word, " ".join(t.piece for t in run), chosen_layer)
                    labels.append(word)
            else:
                runs = word_runs(states.tokens)
                words = {t.index: states.text[run[0].start : run[-1].end] for run in runs for t in run}
                for token in states.tokens:
                    if token.special and not special:
                        continue
                    vectors.append(layer_states[token.index])
                    _append(columns, number, token.index, words.get(token.index), token.piece, chosen_layer)
                    labels.append(token.piece)
    what = "words" if level == "word" else "tokens"
    if len(vectors) < MIN_POINTS:
        raise InputError(
            f"The texts have {len(vectors)} {what}: a projection needs at least {MIN_POINTS}.",
            "Give longer or more texts" + (", or level='token'." if level == "word" else "."),
        )
    return project(
        np.stack(vectors),  # (n, H)
        labels,
        method,
        dims,
        seed,
        columns,
        settings=settings,
        title=f"Contextual {what} of {len(texts):,} texts at layer {chosen_layer}, {model_name(model)}",
        nearest=nearest,
        progress=progress,
    )


def _append(columns: dict[str, list[Any]], sentence: int, position: int, word: Any, piece: str, layer: int) -> None:
    for name, value in (("sentence", sentence), ("position", position), ("word", word), ("piece", piece)):
        columns[name].append(value)
    columns["layer"].append(layer)
