"""Vectors projected to 2 or 3 dimensions for looking at: PCA, t-SNE, UMAP (data only; drawing is in figures.py).

- `project`: any vectors (n, D) with a label per point and metadata columns;
- `project_tokens`: rows of the input matrix (`word_embeddings`) for tokens, ids or words (pieces pooled), or the
  first `count` whole-word tokens of the vocabulary;
- `project_contextual`: every word's (or token's) vector at one layer, over several texts;
- `trajectory`: a word's vector at every layer in several sentences, all projected by ONE fit (one shared space);
- `position_similarity`: the cosine of every pair of `position_embeddings` rows (and `token_type_embeddings` rows).

PCA is computed here with numpy in float64 (exact, fast: about a second for 50,000 x 384); t-SNE comes from
scikit-learn (Barnes-Hut) and UMAP from umap-learn (optional: `pip install "bertlens[umap]"`). Both are much slower
than PCA on large inputs (minutes for 50,000 points; see docs/benchmarks.md) and neither samples: every point given
is projected. scikit-learn and umap-learn are imported only when used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contextual.states import RunOptions, _runs, hidden_states, occurrences, pool_pieces, pool_words, select_layers
from ..core.checks import items, real_number, whole_number
from ..core.checks import seed as check_seed
from ..core.errors import InputError
from ..core.model import Model
from ..core.options import LEVELS, PROJECTION_METHODS, PROJECTION_METRICS, Level, ProjectionMethod, ProjectionMetric
from ..core.results import Result, table, visible
from ..core.tokens import check_text

MIN_POINTS = 3  # fewer points have no shape to show
TABLE_ROWS = 50  # rows a table shows; to_dict() always has every point
_CHUNK = 256  # texts per hidden_states call in project_contextual (bounds memory: one layer is kept)
UMAP_HINT = 'Install it with: pip install "bertlens[umap]" (or pip install umap-learn), or use method "pca" or "tsne".'


@dataclass(frozen=True)
class ProjectionSettings:
    """How t-SNE and UMAP run (PCA has no settings). None picks the rule written beside the field."""

    perplexity: float | None = None  # t-SNE: None = min(30, (n - 1) / 3), so 3 x perplexity + 1 neighbours exist
    neighbors: int | None = None  # UMAP n_neighbors: None = min(15, n - 1)
    min_dist: float = 0.1  # UMAP: how tightly points may pack (umap-learn's default)
    metric: ProjectionMetric = (
        "cosine"  # t-SNE and UMAP distances: cosine, as bertlens' similarities; PCA is always euclidean
    )
    max_iter: int = 1000  # t-SNE optimisation steps (scikit-learn's default; at least 250)

    def __post_init__(self) -> None:
        if self.perplexity is not None:
            real_number(self.perplexity, "perplexity (--perplexity)", positive=True)
        if self.neighbors is not None:
            whole_number(self.neighbors, "neighbors (--neighbors)", minimum=2)
        if not 0 <= real_number(self.min_dist, "min_dist") <= 1:
            raise InputError(f"UMAP's min_dist must be between 0 and 1, got {self.min_dist}.", "Example: 0.1.")
        _check_choice(self.metric, PROJECTION_METRICS, "metric", "cosine or euclidean")
        whole_number(self.max_iter, "max_iter", minimum=250)


@dataclass(frozen=True, repr=False)
class Projection(Result):
    """Points in 2 or 3 dimensions, one per input vector, each with a label and a value in every metadata column."""

    method: str  # 'pca', 'tsne' or 'umap'
    dims: int  # 2 or 3
    points: np.ndarray  # (n, dims) float32
    labels: tuple[str, ...]  # one per point: what a picture writes beside it
    metadata: dict[str, tuple]  # column -> one value per point (e.g. 'piece', 'word', 'sentence', 'layer', 'id')
    explained: tuple[float, ...] | None  # PCA: the fraction of the variance on each axis; None for t-SNE / UMAP
    parameters: dict[str, Any] = field(default_factory=dict)  # what the method used: seed, perplexity, neighbours…
    title: str = ""  # what the points are, in words (figures use it as their heading)

    def __len__(self) -> int:
        return len(self.labels)

    def __repr__(self) -> str:
        return f"Projection({self.method}, {len(self.labels)} points x {self.dims} dims, columns {list(self.metadata)})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "dims": self.dims,
            "points": self.points.tolist(),
            "labels": list(self.labels),
            "metadata": {k: list(v) for k, v in self.metadata.items()},
            "explained": None if self.explained is None else list(self.explained),
            "parameters": dict(self.parameters),
            "title": self.title,
        }

    def to_table(self) -> str:
        axes = ["x", "y", "z"][: self.dims]
        columns = [c for c in self.metadata if c != "label"]
        rows = [
            (i, visible(self.labels[i]), *self.points[i].tolist(), *(self.metadata[c][i] for c in columns))
            for i in range(min(len(self), TABLE_ROWS))
        ]
        lines = [self.title or "Projection", table(["#", "label", *axes, *columns], rows)]
        if len(self) > TABLE_ROWS:
            lines.append(f"… {len(self) - TABLE_ROWS:,} more points (every point is in --json / to_dict()).")
        lines.append(describe(self.method, self.dims, len(self), self.explained, self.parameters))
        return "\n".join(lines)


def describe(method: str, dims: int, n: int, explained: tuple[float, ...] | None, parameters: Mapping) -> str:
    """One line saying how the points were made."""
    name = {"pca": "PCA", "tsne": "t-SNE", "umap": "UMAP"}.get(method, method)
    text = f"{name} to {dims} dims of {n:,} points"
    if explained is not None:
        text += f"; variance explained per axis: {', '.join(f'{100 * e:.1f}%' for e in explained)}"
    shown = {k: v for k, v in parameters.items() if v is not None}
    if shown:
        text += "; " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in shown.items())
    return text + "."


def _check_choice(value: Any, choices: tuple[Any, ...], what: str, example: str) -> None:
    if value not in choices:
        raise InputError(f"Unknown {what} {value!r}.", f"Choose one of: {', '.join(map(str, choices))} ({example}).")


def _check_matrix(vectors: Any, dims: int) -> np.ndarray:
    try:
        matrix = np.asarray(vectors)  # (n, D); float32 stays float32 (no copy)
        if matrix.dtype.kind == "c":
            raise TypeError("complex")
        if matrix.dtype.kind not in "fiu":
            matrix = matrix.astype(np.float64)
    except (TypeError, ValueError):
        raise InputError(
            "The vectors are not a numeric matrix.", "Pass an (n, D) array or a list of equal-length vectors."
        ) from None
    if matrix.ndim != 2:
        raise InputError(
            f"The vectors must form a 2-D array (n, D), got shape {matrix.shape}.", "Stack one vector per point."
        )
    n, width = matrix.shape
    if n < MIN_POINTS:
        raise InputError(
            f"{n} point{'s' if n != 1 else ''} cannot be projected: a projection needs at least {MIN_POINTS}.",
            "Give more tokens, words or texts.",
        )
    if dims > n:
        raise InputError(f"{dims} dimensions need at least {dims} points, got {n}.", "Use --dims 2 or more points.")
    if width < dims:
        raise InputError(
            f"The vectors have {width} dimension(s): nothing to project to {dims}.",
            f"Project vectors of more than {dims} dimensions, or use fewer dims.",
        )
    if not np.isfinite(matrix).all():
        raise InputError("The vectors hold NaN or infinite values.", "Remove or fix those rows.")
    return matrix


def _plain_value(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


def _check_columns(metadata: Mapping[str, Sequence[Any]] | None, n: int) -> dict[str, tuple]:
    columns: dict[str, tuple] = {}
    for name, values in (metadata or {}).items():
        if not isinstance(name, str) or not name:
            raise InputError(
                f"Metadata column names must be non-empty strings, got {name!r}.", "Name each column, e.g. 'word'."
            )
        values = tuple(_plain_value(v) for v in values)
        if len(values) != n:
            raise InputError(f"Metadata column {name!r} has {len(values)} values for {n} points.", "One per point.")
        columns[name] = values
    return columns


def project(
    vectors: Any,
    labels: Sequence[str],
    method: ProjectionMethod = "pca",
    dims: int = 2,
    seed: int = 0,
    metadata: Mapping[str, Sequence[Any]] | None = None,
    *,
    settings: ProjectionSettings = ProjectionSettings(),
    title: str = "",
) -> Projection:
    """Project `vectors` (n, D) to `dims` (2 or 3) dimensions with PCA, t-SNE or UMAP. Every point is kept.

    PCA is deterministic (each axis's sign fixed so that its largest loading is positive, as scikit-learn does);
    t-SNE and UMAP are seeded by `seed`. Needs at least 3 points.
    """
    _check_choice(
        method, PROJECTION_METHODS, "projection method", "pca is fast and exact; tsne and umap show neighbourhoods"
    )
    if isinstance(dims, bool) or dims not in (2, 3):
        raise InputError(f"A projection has 2 or 3 dimensions, got {dims!r}.", "Use dims=2 or dims=3.")
    check_seed(seed, "seed (--seed)")
    if not isinstance(settings, ProjectionSettings):
        raise InputError(f"settings must be ProjectionSettings, got {settings!r}.", "Pass ProjectionSettings().")
    matrix = _check_matrix(vectors, dims)
    n = len(matrix)
    labels = tuple(str(label) for label in labels)
    if len(labels) != n:
        raise InputError(f"{len(labels)} labels were given for {n} points.", "Give one label per vector.")
    columns = _check_columns(metadata, n)
    explained: tuple[float, ...] | None = None
    if method == "pca":
        points, ratios = pca(matrix, dims)
        explained = tuple(float(r) for r in ratios)
        parameters: dict[str, Any] = {}
    elif method == "tsne":
        points, parameters = _tsne(matrix, dims, seed, settings)
    else:
        points, parameters = _umap(matrix, dims, seed, settings)
    return Projection(
        method=method,
        dims=dims,
        points=np.ascontiguousarray(points, dtype=np.float32),
        labels=labels,
        metadata=columns,
        explained=explained,
        parameters=parameters,
        title=title,
    )


def pca(matrix: np.ndarray, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """The centred rows of `matrix` (n, D) on their first `dims` principal axes, in float64: (n, dims), and the
    fraction of the total variance on each axis: (dims,).

    Signs follow scikit-learn's rule (each axis's largest loading is positive), so the result equals
    `sklearn.decomposition.PCA(dims).fit_transform(matrix)`.
    """
    centred = np.array(matrix, dtype=np.float64)  # (n, D), a copy, centred in place
    centred -= centred.mean(axis=0)
    n, width = centred.shape
    with _one_blas_thread():
        if width <= n:  # eigenvectors of the (D, D) scatter matrix: one pass over the rows, fast for 50,000 x 384
            scatter = centred.T @ centred  # (D, D)
            total = float(np.trace(scatter))  # the sum of squared deviations
            _, vectors = np.linalg.eigh(scatter)  # ascending eigenvalues
            components = vectors[:, ::-1][:, :dims].T  # (dims, D), largest variance first
        else:  # fewer points than dimensions: the thin SVD of the (n, D) rows is cheaper
            _, values, vt = np.linalg.svd(centred, full_matrices=False)
            total = float((values**2).sum())
            components = vt[:dims]  # (dims, D)
    components = components.copy()
    largest = np.argmax(np.abs(components), axis=1)
    signs = np.sign(components[np.arange(len(components)), largest])
    components *= np.where(signs == 0, 1.0, signs)[:, None]
    points = centred @ components.T  # (n, D) @ (D, dims) -> (n, dims)
    ratios = (points**2).sum(axis=0) / total if total > 0 else np.zeros(dims)
    return points, ratios


def _one_blas_thread() -> Any:
    """BLAS on one thread while PCA runs: 50,000 x 384 takes about 0.6 s so, and waiting threads on a busy machine
    made it take several seconds. threadpoolctl comes with scikit-learn; the previous limit is restored on exit."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn depends on it
        from contextlib import nullcontext

        return nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def tsne_perplexity(n: int, settings: ProjectionSettings) -> float:
    """The perplexity t-SNE uses for n points: the setting, or min(30, (n - 1) / 3)."""
    if settings.perplexity is None:
        return float(min(30.0, (n - 1) / 3))
    perplexity = float(settings.perplexity)
    if not 0 < perplexity < n:
        raise InputError(
            f"The t-SNE perplexity must be between 0 and the number of points ({n}), got {settings.perplexity}.",
            f"Leave it unset for the rule min(30, (n - 1) / 3) = {min(30.0, (n - 1) / 3):.4g}.",
        )
    return perplexity


