"""What a cosine means in an index: the mean cosine of random occurrences, and of random occurrences of one word.

Contextual vectors are anisotropic (Ethayarajh 2019): two random occurrences of unrelated words can have a cosine of
0.3 or more at the last layers, so a raw score says little on its own. `layer_baseline` samples, with a fixed seed,
`pairs` random pairs of occurrences and `pairs` random pairs of occurrences of the same word (an occurrence drawn
at random, its partner drawn among the other occurrences of its word) at one layer, and caches both means in the
index folder (`bertlens-baseline.json`, replaced atomically), keyed by the occurrences table's version so that
adding files to the index refreshes it. Only occurrences with a letter or digit count (punctuation is left out).

A score is best read against the same word's own pairs: `word_baseline` compares every pair of up to `WORD_SAMPLE`
occurrences of one word (drawn at random with a fixed seed) that lie in different texts, and keeps the percentiles
of their cosines, so a hit reads as "more alike than this word's typical pair" (above the median) or not. A surname
("Crane") among occurrences of the bird then reads as what it is: no closer than two random uses of the word.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.outputs import replace_text
from .store import OccurrenceIndex

CACHE = "bertlens-baseline.json"
PAIRS = 2000
SEED = 0
WORD_SAMPLE = 300  # occurrences of one word compared pairwise (all of them when it has fewer)


@dataclass(frozen=True)
class Baseline:
    """Mean cosines of random pairs at one layer of an index (NaN where the index has too few occurrences)."""

    layer: int
    random_pairs: float  # two random occurrences
    same_word_pairs: float  # two random occurrences of the same word
    pairs: int  # pairs sampled of each kind

    def reading(self, score: float) -> str:
        """A score read against the baseline: '0.62 here is high: random pairs 0.21, same-word pairs 0.48'."""
        if not np.isfinite(self.random_pairs):
            return f"{score:.2f}: the index is too small for a baseline."
        same = self.same_word_pairs
        if np.isfinite(same) and score >= same:
            level = "high"
        elif score > self.random_pairs:
            level = "between"
        else:
            level = "low"
        same_text = f"{same:.2f}" if np.isfinite(same) else "-"
        return (
            f"{score:.2f} here is {level}: random pairs {self.random_pairs:.2f}, same-word pairs {same_text} "
            f"(layer {self.layer}, {self.pairs:,} pairs each)"
        )


@dataclass(frozen=True)
class WordBaseline:
    """Cosines between random occurrences of one word in different texts, at one layer: what its typical pair scores."""

    word: str  # the word's key (casefolded)
    layer: int
    occurrences: int  # the word's occurrences in the index
    sampled: int  # of which compared (all, up to WORD_SAMPLE)
    pairs: int  # pairs from different texts compared (0: too few for a baseline)
    median: float  # NaN without pairs
    p90: float  # the 90th percentile
    quantiles: tuple[float, ...]  # the 0th to 100th percentiles (101 values; empty without pairs)

    @property
    def usable(self) -> bool:
        return self.pairs > 0

    def percentile(self, score: float) -> float | None:
        """The share (0..100) of the word's random pairs that score below `score`; None without pairs."""
        if not self.usable:
            return None
        levels = np.linspace(0.0, 100.0, len(self.quantiles))
        return float(np.interp(score, np.asarray(self.quantiles), levels))

    def reading(self, score: float) -> str:
        """A score read against the word's own pairs: 'more alike than this word's typical pair' or not."""
        if not self.usable:
            return (
                f"{score:.2f}: {self.word!r} has too few occurrences in different texts ({self.occurrences}) to say "
                "what its typical pair scores."
            )
        share = self.percentile(score) or 0.0
        level = "more alike than" if score > self.median else "no more alike than"
        return (
            f"{score:.2f} is {level} this word's typical pair: above {share:.0f}% of random pairs of {self.word!r} "
            f"occurrences in different texts (median {self.median:.2f}, 90th percentile {self.p90:.2f}; "
            f"{self.pairs:,} pairs of {self.sampled:,} occurrences, layer {self.layer})"
        )


