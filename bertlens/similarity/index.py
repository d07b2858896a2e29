"""The input matrix prepared for similarity search: unit-length rows, token classes for filters, adjusted spaces
(`space`), and the precomputed neighbour table (ranked by the search kernel, `kernel`).

The unit rows and token classes of a model loaded from files are cached on disk (one folder per model, keyed by its
weights and tokenizer files' paths, sizes and modification times) and memory-mapped, so a cold `bertlens neighbors`
needs neither torch nor a pass over the matrix. The cache is rebuilt when the model files change. A cache path that is a
file is an error; a cache folder that cannot be written is skipped with a warning (logger
"bertlens.similarity.index", which reaches stderr when logging is not configured).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import NAME, InputError
from ..core.model import Model, require_model
from ..core.outputs import STAGING_MARKER, atomic_file, check_place, make_folder, staging
from ..core.sources import expand_user
from ..embeddings.token_classes import TokenFilter, token_classes
from .kernel import exact_top
from .space import Adjustment, Space, adjusted_space, unit_rows

CACHE_VERSION = 1
CACHE_ENV_VAR = "BERTLENS_CACHE"
CACHE_DIR = {"cache_dir": NAME}  # the argument an error about the cache folder may name
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NeighborTable:
    """Each row's nearest rows by cosine, precomputed: (rows, K) ids and float64 scores, best first.

    Built over the rows `TokenFilter()` allows (no specials, no [unused…]), each row's own id excluded, with the
    same exact re-scoring as a scan, so a lookup returns what a scan would.
    """

    ids: np.ndarray  # (rows, K) int32
    scores: np.ndarray  # (rows, K) float64

    @property
    def width(self) -> int:
        return int(self.ids.shape[1])


TABLE_WIDTH = 50  # neighbours kept per row: enough for k <= 50 under any stricter filter that leaves k of them


@dataclass
class VectorIndex:
    """The input matrix of one model, ready for nearest-neighbour queries."""

    model: Model
    tokens: list[str | None]  # by id
    raw: Space
    classes: dict[str, np.ndarray]  # token class name -> (rows,) bool
    folder: Path | None = None  # the cache folder, when the model has one
    table: NeighborTable | None = None  # precomputed neighbours, when built (see `precompute`)
    _spaces: dict[Adjustment, Space] = field(default_factory=dict, repr=False)
    _baselines: dict[tuple[Adjustment, TokenFilter], float] = field(default_factory=dict, repr=False)

    @property
    def rows(self) -> int:
        return len(self.tokens)

    @property
    def dims(self) -> int:
        return int(self.raw.rows.shape[1])

    def allowed(self, filters: TokenFilter) -> np.ndarray:
        """(rows,) bool: which rows `filters` lets through."""
        return filters.keep(self.classes)

    def space(self, adjustment: Adjustment) -> Space:
        """The raw space, or the adjusted one (computed once per adjustment)."""
        if not adjustment.active:
            return self.raw
        if adjustment not in self._spaces:
            self._spaces[adjustment] = adjusted_space(
                self.raw.rows, adjustment, self.allowed(TokenFilter(special=False))
            )
        return self._spaces[adjustment]

    def precompute(self, width: int = TABLE_WIDTH, progress: Callable[[float], None] | None = None) -> NeighborTable:
        """Build (or read from the cache) every row's `width` nearest rows, so token queries become lookups.

        One pass over rows x rows (about 15 s for the default model on 2 cores), written to the cache folder.
        `progress`, when given, is called with the share of rows done (0.0 before the first block, then after each
        block of 1,024 rows; 1.0 once the table is in place) on the calling thread.
        """
        if self.table is not None and self.table.width >= width:
            if progress is not None:
                progress(1.0)
            return self.table
        allowed = self.allowed(TokenFilter())
        ids = np.empty((self.rows, width), dtype=np.int32)
        scores = np.empty((self.rows, width), dtype=np.float64)
        unit_t = np.ascontiguousarray(self.raw.unit.T)  # (E, rows)
        for start in range(0, self.rows, 1024):
            if progress is not None:
                progress(start / self.rows)
            block = np.asarray(self.raw.unit[start : start + 1024])  # (b, E)
            own = [[start + i] for i in range(len(block))]
            rows = self.raw.rows[start : start + len(block)]  # exact scores start from the raw rows, as a scan's do
            found, values = exact_top(self.raw, rows, block @ unit_t, allowed, own, width, "cosine")
            ids[start : start + len(block)], scores[start : start + len(block)] = found, values
        self.table = NeighborTable(ids, scores)
        if self.folder is not None:
            _save_quietly(self.folder / "table.npz", ids=ids, scores=scores)
        if progress is not None:
            progress(1.0)
        return self.table

    def baseline(self, adjustment: Adjustment, filters: TokenFilter, pairs: int = 20_000, seed: int = 0) -> float:
        """Mean cosine of random pairs of distinct allowed rows: how high "high" is in this space."""
        key = (adjustment, filters)
        if key not in self._baselines:
            ids = np.flatnonzero(self.allowed(filters))
            if len(ids) < 2:
                return float("nan")
            rng = np.random.default_rng(seed)
            a, b = rng.choice(ids, pairs), rng.choice(ids, pairs)
            distinct = a != b
            unit = self.space(adjustment).unit
            cosines = np.einsum("ij,ij->i", unit[a[distinct]], unit[b[distinct]], dtype=np.float64)
            self._baselines[key] = float(cosines.mean())
        return self._baselines[key]


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """$BERTLENS_CACHE (unset or empty: $XDG_CACHE_HOME/bertlens, else ~/.cache/bertlens)."""
    env = os.environ if env is None else env
    if env.get(CACHE_ENV_VAR):
        return Path(env[CACHE_ENV_VAR]).expanduser()
    return Path(env.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "bertlens"


def cache_root(cache_dir: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The folder that holds the caches: `cache_dir`, else the default; `InputError` when it cannot be a folder."""
    env = os.environ if env is None else env
    if cache_dir is not None and not isinstance(_text(cache_dir), str):
        raise InputError(
            f"cache_dir must be a folder path, got {type(cache_dir).__name__}.",
            f"Pass a folder path, or None for ${CACHE_ENV_VAR} or ~/.cache/bertlens.",
        )
    if cache_dir is not None:
        given, origin = str(_text(cache_dir)), "{cache_dir}"
    else:
        given, origin = env.get(CACHE_ENV_VAR, ""), CACHE_ENV_VAR
    if cache_dir is None and given == "":  # unset, or set empty: the default
        root, origin = default_cache_dir(env), "the default cache folder"
    elif not given.strip() or "\0" in given:
        raise InputError(
            f"The cache folder from {origin} is {'blank' if not given.strip() else 'not a usable path'}: {given!r}.",
            f"Give a folder (it is created when missing), or leave {origin} out for ~/.cache/bertlens.",
            arguments=CACHE_DIR,
        )
    else:
        root = expand_user(given)
    _check_folder_path(root, origin)
    return check_place(
        root, f"cache folder (from {origin})", arguments=CACHE_DIR
    )  # never a model's folder nor an installed package