def _tsne(matrix: np.ndarray, dims: int, seed: int, settings: ProjectionSettings) -> tuple[np.ndarray, dict]:
    from sklearn.manifold import TSNE

    perplexity = tsne_perplexity(len(matrix), settings)
    tsne = TSNE(
        n_components=dims,
        perplexity=perplexity,
        metric=settings.metric,
        init="pca",
        learning_rate="auto",
        max_iter=settings.max_iter,
        random_state=int(seed),
    )
    points = tsne.fit_transform(matrix.astype(np.float32))  # (n, dims)
    return points, {"seed": int(seed), "perplexity": perplexity, "metric": settings.metric}


def umap_neighbors(n: int, settings: ProjectionSettings) -> int:
    """The n_neighbors UMAP uses for n points: the setting, or min(15, n - 1)."""
    if settings.neighbors is None:
        return min(15, n - 1)
    if isinstance(settings.neighbors, bool) or not 2 <= settings.neighbors < n:
        raise InputError(
            f"UMAP's neighbours must be at least 2 and fewer than the points ({n}), got {settings.neighbors}.",
            f"Leave it unset for the rule min(15, n - 1) = {min(15, n - 1)}.",
        )
    return int(settings.neighbors)


def _umap(matrix: np.ndarray, dims: int, seed: int, settings: ProjectionSettings) -> tuple[np.ndarray, dict]:
    try:
        import umap
    except ImportError:
        raise InputError("UMAP needs the umap-learn package, which is not installed.", UMAP_HINT) from None
    import warnings

    neighbors = umap_neighbors(len(matrix), settings)
    small = len(matrix) <= dims + 1  # the spectral start needs more points than dimensions + 1
    reducer = umap.UMAP(
        n_neighbors=neighbors,
        n_components=dims,
        min_dist=settings.min_dist,
        metric=settings.metric,
        init="random" if small else "spectral",
        random_state=int(seed),
        n_jobs=1,  # a seed makes umap-learn run single-threaded anyway; saying so silences its warning
    )
    with warnings.catch_warnings():  # only inside this call: umap-learn warns about its own choices
        warnings.simplefilter("ignore")
        points = reducer.fit_transform(matrix.astype(np.float32))  # (n, dims)
    return points, {"seed": int(seed), "neighbors": neighbors, "min_dist": settings.min_dist, "metric": settings.metric}


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
    from ..similarity.index import token_classes

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
    settings: ProjectionSettings = ProjectionSettings(),
) -> Projection:
    """Static vectors projected: rows of `word_embeddings` for `tokens`, or for the first `count` whole-word tokens
    (`whole_word_ids`: for BERT's vocabulary, the most frequent words first).

    A token is an id (int), a vocabulary token ("dog", "##ing", "[CLS]") or a word, whose pieces' rows are averaged
    (as `embeddings.static.vector` does). `label` is a user label for the metadata column 'label': one string for
    every point or one per token. Metadata: query, piece, id (None for a pooled word), kind, unknown, label.
    """
    from ..embeddings.static import _unknown_id, word_vector

    if (tokens is None) == (count is None):
        raise InputError("Give either tokens or count, not both and not neither.", "Example: tokens=['dog', 'cat'].")
    if count is not None:
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < MIN_POINTS:
            raise InputError(
                f"count must be an integer of at least {MIN_POINTS}, got {count!r}.", "Example: count=1000."
            )
        ids = whole_word_ids(model)
        if count > len(ids):
            raise InputError(
                f"The vocabulary has only {len(ids):,} whole-word tokens, fewer than the {count:,} asked for.",
                f"Ask for at most {len(ids):,}, or give the tokens.",
            )
        queries: list[str | int] = [int(i) for i in ids[:count]]
    else:
        queries = items(tokens, "tokens (of tokens, ids or words)", "['dog', 'cat', 3899]")
    rows = model.embedding_weights.word_embeddings  # (vocab, E)
    vocabulary = model.vocabulary
    unknown_id = _unknown_id(model)
    vectors: list[np.ndarray] = []
    columns: dict[str, list[Any]] = {"query": [], "piece": [], "id": [], "kind": [], "unknown": []}
    labels: list[str] = []
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
            row = (str(query), piece, found, kind, found == unknown_id)
            labels.append(piece)
        else:  # a word: its pieces' rows mean-pooled, as bertlens.embeddings.static.word_vector does
            pooled = word_vector(model, query)  # type: ignore[arg-type]
            vectors.append(pooled.vector)
            row = (pooled.query, " ".join(pooled.pieces), None, "word", pooled.unknown)
            labels.append(pooled.query)
        for name, value in zip(columns, row, strict=True):
            columns[name].append(value)
    labels_column = _label_column(label, len(vectors))
    metadata: dict[str, Sequence[Any]] = dict(columns)
    if labels_column is not None:
        metadata["label"] = labels_column
    what = f"the first {count:,} whole-word tokens" if count is not None else f"{len(vectors):,} tokens"
    return project(
        np.stack(vectors) if vectors else np.zeros((0, 1)),  # (n, E)
        labels,
        method,
        dims,
        seed,
        metadata,
        settings=settings,
        title=f"Input-matrix rows (word_embeddings) of {what}, {model_name(model)}",
    )


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
    settings: ProjectionSettings = ProjectionSettings(),
) -> Projection:
    """Every word's (level 'word': pieces mean-pooled) or token's vector at `layer` over `texts`, projected.

    `layer` 0 is the embedding output, -1 the last layer. `special` keeps [CLS]/[SEP]-like tokens (level 'token').
    Metadata: sentence (text index), position (word or token index), word, piece, layer.
    """
    _check_choice(level, LEVELS, "level", "word or token")
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
                runs = _runs(states.tokens)
                vectors.extend(pool_words(layer_states, [[t.index for t in run] for run in runs], "mean"))  # (w, H)
                for index, run in enumerate(runs):
                    word = states.text[run[0].start : run[-1].end]
                    _append(columns, number, index, word, " ".join(t.piece for t in run), chosen_layer)
                    labels.append(word)
            else:
                words = {t.index: states.text[run[0].start : run[-1].end] for run in _runs(states.tokens) for t in run}
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
    )


