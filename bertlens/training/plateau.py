"""The frequency plateau: the phase of masked-LM training in which the input rows learn how frequent tokens are
before they learn what tokens mean.

Early in training the cheapest gain in the loss is the unigram distribution: predict frequent tokens. With the MLM
decoder tied to the input rows, the rows of frequent tokens move together (one shared direction, growing norms), so
every word's nearest rows become the most frequent tokens of the text ("the", ",", "of"), whatever the word means.
Later the rows leave this plateau: words' nearest rows become words of their kind, and the category purity rises.

`frequency_snapshot` measures it at one checkpoint (the watcher records it as `frequency` in watch.jsonl):

- `top_share`: the share of the probe words' nearest tokens that are among the `top` (100) most frequent tokens of
  the training text, with `chance`, the share rows in random directions would give (`top` over the rows allowed).
  The probe words and the learning groups' words (`purity.learning_groups`) are left out of those frequent tokens
  ("one", "two", "war" are among a text's most frequent): a neighbour of the same kind is meaning, not frequency;
- `norm_spearman`: Spearman's correlation of the row norms with the tokens' frequency in the training text (tokens
  that occur in it), near 0 for random rows.

`find_plateau` names the checkpoints where the plateau holds (`top_share` at least `PLATEAU_SHARE`, and at least
`PLATEAU_OVER_CHANCE` times its chance level) and where the rows left it, with the category purity at each.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

FREQUENT_TOP = 100  # the most frequent tokens of the training text, the plateau's "frequent tokens"
PLATEAU_SHARE = 0.1  # the plateau holds while at least a tenth of the probe words' nearest tokens are among them
PLATEAU_OVER_CHANCE = 10  # ... and that share is at least 10 times what random rows give (a small vocabulary's is high)


def frequency_snapshot(
    rows: np.ndarray,
    allowed: np.ndarray,
    counts: np.ndarray | None,
    neighbour_ids: Sequence[int],
    vocabulary: Any = None,
    words: Sequence[str] = (),
    top: int = FREQUENT_TOP,
) -> dict[str, Any] | None:
    """How much the rows (vocab, E) reflect token frequency now (see the module docstring); JSON-ready.

    `allowed` (vocab,) bool are the rows neighbours may be (specials left out), `counts` (vocab,) each token id's
    occurrences in the training text, `neighbour_ids` the probe words' nearest tokens' ids, `words` the probe words.
    With `vocabulary` (`token_to_id`, `id_to_token`) the probe and group words are left out of the frequent tokens,
    and the `top` tokens themselves are kept (`frequent`, most frequent first). None without counts."""
    if counts is None:
        return None
    counts = np.asarray(counts, dtype=np.int64)
    size = min(rows.shape[0], counts.shape[0])
    keep = np.zeros(rows.shape[0], dtype=bool)
    keep[:size] = allowed[:size] & (counts[:size] > 0)  # (vocab,) tokens of the training text
    seen = np.flatnonzero(keep)
    if seen.size < 2:
        return None
    order = seen[np.argsort(-counts[seen], kind="stable")]  # most frequent first; ties by lower id
    if vocabulary is not None:
        from .purity import learning_groups

        named = [*words, *(w for group in learning_groups().values() for w in group)]
        skip = {vocabulary.token_to_id(v) for w in named for v in (w, w.lower())} - {None}
        order = order[~np.isin(order, sorted(skip))]
    frequent = set(order[:top].tolist())
    ids = [int(i) for i in neighbour_ids]
    share = sum(i in frequent for i in ids) / len(ids) if ids else None
    from ..similarity.statistics import spearman

    norms = np.linalg.norm(rows[seen].astype(np.float64), axis=1)  # (seen,)
    correlation = spearman(norms, counts[seen].astype(np.float64))
    return {
        "top": top,
        "top_share": share,
        "chance": min(top, seen.size) / max(int(allowed.sum()), 1),  # a random row's nearest: any allowed row
        "neighbours": len(ids),
        "norm_spearman": None if math.isnan(correlation) else correlation,
        "tokens_counted": int(seen.size),
        "frequent": [] if vocabulary is None else [vocabulary.id_to_token(int(i)) for i in order[:top]],
    }


@dataclass(frozen=True)
class Plateau:
    """Where the rows learned frequency first: the checkpoints on the plateau, and where they left it."""

    found: bool  # the plateau held at some checkpoint after the first
    steps: tuple[int, ...]  # the checkpoints where it holds
    left_at: int | None  # the first checkpoint after the plateau where it no longer holds (None: never left)
    purity_on: float | None  # category purity at the plateau's last checkpoint
    purity_left: float | None  # category purity where the rows left it
    purity_last: float | None  # category purity at the last checkpoint
    text: str  # the plateau named in one or two sentences

    def to_dict(self) -> dict[str, Any]:
        return {
            "found": self.found,
            "steps": list(self.steps),
            "left_at": self.left_at,
            "purity_on": self.purity_on,
            "purity_left": self.purity_left,
            "purity_last": self.purity_last,
            "threshold": PLATEAU_SHARE,
            "over_chance": PLATEAU_OVER_CHANCE,
            "top": FREQUENT_TOP,
            "text": self.text,
        }


def _purity(record: Mapping[str, Any]) -> float | None:
    found = record.get("category_purity")
    return None if not found else float(found["purity"])


def _share(record: Mapping[str, Any]) -> float | None:
    found = record.get("frequency")
    return None if not found or found.get("top_share") is None else float(found["top_share"])


def find_plateau(records: Sequence[Mapping[str, Any]]) -> Plateau | None:
    """The frequency plateau in a run's watch records (None when they carry no `frequency`: an older run).

    It holds at a checkpoint after the untrained one where at least `PLATEAU_SHARE` of the probe words' nearest
    tokens (and `PLATEAU_OVER_CHANCE` times the chance level) are among the `FREQUENT_TOP` most frequent tokens; the
    rows left it at the first later checkpoint where that share fell below. A run that wanders onto it again is
    named by its longest stretch."""
    shares = [_share(r) for r in records]
    if all(s is None for s in shares):
        return None
    trained = [(i, s) for i, s in enumerate(shares) if i > 0 or records[0].get("step", 0) > 0]
    chance = [(r.get("frequency") or {}).get("chance") or 0.0 for r in records]
    holds = [i for i, s in trained if s is not None and s >= max(PLATEAU_SHARE, PLATEAU_OVER_CHANCE * chance[i])]
    last_purity = _purity(records[-1])
    if not holds:
        best = max((s for _, s in trained if s is not None), default=None)
        most = "" if best is None else f" (at most {best:.0%} of them)"
        text = (
            f"No frequency plateau seen: at no checkpoint were a tenth of the probe words' nearest rows among the "
            f"{FREQUENT_TOP} most frequent tokens{most}, {PLATEAU_OVER_CHANCE} times what random rows give."
        )
        return Plateau(False, (), None, None, None, last_purity, text)
    stretches: list[list[int]] = []
    for i in holds:
        if stretches and stretches[-1][-1] == i - 1:
            stretches[-1].append(i)
        else:
            stretches.append([i])
    stretch = max(stretches, key=len)
    steps = tuple(int(records[i]["step"]) for i in stretch)
    on = records[stretch[-1]]
    after = stretch[-1] + 1
    span = f"step {steps[0]}" if len(steps) == 1 else f"steps {steps[0]} to {steps[-1]}"
    peak = max(shares[i] or 0.0 for i in stretch)
    text = (
        f"The rows are learning frequency first: at {span} the probe words' nearest rows are the most frequent tokens "
        f"(up to {peak:.0%} of them among the text's {FREQUENT_TOP} most frequent)"
    )
    purity_on = _purity(on)
    if after >= len(records):
        text += f", and still are at the last checkpoint (category purity {_fmt(purity_on)})."
        return Plateau(True, steps, None, purity_on, None, last_purity, text)
    left = records[after]
    purity_left = _purity(left)
    text += (
        f". The rows left it by step {left['step']} ({_share_text(shares[after])} among them): category purity "
        f"{_fmt(purity_on)} on the plateau, {_fmt(purity_left)} at step {left['step']}, {_fmt(last_purity)} at the "
        f"last checkpoint (step {records[-1]['step']})."
    )
    return Plateau(True, steps, int(left["step"]), purity_on, purity_left, last_purity, text)


def _share_text(share: float | None) -> str:
    return "none measured" if share is None else f"{share:.0%}"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
