"""What `diff` answers: two spaces compared token by token, summarised, with the tokens that moved most."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.errors import InputError
from ..core.results import Result, plain, table

if TYPE_CHECKING:
    from .contextual import ContextualDiff

WHY_ALIGN = (
    "Two separately trained spaces hold their geometry on arbitrary axes: the raw cosine of a token's row in A with "
    "its row in B is meaningless between them (a rotated copy of the very same space gives about 0). What compares "
    "is the geometry itself: the overlap of a token's nearest tokens (rotation leaves it unchanged), and the distance "
    "left after the rotation that best maps A onto B. The raw cosine means something only when B continues A's "
    "training from A's very rows."
)
SHOWN = 5  # neighbours shown per token in the table


@dataclass(frozen=True)
class Neighbour:
    token: str
    cosine: float


@dataclass(frozen=True)
class TokenChange(Result):
    """One shared token in both spaces: its nearest tokens in A and in B, their overlap, the distance left after
    alignment and (one width only) the raw cosine of its two rows."""

    token: str
    kind: str  # word, piece, number, punctuation or special
    id_a: int
    id_b: int
    overlap: float  # Jaccard of its k nearest tokens in A and in B
    residual: float  # 1 - cos(a R, b) after alignment
    raw_cosine: float | None
    count: int | None  # occurrences in the corpus given, None without one
    neighbours_a: tuple[Neighbour, ...]
    neighbours_b: tuple[Neighbour, ...]

    @property
    def shared(self) -> tuple[str, ...]:
        """The neighbours it keeps in both spaces, in A's order."""
        in_b = {n.token for n in self.neighbours_b}
        return tuple(n.token for n in self.neighbours_a if n.token in in_b)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "shared": list(self.shared)}

    def to_table(self) -> str:
        raw = "" if self.raw_cosine is None else f", raw cosine {self.raw_cosine:.3f}"
        rows = [
            (i + 1, a.token, round(a.cosine, 3), b.token, round(b.cosine, 3))
            for i, (a, b) in enumerate(zip(self.neighbours_a, self.neighbours_b, strict=True))
        ]
        return f"{self.token!r} ({self.kind}): overlap {self.overlap:.2f}, residual {self.residual:.3g}{raw}\n" + table(
            ("#", "nearest in A", "cosine A", "nearest in B", "cosine B"), rows
        )


@dataclass(frozen=True)
class GroupSummary:
    """The rows of one group (a token kind, a frequency bucket): how many, their mean overlap and residual."""

    label: str
    tokens: int
    overlap: float | None  # None for an empty group
    residual: float | None


@dataclass(frozen=True)
class PlanePoint:
    """A token in the aligned plane: where its row lies in A (after the rotation) and in B."""

    token: str
    a: tuple[float, float]
    b: tuple[float, float]
    moved: bool  # one of the tokens that moved most (drawn with an arrow); else a background token


@dataclass(frozen=True, repr=False)
class SpaceDiff(Result):
    """Two embedding spaces compared on the tokens their vocabularies share.

    >>> result = diff(load_model(), load_model("my-finetuned-bert/"))  # doctest: +SKIP
    >>> result.overlap_mean, result.fit  # doctest: +SKIP
    >>> result.token("bank")  # its neighbours in A and in B  # doctest: +SKIP
    """

    model_a: str
    model_b: str
    tokens: int  # shared tokens compared
    same_vocabulary: bool
    width_a: int
    width_b: int
    padded: str | None  # "A" or "B": whose rows were zero-padded to the other's width
    k: int
    overlap_mean: float
    overlap_median: float
    fit: float  # mean cosine after alignment
    residual_mean: float
    residual_median: float
    raw_cosine_mean: float | None  # one width only
    histogram: tuple[int, ...]  # tokens per overlap bin: [0, .1), [.1, .2), ..., [.9, 1.0]
    by_kind: tuple[GroupSummary, ...]
    corpus: str | None  # the corpus whose token counts make `by_frequency`
    by_frequency: tuple[GroupSummary, ...]
    moved: tuple[TokenChange, ...]  # the tokens that moved most (largest residual; specials left out)
    plane: tuple[PlanePoint, ...]
    contextual: ContextualDiff | None
    why: str = WHY_ALIGN
    # per shared token, for `token()` and pictures; not in to_dict()
    token_list: tuple[str, ...] = field(default=(), repr=False)
    overlap: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)  # (n,)
    residual: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)  # (n,)
    lookup: Any = field(default=None, repr=False)  # token -> TokenChange (diff.TokenLookup)

    def __repr__(self) -> str:
        return f"SpaceDiff({self.tokens} tokens, overlap {self.overlap_mean:.3f}, fit {self.fit:.3f})"

    def to_dict(self) -> dict[str, Any]:
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self) if f.repr}

    def token(self, token: str) -> TokenChange:
        """One shared token in both spaces (its neighbours in A and in B); InputError for a token not shared."""
        if self.lookup is None:
            raise InputError("This comparison keeps no per-token data.", "Run diff() again.")
        change: TokenChange = self.lookup(token)
        return change

    def to_table(self) -> str:
        vocab = "one vocabulary" if self.same_vocabulary else "the tokens both vocabularies hold"
        pad = f" (A's rows padded with zeros to {self.width_b})" if self.padded == "A" else ""
        pad = pad or (f" (B's rows padded with zeros to {self.width_a})" if self.padded == "B" else "")
        raw = (
            f"\nRaw row-to-row cosine, no alignment: mean {self.raw_cosine_mean:.3f} (meaningful only when B continues "
            "A's training)"
            if self.raw_cosine_mean is not None
            else ""
        )
        lines = [
            f"A: {self.model_a}",
            f"B: {self.model_b}",
            f"{self.tokens:,} shared tokens ({vocab}); widths {self.width_a} and {self.width_b}{pad}",
            f"Neighbour overlap (Jaccard of the {self.k} nearest tokens in A and in B): mean {self.overlap_mean:.3f}, "
            f"median {self.overlap_median:.3f}",
            f"Aligned (orthogonal Procrustes, A onto B): mean cosine {self.fit:.3f}; residual (1 - cosine) mean "
            f"{self.residual_mean:.3g}, median {self.residual_median:.3g}{raw}",
            "",
            table(("kind", "tokens", "overlap", "residual"), [_group_row(g) for g in self.by_kind]),
        ]
        if self.by_frequency:
            lines += [
                f"By the token's count in {self.corpus}:",
                table(("count", "tokens", "overlap", "residual"), [_group_row(g) for g in self.by_frequency]),
            ]
        lines += [
            f"The {len(self.moved)} tokens that moved most (largest residual after alignment):",
            table(
                ("token", "kind", "overlap", "residual", f"nearest in A (of {self.k})", "nearest in B"),
                [
                    (
                        m.token,
                        m.kind,
                        round(m.overlap, 2),
                        significant(m.residual),
                        ", ".join(n.token for n in m.neighbours_a[:SHOWN]),
                        ", ".join(n.token for n in m.neighbours_b[:SHOWN]),
                    )
                    for m in self.moved
                ],
            ),
        ]
        if self.contextual is not None:
            lines += ["", self.contextual.to_table()]
        return "\n".join(lines)


def significant(value: float) -> float:
    """`value` to 3 significant digits: a residual of 0.000211 stays readable, where 3 decimals would show 0."""
    return float(f"{value:.3g}")


def _group_row(group: GroupSummary) -> tuple[Any, ...]:
    overlap = "-" if group.overlap is None else round(group.overlap, 3)
    residual = "-" if group.residual is None else significant(group.residual)
    return (group.label, group.tokens, overlap, residual)