def _text(path: object) -> str | None:
    """A str or str path as text; None for anything else (bytes paths included)."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    return text if isinstance(text, str) else None


def _check_folder_path(root: Path, origin: str) -> None:
    """`InputError` when `root`, or the nearest of its parents that exists, is not a folder."""
    for path in (root, *root.parents):
        try:
            is_folder = path.is_dir()
            exists = is_folder or path.exists()
        except OSError:
            return  # cannot tell (e.g. no permission): writing will fail and warn
        if not exists:
            continue
        if is_folder:
            return
        where = "is a file" if path == root else f"lies inside {path}, which is a file"
        raise InputError(
            f"The cache folder {root} (from {origin}) {where}, not a folder.",
            f"Point {origin} at a folder (it is created when missing), or move the file away.",
            arguments=CACHE_DIR,
        )


def _fingerprint(model: Model) -> str | None:
    files = [*model.source.weights_files, *model.source.tokenizer_files]
    if not files:
        return None
    digest = hashlib.sha256(f"v{CACHE_VERSION}".encode())
    for file in files:
        stat = file.stat()
        digest.update(f"{file.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:32]


def open_index(
    model: Model, cache_dir: str | os.PathLike[str] | None = None, *, precompute: bool = False
) -> VectorIndex:
    """The similarity index of `model`: read from the cache when fresh, else built (and cached when possible).

    `precompute` also builds the neighbour table (once; later opens read it from the cache), which turns token
    queries into lookups: worth it for a long-running process that answers many queries.

    >>> model = load_model()
    >>> index = open_index(model, precompute=True)  # every token's 50 nearest, built once and cached  # doctest: +SKIP
    >>> neighbors(model, "dog", 5, index=index).neighbors[0].token  # doctest: +SKIP
    'dogs'
    """
    model = require_model(model)
    root = cache_root(cache_dir)
    tokens = model.vocabulary.tokens_by_id(model.matrix_rows)
    key = _fingerprint(model)
    folder = None if key is None else root / key
    rows = model.embedding_weights.word_embeddings
    cached = None if folder is None else _read_cache(folder, len(tokens))
    if cached is not None:
        unit, classes = cached
    else:
        unit, classes = unit_rows(rows), token_classes(tokens, model.vocabulary.special_ids)
        if folder is not None:
            _write_cache(folder, unit, classes)
    index = VectorIndex(model, tokens, Space(rows=rows, unit=unit), classes, folder=folder)
    index.table = None if folder is None else _read_table(folder / "table.npz", len(tokens))
    if precompute:
        index.precompute()
    return index


def _read_table(file: Path, rows: int) -> NeighborTable | None:
    try:
        with np.load(file) as data:
            table = NeighborTable(data["ids"], data["scores"])
    except (OSError, ValueError, KeyError):
        return None
    return table if table.ids.shape[0] == rows and table.ids.shape == table.scores.shape else None


def _save_quietly(file: Path, **arrays: np.ndarray) -> None:
    """Write an .npz into the cache atomically (the umask's permissions); a cache that cannot be written is skipped."""
    try:
        with atomic_file(file) as handle:
            np.savez(handle, **_named(arrays))
    except OSError as exc:
        _warn_unwritable(file.parent, exc)


def _named(arrays: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """The arrays to save by name, typed Any: numpy's stubs match a ** mapping against savez's own `allow_pickle`."""
    return dict(arrays)


def _warn_unwritable(folder: Path, exc: OSError) -> None:
    _log.warning(
        "bertlens: warning: cannot write the similarity cache in %s (%s); it is rebuilt on every run. "
        "Give --cache-dir (or BERTLENS_CACHE) a folder this user may write.",
        folder,
        exc.strerror or exc,
    )


def _read_cache(folder: Path, rows: int) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    try:
        unit = np.load(folder / "unit.npy")  # into memory: scans of an in-memory array run ~15% faster
        with np.load(folder / "classes.npz") as data:
            classes = {name: data[name] for name in data.files}
    except (OSError, ValueError, KeyError):
        return None
    if unit.shape[0] != rows or any(len(c) != rows for c in classes.values()):
        return None
    return unit, classes


def _write_cache(folder: Path, unit: np.ndarray, classes: dict[str, np.ndarray]) -> None:
    """Write the cache folder whole (staged, then renamed); any failure leaves no cache and no error."""
    try:
        make_folder(folder.parent)
        with staging(folder.parent, "index") as staged:
            np.save(staged / "unit.npy", unit)
            np.savez(staged / "classes.npz", **_named(classes))
            (staged / "about.json").write_text(json.dumps({"version": CACHE_VERSION, "shape": list(unit.shape)}))
            (staged / STAGING_MARKER).unlink()  # the folder is now the cache, no longer a staging
            os.replace(staged, folder)
    except OSError as exc:
        _warn_unwritable(folder.parent, exc)