def word_baseline(
    index: OccurrenceIndex, layer: int, key: str, *, sample: int = WORD_SAMPLE, seed: int = SEED
) -> WordBaseline:
    """The cosines of random pairs of `key`'s occurrences (different texts) at an absolute stored `layer`: read from
    the cache when it is current, else computed from up to `sample` occurrences and cached."""
    column = index.column(layer)
    name = f"word:{column}:{sample}:{seed}:{key}"
    found = _cached(index, name)
    if found is not None:
        quantiles = tuple(float(q) for q in found["quantiles"])
        return WordBaseline(
            key,
            layer,
            int(found["occurrences"]),
            int(found["sampled"]),
            int(found["pairs"]),
            _float(found["median"]),
            _float(found["p90"]),
            quantiles,
        )
    baseline = _word_sample(index, column, layer, key, sample, seed)
    _keep(
        index,
        name,
        {
            "occurrences": baseline.occurrences,
            "sampled": baseline.sampled,
            "pairs": baseline.pairs,
            "median": _plain(baseline.median),
            "p90": _plain(baseline.p90),
            "quantiles": list(baseline.quantiles),
        },
    )
    return baseline


def _word_sample(index: OccurrenceIndex, column: str, layer: int, key: str, sample: int, seed: int) -> WordBaseline:
    where = f"key = '{key.replace(chr(39), chr(39) * 2)}'"
    places = index.occurrences.search().where(where).select(["text_id", "position"]).limit(None).to_arrow()
    text_ids = places["text_id"].to_numpy(zero_copy_only=False).astype(np.int64)  # (occurrences,)
    positions = places["position"].to_numpy(zero_copy_only=False).astype(np.int64)
    count = len(text_ids)
    chosen = np.arange(count)
    if count > sample:
        chosen = np.sort(np.random.default_rng(seed).choice(count, sample, replace=False))
    wanted = set(zip(text_ids[chosen].tolist(), positions[chosen].tolist(), strict=True))
    if count > sample:
        where += f" AND text_id IN ({', '.join(map(str, sorted({t for t, _ in wanted})))})"
    rows = index.occurrences.search().where(where).select(["text_id", "position", column]).limit(None).to_arrow()
    keep = [
        i
        for i, place in enumerate(zip(rows["text_id"].to_pylist(), rows["position"].to_pylist(), strict=True))
        if place in wanted
    ]
    texts = np.asarray(rows["text_id"].to_pylist(), dtype=np.int64)[keep]  # (m,)
    vectors = rows[column].combine_chunks().values.to_numpy(zero_copy_only=False).astype(np.float64)
    vectors = vectors.reshape(rows.num_rows, index.dims)[keep]  # (m, D)
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), np.finfo(np.float64).tiny)
    upper = np.triu(np.ones((len(keep), len(keep)), dtype=bool), k=1) & (texts[:, None] != texts[None, :])
    cosines = (vectors @ vectors.T)[upper]  # (pairs,) each pair once, never two occurrences of one text
    if not len(cosines):
        return WordBaseline(key, layer, count, len(keep), 0, float("nan"), float("nan"), ())
    quantiles = np.quantile(cosines, np.linspace(0.0, 1.0, 101))
    return WordBaseline(
        key,
        layer,
        count,
        len(keep),
        len(cosines),
        float(np.median(cosines)),
        float(np.quantile(cosines, 0.9)),
        tuple(float(q) for q in quantiles),
    )


def layer_baseline(index: OccurrenceIndex, layer: int, *, pairs: int = PAIRS, seed: int = SEED) -> Baseline:
    """The baseline of an absolute stored `layer`: read from the cache when it is current, else sampled and cached."""
    column = index.column(layer)
    key = f"{column}:{pairs}:{seed}"
    found = _cached(index, key)
    if found is not None:
        return Baseline(layer, _float(found["random_pairs"]), _float(found["same_word_pairs"]), pairs)
    baseline = _sample(index, column, layer, pairs, seed)
    entry = {"random_pairs": _plain(baseline.random_pairs), "same_word_pairs": _plain(baseline.same_word_pairs)}
    _keep(index, key, entry)
    return baseline


