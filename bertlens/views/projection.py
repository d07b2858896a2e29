"""Vectors projected to 2 or 3 dimensions for looking at: PCA, t-SNE, UMAP (data only; drawing is in bertlens.plots).

- `Projection`: the points, one label and one value per metadata column for each, and how they were made;
- `ProjectionSettings`: how t-SNE and UMAP run;
- `project`: any vectors (n, D) with a label per point and metadata columns; `pca` is its exact PCA.

What gets projected is built elsewhere: `bertlens.views.tokens` (rows of the input matrix, contextual vectors at one
layer) and `bertlens.views.trajectory` (a word's vector at every layer, one shared fit).

PCA is computed here with numpy in float64 (exact, fast: about a second for 50,000 x 384); t-SNE comes from
scikit-learn (Barnes-Hut) and UMAP from umap-learn (optional: `pip install "bertlens[umap]"`). Both are much slower
than PCA on large inputs (minutes for 50,000 points; see docs/benchmarks.md) and neither samples: every point given
is projected. scikit-learn and umap-learn are imported only when used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..core.checks import real_number, whole_number
from ..core.checks import seed as check_seed
from ..core.errors import InputError
from ..core.extras import require
from ..core.options import PROJECTION_METHODS, PROJECTION_METRICS, ProjectionMethod, ProjectionMetric
from ..core.results import Result, table, visible

MIN_POINTS = 3  # fewer points have no shape to show
SMALL_TSNE = 2_000  # a t-SNE of at most this many points runs on one thread (`_one_thread`)
TABLE_ROWS = 50  # rows a table shows; to_dict() always has every point


@dataclass(frozen=True)
class ProjectionSettings:
    """How t-SNE and UMAP run (PCA has no settings). None picks the rule written beside the field.

    >>> settings = ProjectionSettings(perplexity=10, metric="cosine")
    >>> points = project_tokens(load_model(), count=500, method="tsne", settings=settings)  # doctest: +SKIP
    """

    perplexity: float | None = None  # t-SNE: None = min(30, (n - 1) / 3), so 3 x perplexity + 1 neighbours exist
    neighbors: int | None = None  # UMAP n_neighbors: None = min(15, n - 1)
    min_dist: float = 0.1  # UMAP: how tightly points may pack (umap-learn's default)
    metric: ProjectionMetric = (
        "cosine"  # t-SNE and UMAP distances: cosine, as bertlens' similarities; PCA is always euclidean
    )
    max_iter: int = 1000  # t-SNE optimisation steps (scikit-learn's default; at least 250)

    def __post_init__(self) -> None:
        if self.perplexity is not None:
            real_number(self.perplexity, "perplexity", positive=True)
        if self.neighbors is not None:
            whole_number(self.neighbors, "neighbors", minimum=2)
        if not 0 <= real_number(self.min_dist, "min_dist") <= 1:
            raise InputError(f"UMAP's min_dist must be between 0 and 1, got {self.min_dist}.", "Example: 0.1.")
        check_option(self.metric, PROJECTION_METRICS, "metric", "cosine or euclidean")
        whole_number(self.max_iter, "max_iter", minimum=250)


@dataclass(frozen=True, repr=False)
class Projection(Result):
    """Points in 2 or 3 dimensions, one per input vector, each with a label and a value in every metadata column.

    >>> points = project_tokens(load_model(), ["king", "queen", "man", "woman"])
    >>> points.labels, points.metadata["id"]
    (('king', 'queen', 'man', 'woman'), (2332, 3035, 2158, 2450))
    """

    method: str  # 'pca', 'tsne' or 'umap'
    dims: int  # 2 or 3
    points: np.ndarray  # (n, dims) float32
    labels: tuple[str, ...]  # one per point: what a picture writes beside it
    metadata: dict[str, tuple]  # column -> one value per point (e.g. 'piece', 'word', 'sentence', 'layer', 'id')
    explained: tuple[float, ...] | None  # PCA: the fraction of the variance on each axis; None for t-SNE / UMAP
    parameters: dict[str, Any] = field(default_factory=dict)  # what the method used: seed, perplexity, neighbours…
    title: str = ""  # what the points are, in words (figures use it as their heading)
    nearest: np.ndarray | None = None  # (n, k) int: each point's nearest other points by cosine in the ORIGINAL space
    nearest_cosine: np.ndarray | None = None  # (n, k) float32: their cosines (None when not asked: `nearest=0`)
    featured: tuple[int, ...] = ()  # points worth a text label where not every point can have one (pictures)

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
            "nearest": None if self.nearest is None else self.nearest.tolist(),
            "nearest_cosine": None if self.nearest_cosine is None else self.nearest_cosine.tolist(),
            "featured": list(self.featured),
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


def check_option(value: object, choices: tuple[object, ...], what: str, example: str) -> None:
    """Refuse `value` unless it is one of `choices`: the error names them, and `example` says what they mean."""
    if value not in choices:
        raise InputError(f"Unknown {what} {value!r}.", f"Choose one of: {', '.join(map(str, choices))} ({example}).")


def _check_matrix(vectors: ArrayLike, dims: int) -> np.ndarray:
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
        raise InputError(
            f"{dims} dimensions need at least {dims} points, got {n}.",
            "Use {dims} or more points.",
            arguments={"dims": 2},
        )
    if width < dims:
        raise InputError(
            f"The vectors have {width} dimension(s): nothing to project to {dims}.",
            f"Project vectors of more than {dims} dimensions, or use fewer dims.",
        )
    if not np.isfinite(matrix).all():
        raise InputError("The vectors hold NaN or infinite values.", "Remove or fix those rows.")
    return matrix


def _plain_value(value: object) -> object:
    """A numpy scalar as its Python value (JSON-ready); any other value as it is."""
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
    vectors: ArrayLike,
    labels: Sequence[str],
    method: ProjectionMethod = "pca",
    dims: int = 2,
    seed: int = 0,
    metadata: Mapping[str, Sequence[Any]] | None = None,
    *,
    settings: ProjectionSettings = ProjectionSettings(),
    title: str = "",
    nearest: int = 0,
    progress: bool = False,
    featured: Sequence[int] = (),
) -> Projection:
    """Project `vectors` (n, D) to `dims` (2 or 3) dimensions with PCA, t-SNE or UMAP. Every point is kept.

    PCA is deterministic (each axis's sign fixed so that its largest loading is positive, as scikit-learn does);
    t-SNE and UMAP are seeded by `seed`. Needs at least 3 points. `nearest` > 0 also records each point's `nearest`
    nearest other points by cosine in the original space (what a projection distorts; the page shows them on click).
    `progress` shows a ticking clock on standard error while t-SNE or UMAP fits (they report no steps).
    `featured` names the points (indices) a picture labels when it cannot label every point.

    >>> import numpy as np
    >>> points = project(np.random.default_rng(0).normal(size=(100, 16)), [str(i) for i in range(100)], method="pca")
    >>> points.points.shape
    (100, 2)
    """
    check_option(
        method, PROJECTION_METHODS, "projection method", "pca is fast and exact; tsne and umap show neighbourhoods"
    )
    if isinstance(dims, bool) or dims not in (2, 3):
        raise InputError(f"A projection has 2 or 3 dimensions, got {dims!r}.", "Use dims=2 or dims=3.")
    check_seed(seed, "seed")
    if not isinstance(settings, ProjectionSettings):
        raise InputError(f"settings must be ProjectionSettings, got {settings!r}.", "Pass ProjectionSettings().")
    matrix = _check_matrix(vectors, dims)
    n = len(matrix)
    labels = tuple(str(label) for label in labels)
    if len(labels) != n:
        raise InputError(f"{len(labels)} labels were given for {n} points.", "Give one label per vector.")
    columns = _check_columns(metadata, n)
    if isinstance(nearest, bool) or not isinstance(nearest, (int, np.integer)) or nearest < 0:
        raise InputError(f"nearest must be a whole number of 0 or more, got {nearest!r}.", "Example: nearest=10.")
    chosen = tuple(int(i) for i in featured)
    if any(not 0 <= i < n for i in chosen):
        raise InputError(
            f"featured points must be indices from 0 to {n - 1}, got {list(featured)}.", "Example: featured=[0, 5]."
        )
    explained: tuple[float, ...] | None = None
    if method == "pca":
        points, ratios = pca(matrix, dims)
        explained = tuple(float(r) for r in ratios)
        parameters: dict[str, Any] = {}
    else:
        from ..core.progress import ticking

        name = "t-SNE" if method == "tsne" else "UMAP"
        with ticking(f"{name} of {n:,} points to {dims} dims", show=progress):
            if method == "tsne":
                points, parameters = _tsne(matrix, dims, seed, settings)
            else:
                points, parameters = _umap(matrix, dims, seed, settings)
    near, near_cosine = nearest_points(matrix, min(int(nearest), n - 1)) if nearest else (None, None)
    return Projection(
        method=method,
        dims=dims,
        points=np.ascontiguousarray(points, dtype=np.float32),
        labels=labels,
        metadata=columns,
        explained=explained,
        parameters=parameters,
        title=title,
        nearest=near,
        nearest_cosine=near_cosine,
        featured=chosen,
    )


def nearest_points(matrix: np.ndarray, k: int, chunk: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """Each row's `k` nearest other rows of `matrix` (n, D) by cosine, nearest first: indices (n, k) and cosines
    (n, k), float32. Computed in chunks of rows (memory: chunk x n); a zero row has cosine 0 with everything."""
    unit = np.asarray(matrix, dtype=np.float32)  # (n, D)
    norms = np.linalg.norm(unit, axis=1, keepdims=True)  # (n, 1)
    unit = unit / np.where(norms > 0, norms, np.float32(1.0))
    n = len(unit)
    indices = np.empty((n, k), dtype=np.int64)
    cosines = np.empty((n, k), dtype=np.float32)
    for start in range(0, n, chunk):
        scores = unit[start : start + chunk] @ unit.T  # (c, n)
        rows = np.arange(len(scores))
        scores[rows, start + rows] = -np.inf  # not itself
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]  # k < n: the k best, unordered
        order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
        indices[start : start + len(scores)] = np.take_along_axis(top, order, axis=1)
        cosines[start : start + len(scores)] = np.take_along_axis(scores, indices[start : start + len(scores)], axis=1)
    return indices, cosines


def pca(matrix: np.ndarray, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """The centred rows of `matrix` (n, D) on their first `dims` principal axes, in float64: (n, dims), and the
    fraction of the total variance on each axis: (dims,).

    Signs follow scikit-learn's rule (each axis's largest loading is positive), so the result equals
    `sklearn.decomposition.PCA(dims).fit_transform(matrix)`.
    """
    centred = np.array(matrix, dtype=np.float64)  # (n, D), a copy, centred in place
    centred -= centred.mean(axis=0)
    n, width = centred.shape
    with _one_thread():
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


def _one_thread(user_api: str | None = "blas") -> AbstractContextManager[object]:
    """One thread for `user_api` ("blas"; None: OpenMP and BLAS) while PCA or a small t-SNE runs: on a busy machine,
    threads waiting for each other made both many times slower (docs/benchmarks.md, "Projections: 50,000 points, no
    sampling"). The previous limits are restored on exit."""
    require("sklearn", extra="plots", what="A projection")  # for threadpoolctl, scikit-learn's own dependency
    from threadpoolctl import threadpool_limits

    limits: AbstractContextManager[object] = threadpool_limits(limits=1, user_api=user_api)
    return limits


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
    require("sklearn", extra="plots", what="t-SNE", otherwise='use method "pca"')
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
    with _one_thread(None) if len(matrix) <= SMALL_TSNE else nullcontext():  # few points: threads only wait
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
    import warnings

    require("umap", extra="umap", otherwise='use method "pca" or "tsne"')
    import umap

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