def _append(columns: dict[str, list[Any]], sentence: int, position: int, word: Any, piece: str, layer: int) -> None:
    for name, value in (("sentence", sentence), ("position", position), ("word", word), ("piece", piece)):
        columns[name].append(value)
    columns["layer"].append(layer)


@dataclass(frozen=True, repr=False)
class Trajectory(Result):
    """A word's vector at every layer (0 = embedding output .. L) in each sentence, projected by one shared fit."""

    model: str
    word: str
    sentences: tuple[str, ...]
    layers: tuple[int, ...]  # 0 .. L
    points: np.ndarray  # (sentences, layers + 1, dims) float32, all from ONE projection of every (sentence, layer)
    method: str
    dims: int
    explained: tuple[float, ...] | None  # PCA: variance fraction per axis
    spans: tuple[tuple[int, int], ...]  # per sentence: the character offsets of the occurrence followed (the first)
    pieces: tuple[tuple[str, ...], ...]  # per sentence: the word's pieces there
    parameters: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        s, layers, dims = self.points.shape
        return f"Trajectory({self.word!r}: {s} sentences x {layers} layers, {self.method} to {dims} dims)"

    def projection(self) -> Projection:
        """The same points flat (sentence-major), with metadata sentence and layer: what was fitted."""
        s, layers, dims = self.points.shape
        return Projection(
            method=self.method,
            dims=dims,
            points=self.points.reshape(s * layers, dims),  # (sentences * (layers + 1), dims)
            labels=tuple(f"{self.word} s{i} L{layer}" for i in range(s) for layer in self.layers),
            metadata={
                "sentence": tuple(i for i in range(s) for _ in self.layers),
                "layer": tuple(layer for _ in range(s) for layer in self.layers),
            },
            explained=self.explained,
            parameters=self.parameters,
            title=f"{self.word!r} across layers in {s} sentences",
        )

    def to_table(self) -> str:
        axes = ["x", "y", "z"][: self.dims]
        rows = [
            (i, layer, *self.points[i, j].tolist())
            for i in range(len(self.sentences))
            for j, layer in enumerate(self.layers)
        ]
        places = table(
            ["#", "sentence", "chars", "pieces"],
            [
                (i, visible(s if len(s) <= 60 else s[:59] + "…"), f"{a}:{b}", " ".join(p))
                for i, (s, (a, b), p) in enumerate(zip(self.sentences, self.spans, self.pieces, strict=True))
            ],
        )
        n = len(self.sentences) * len(self.layers)
        return "\n".join(
            [
                f"{self.word!r} in {len(self.sentences)} sentences, every layer, one shared projection:",
                places,
                "",
                table(["sentence", "layer", *axes], rows),
                describe(self.method, self.dims, n, self.explained, self.parameters),
            ]
        )