def _cached(index: OccurrenceIndex, name: str) -> dict[str, Any] | None:
    """The cached entry `name`, if the cache was written for the index's current version."""
    cached = _read_cache(index)
    if cached.get("version") != int(index.occurrences.version):
        return None
    found: dict[str, Any] | None = cached.get("layers", {}).get(name)
    return found


def _keep(index: OccurrenceIndex, name: str, entry: dict[str, Any]) -> None:
    """Add `entry` under `name` to the cache of the index's current version (entries of older versions dropped)."""
    version = int(index.occurrences.version)
    cached = _read_cache(index)
    layers = cached.get("layers", {}) if cached.get("version") == version else {}
    layers[name] = entry
    with contextlib.suppress(OSError):  # a read-only index: the baseline is still shown, only not kept
        replace_text(index.path / CACHE, json.dumps({"version": version, "layers": layers}, indent=1))


def _float(value: Any) -> float:
    return float("nan") if value is None else float(value)


def _plain(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _read_cache(index: OccurrenceIndex) -> dict[str, Any]:
    try:
        data = json.loads((index.path / CACHE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _sample(index: OccurrenceIndex, column: str, layer: int, pairs: int, seed: int) -> Baseline:
    import pyarrow.compute as pc

    keys = index.occurrences.search().select(["key"]).limit(None).to_arrow()["key"]
    encoded = pc.dictionary_encode(keys).combine_chunks()
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)  # (rows,)
    wordlike = np.asarray([any(ch.isalnum() for ch in str(k)) for k in encoded.dictionary.to_pylist()], dtype=bool)
    rows = np.flatnonzero(wordlike[codes]) if len(codes) else np.zeros(0, dtype=np.int64)
    rng = np.random.default_rng(seed)
    nan = float("nan")
    if len(rows) < 2:
        return Baseline(layer, nan, nan, pairs)
    left = rng.choice(rows, pairs)
    right = rng.choice(rows, pairs)
    keep = left != right
    random_pairs = _mean_cosine(index, column, left[keep], right[keep])
    counts = np.bincount(codes[rows], minlength=len(wordlike))
    repeated = rows[counts[codes[rows]] >= 2]  # occurrences of a word that occurs again
    if not len(repeated):
        return Baseline(layer, random_pairs, nan, pairs)
    order = repeated[np.argsort(codes[repeated], kind="stable")]  # rows grouped by word
    group_codes = codes[order]
    first = np.searchsorted(group_codes, group_codes, side="left")
    size = np.searchsorted(group_codes, group_codes, side="right") - first
    picks = rng.integers(0, len(order), pairs)
    offsets = rng.integers(0, size[picks] - 1)  # among the word's other occurrences
    partner = first[picks] + offsets
    partner = np.where(partner >= picks, partner + 1, partner)
    return Baseline(layer, random_pairs, _mean_cosine(index, column, order[picks], order[partner]), pairs)


def _mean_cosine(index: OccurrenceIndex, column: str, left: np.ndarray, right: np.ndarray) -> float:
    if not len(left):
        return float("nan")
    wanted = np.unique(np.concatenate([left, right]))
    table = index.occurrences.take_offsets([int(i) for i in wanted]).select([column]).to_arrow()
    dims = index.dims
    vectors = table[column].combine_chunks().values.to_numpy(zero_copy_only=False)
    vectors = vectors.astype(np.float32).reshape(len(wanted), dims)  # (wanted, D)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.maximum(norms, np.finfo(np.float32).tiny)
    a = vectors[np.searchsorted(wanted, left)]  # (pairs, D)
    b = vectors[np.searchsorted(wanted, right)]  # (pairs, D)
    return float(np.mean(np.sum(a * b, axis=1)))