def trajectory(
    model: Model,
    word: str,
    sentences: Sequence[str],
    method: ProjectionMethod = "pca",
    dims: int = 2,
    seed: int = 0,
    options: RunOptions | None = None,
    *,
    settings: ProjectionSettings = ProjectionSettings(),
) -> Trajectory:
    """`word`'s vector (pieces mean-pooled) at layers 0..L in each sentence, all (sentence, layer) vectors projected
    together by one fit, so every layer lies in the same space. The first occurrence in each sentence is followed.
    """
    if not isinstance(word, str) or not word.strip():
        raise InputError("The word is empty.", "Give the word to follow, e.g. bread.")
    sentences = items(sentences, "sentences", "['I like bread', 'Banana bread is good']")
    if not sentences:
        raise InputError("No sentences were given.", "Give one or more sentences that contain the word.")
    states = hidden_states(model, sentences, options=options or RunOptions())
    stacked, spans, pieces = [], [], []
    for s, result in enumerate(states.results):
        runs = occurrences(result, word)
        if not runs:
            raise InputError(
                f"{word!r} does not occur in sentence {s}: {sentences[s]!r}.",
                "Every sentence must contain the word as a whole word (case does not matter).",
            )
        indices = [t.index for t in runs[0]]
        stacked.append(np.stack([pool_pieces(layer[indices], "mean") for layer in result.states]))  # (L+1, H)
        spans.append((runs[0][0].start, runs[0][-1].end))
        pieces.append(tuple(t.piece for t in runs[0]))
    vectors = np.stack(stacked)  # (sentences, layers + 1, H)
    s, layers, hidden = vectors.shape
    flat = project(
        vectors.reshape(s * layers, hidden),  # (sentences * (layers + 1), H), sentence-major
        [f"{word} s{i} L{j}" for i in range(s) for j in range(layers)],
        method,
        dims,
        seed,
        settings=settings,
    )
    return Trajectory(
        model=model.source.description,
        word=word,
        sentences=tuple(sentences),
        layers=tuple(range(layers)),
        points=flat.points.reshape(s, layers, dims),  # (sentences, layers + 1, dims)
        method=method,
        dims=dims,
        explained=flat.explained,
        spans=tuple(spans),
        pieces=tuple(pieces),
        parameters=flat.parameters,
    )


# --- position and token-type rows ----------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class PositionSimilarity(Result):
    """Cosine similarity of every pair of `position_embeddings` rows, and of the `token_type_embeddings` rows."""

    model: str
    family: str
    rows: int  # position rows compared (the first `rows` of the table)
    table_rows: int  # rows in the whole table
    first_position: int  # the row of a text's first token (RoBERTa-like: padding_idx + 1; rows before it unused)
    cosine: np.ndarray  # (rows, rows) float64
    norms: np.ndarray  # (rows,) float64: each position row's length
    token_types: np.ndarray | None  # (types, types) float64 cosine of token_type_embeddings rows; None if absent
    token_type_norms: np.ndarray | None  # (types,)
    notes: tuple[str, ...]

    def __repr__(self) -> str:
        return f"PositionSimilarity({self.family}, {self.rows} positions)"

    def by_distance(self, distances: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256)) -> list[tuple[int, float]]:
        """Mean cosine of position rows i and i + d, for each distance d that fits (over used rows)."""
        used = self.cosine[self.first_position :, self.first_position :]
        return [(d, float(np.diagonal(used, d).mean())) for d in distances if d < len(used)]

    def to_table(self) -> str:
        lines = [
            f"{self.family} position_embeddings: {self.rows} of {self.table_rows} rows compared "
            f"(cosine of rows i and j); a text's first token uses row {self.first_position}.",
            table(["distance", "mean cosine"], self.by_distance()),
            f"norms of the rows: min {self.norms.min():.4g}, mean {self.norms.mean():.4g}, max {self.norms.max():.4g}",
        ]
        if self.token_types is not None and self.token_type_norms is not None:
            rows = [
                (i, float(self.token_type_norms[i]), *self.token_types[i].tolist())
                for i in range(len(self.token_types))
            ]
            lines += ["", "token_type_embeddings rows:", table(["type", "norm", *map(str, range(len(rows)))], rows)]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _cosine_matrix(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cosines of every pair of rows (n, E) in float64: (n, n), and the norms (n,). A zero row has cosine 0."""
    wide = rows.astype(np.float64)
    norms = np.linalg.norm(wide, axis=1)
    unit = wide / np.where(norms == 0, 1, norms)[:, None]
    return unit @ unit.T, norms


def position_similarity(model: Model, limit: int | None = None) -> PositionSimilarity:
    """Cosine similarity of the first `limit` (default: all) rows of the position table, and of the token-type rows.

    Families without absolute position rows (ModernBERT's rotary positions, DeBERTa-v2's relative attention) have
    nothing to compare: a clear InputError.
    """
    weights = model.embedding_weights
    positions = weights.position_embeddings
    if positions is None:
        raise InputError(
            f"{model.family.label} adds no absolute position rows in its embedding layer: positions enter inside "
            "attention (relative or rotary), so there is no position table to compare.",
            "Use a model with absolute positions (BERT, RoBERTa, DistilBERT, ALBERT, ELECTRA).",
        )
    total = len(positions)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 1):
        raise InputError(f"limit must be a positive integer, got {limit!r}.", f"This table has {total} rows.")
    rows = total if limit is None else min(int(limit), total)
    notes: list[str] = []
    if limit is not None and limit > total:
        notes.append(f"limit {limit} is more than the table's {total} rows: all {total} are shown.")
    first = (model.config.pad_token_id or 0) + 1 if model.family.position_scheme == "absolute-offset" else 0
    if first:
        notes.append(
            f"Rows 0..{first - 1} are never used for real tokens: position ids start at padding_idx + 1 = {first}."
        )
    cosine, norms = _cosine_matrix(positions[:rows])
    types = weights.token_type_embeddings
    type_cosine, type_norms = (None, None) if types is None else _cosine_matrix(types)
    if types is None:
        notes.append(f"{model.family.label} has no token_type_embeddings.")
    return PositionSimilarity(
        model=model.source.description,
        family=model.family.label,
        rows=rows,
        table_rows=total,
        first_position=min(first, rows - 1),
        cosine=cosine,
        norms=norms,
        token_types=type_cosine,
        token_type_norms=type_norms,
        notes=tuple(notes),
    )
