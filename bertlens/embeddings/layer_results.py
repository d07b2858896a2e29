"""What the embedding layer's decomposition answers: each token's parts (`TokenEmbedding`), the whole text's
explanation with its check against the model (`EmbeddingLayerExplanation`), and the same tokens compared across two
inputs (`SharedToken`, `EmbeddingComparison`); each with its table. `bertlens.embeddings.layer` computes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import notebook
from ..core.errors import InputError
from ..core.results import Result, box, captured_tables, cell, html_table, table, visible

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True, repr=False)
class TokenEmbedding:
    """Every intermediate vector of one token. Vectors have E (embedding size) or H (hidden size) entries.

    >>> token = explain(load_model(), "hello, world!").tokens[1]
    >>> token.piece, token.position_id, token.word_row.shape
    ('hello', 1, (384,))
    """

    index: int
    piece: str
    id: int
    position_id: int | None  # None where the family adds no position rows
    token_type_id: int | None  # None where the family has no token types
    special: bool
    word_row: np.ndarray  # (E,) word_embeddings[id]: the static token vector
    position_row: np.ndarray | None  # (E,) position_embeddings[position_id]
    token_type_row: np.ndarray | None  # (E,) token_type_embeddings[token_type_id]
    sum: np.ndarray  # (E,) the rows added, in float32 and in the model's order: exactly LayerNorm's input
    projected: np.ndarray | None  # (H,) the sum projected before LayerNorm (DeBERTa with embedding_size != H)
    layer_norm_mean: float  # mean of LayerNorm's input (float64)
    layer_norm_std: float  # sqrt(variance + eps) of LayerNorm's input: the divisor (float64)
    layer_norm_output: np.ndarray  # (E,) or (H,) float32: the model's LayerNorm applied to the sum
    output: np.ndarray  # (H,) float32: the layer's output from the sum shown (with the projection where there is one)
    model_output: np.ndarray | None  # (H,) the layer's output as transformers computes it; None when not checked
    max_abs_diff: float | None  # max |output - model_output|

    def __repr__(self) -> str:
        return f"TokenEmbedding({self.piece!r}, id={self.id}, position={self.position_id}, type={self.token_type_id})"


# the vectors each token has, in the order the layer computes them: what `matrix` and `as_torch` take
PARTS = (
    "word_row",
    "position_row",
    "token_type_row",
    "sum",
    "projected",
    "layer_norm_output",
    "output",
    "model_output",
)


def _present(explanation: EmbeddingLayerExplanation) -> str:
    first = explanation.tokens[0] if explanation.tokens else None
    have = [p for p in PARTS if first is not None and getattr(first, p) is not None]
    return f"This one has {', '.join(map(repr, have))}."


@dataclass(frozen=True, repr=False)
class EmbeddingLayerExplanation(Result):
    """What the embedding layer computes for each token of a text, and how closely it matches the model.

    >>> x = explain(load_model(), "hello, world!")
    >>> x.matches, x.matrix("sum").shape
    (True, (6, 384))
    """

    model: str
    family: str
    text: str
    pair: str | None
    formula: str  # the computation, in this family's order
    steps: tuple[str, ...]  # each step, in order, with the parameter names
    absent_parts: tuple[str, ...]  # parts this family does not have, said plainly
    notes: tuple[str, ...]
    dropout: float  # the configured dropout probability
    dropout_active: bool  # False in eval mode: dropout does nothing
    tokens: tuple[TokenEmbedding, ...]
    checked: bool  # whether the model's own output was computed
    checked_against: str | None  # what computed it, e.g. "transformers 5.24.0 BertEmbeddings"; None when not checked
    max_abs_diff: float | None  # over all tokens and dimensions: 0.0 when the check holds (it asks for equality)
    float32_step: float | None  # float32 spacing (ulp) at the largest |output|: the unit of the model's rounding

    @property
    def matches(self) -> bool:
        """The check held: the sum shown, through the model's own modules, equals the model's output bit for bit."""
        return self.max_abs_diff is not None and self.max_abs_diff == 0.0

    def matrix(self, part: str) -> np.ndarray:
        """One part for all tokens stacked, e.g. `matrix("output")` -> (tokens, H); the parts are `PARTS`.

        >>> Lens().explain("hello, world!").matrix("position_row").shape
        (6, 384)
        """
        if part not in PARTS:
            raise InputError(
                f"{part!r} is not a part of the embedding layer.", f"Give one of {', '.join(map(repr, PARTS))}."
            )
        rows = [getattr(t, part) for t in self.tokens]
        if any(row is None for row in rows):
            why = "the model's output was not computed (check=False)" if part == "model_output" else "it has none"
            raise InputError(f"This {self.family} model's explanation has no {part!r}: {why}.", _present(self))
        return np.stack(rows)

    def __repr__(self) -> str:
        check = f", max |diff| {self.max_abs_diff:.2e}" if self.max_abs_diff is not None else ""
        return f"EmbeddingLayerExplanation({self.family}, {len(self.tokens)} tokens{check})"

    def check_summary(self) -> str:
        """The check against the model in plain words, naming what computed the model's side, with the one number the
        table's "max diff" column peaks at ("" when not checked)."""
        if not self.checked or self.max_abs_diff is None:
            return ""
        size = self.tokens[0].output.shape[0] if self.tokens else 0
        against = f"the model's own output, computed from the ids by {self.checked_against}"
        if self.matches:
            return (
                f"Check: the sum shown, through the model's own LayerNorm, is exactly equal to {against}, for every "
                f"token: the max diff column, each token's largest difference over its {size} numbers, is 0 everywhere."
            )
        return (
            f"Check: the sum shown, through the model's own LayerNorm, differs from {against} by up to "
            f"{cell(self.max_abs_diff)} (the largest in the max diff column): the rows shown are not the ones the "
            "model adds. Please report this."
        )

    def check_detail(self) -> str:
        """The check's technical detail: what ran on each side, and the difference in float32 steps (ulp)."""
        if not self.checked or self.max_abs_diff is None:
            return (
                "Not checked against the model: nothing ran in torch; LayerNorm (and any projection) computed in "
                "float64 and rounded once to float32."
            )
        steps = self.max_abs_diff / self.float32_step if self.float32_step else 0.0
        return (
            "Detail: ours = the model's LayerNorm module (and projection) on the float32 sum of the rows shown; "
            f"theirs = {self.checked_against} run on the token ids. max |ours - theirs| = {self.max_abs_diff:.2e} = "
            f"{steps:.1f} float32 steps (ulp) at the largest output (one step there: {self.float32_step or 0.0:.2e}). "
            "LayerNorm's mean and std are shown in float64."
        )

    def to_dict(self) -> dict[str, Any]:
        """Every field, and the check in words: `check_summary` (plain) and `check_detail` (technical)."""
        return {**super().to_dict(), "check_summary": self.check_summary(), "check_detail": self.check_detail()}

    def to_table(self, verbose: bool = False) -> str:
        """The tokens' table, the computation step by step and the check in plain words; `verbose` adds the check's
        technical detail (what ran on each side, the difference in float32 steps)."""

        def norm(v: np.ndarray | None) -> float | None:
            return None if v is None else float(np.linalg.norm(v))

        rows = [
            (
                t.index,
                visible(t.piece),
                t.id,
                t.position_id,
                t.token_type_id,
                norm(t.word_row),
                norm(t.position_row),
                norm(t.token_type_row),
                norm(t.sum),
                t.layer_norm_mean,
                t.layer_norm_std,
                norm(t.output),
                t.max_abs_diff,
            )
            for t in self.tokens
        ]
        headers = [
            "#",
            "piece",
            "id",
            "pos",
            "type",
            "|word|",
            "|pos|",
            "|type|",
            "|sum|",
            "LN mean",
            "LN std",
        ]
        lines = [table([*headers, "|output|", "max diff"], rows), "", f"{self.family}: {self.formula}"]
        lines += [f"  {i}. {s}" for i, s in enumerate(self.steps, 1)]
        lines += [f"  absent: {a}" for a in self.absent_parts]
        lines += [f"  note: {n}" for n in self.notes]
        if self.checked and self.max_abs_diff is not None:  # checked: the difference was measured
            lines.append(self.check_summary())
        if verbose:
            lines.append(self.check_detail())
        lines.append(
            "Each output depends only on (id, position, segment): the same token at the same position and segment is "
            "the same vector in every input; at another position it differs only by the position row (before "
            "LayerNorm)."
        )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """In a notebook: the formula, the check against the model (max_abs_diff, what ran), the steps, and
        each token's parts (norms of its rows, the sum, LayerNorm's mean and std, the output, its difference)."""
        headers, rows = captured_tables(self)[0]
        text = notebook.escape(self.text) + ("" if self.pair is None else f" / {notebook.escape(self.pair)}")
        verdict = notebook.check(
            self.checked and self.max_abs_diff is not None, self.matches, self.check_summary(), self.check_detail()
        )
        body = (
            f"<div>{notebook.escape(self.family)} embedding layer of <b>{text}</b></div>"
            f'<div class="bl-formula">{notebook.escape(self.formula)}</div>{verdict}'
            f"{notebook.listed(self.steps, ordered=True)}{html_table(headers, rows)}"
            f"{notebook.listed([f'absent: {a}' for a in self.absent_parts] + list(self.notes))}"
        )
        return box("EmbeddingLayerExplanation", body, notebook.STYLE)

    def as_torch(self, part: str = "output") -> torch.Tensor:
        """One part for all tokens as a torch tensor, e.g. `as_torch()` -> (tokens, H), the layer's output, to set
        beside `model.embeddings(ids)[0]`; or "word_row", "position_row", "sum", "layer_norm_output", ..."""
        return notebook.torch_tensor(self.matrix(part))


@dataclass(frozen=True)
class SharedToken:
    """A token id found in both inputs, and how its embedding-layer output differs between them."""

    piece: str
    id: int
    index_a: int
    index_b: int
    position_a: int | None
    position_b: int | None
    segment_a: int | None
    segment_b: int | None
    same_position_and_segment: bool
    output_max_abs_diff: float  # max |output_a - output_b|: 0 when id, position and segment agree
    rows_explain_sum: float  # max |(sum_a - sum_b) - (position/segment rows' difference)|: 0 by construction
    word_row_max_abs_diff: float = 0.0  # max |word row in a - word row in b|, measured: 0, the same row of the matrix
    position_row_max_abs_diff: float | None = None  # max |position row a - b|; None without position rows
    segment_row_max_abs_diff: float | None = None  # max |token-type row a - b|; None without token-type rows
    statement: str = ""  # the comparison in one sentence: the same word_embeddings row, and what differs


@dataclass(frozen=True, repr=False)
class EmbeddingComparison(Result):
    """The same token in two inputs: identical at the same (position, segment); otherwise only position rows move.

    >>> c = compare_inputs(load_model(), "I like eating bread", "The banana bread was horrible")
    >>> c.shared[0].piece
    '[CLS]'
    """

    model: str
    text_a: str
    text_b: str
    shared: tuple[SharedToken, ...]
    max_abs_diff_a: float | None  # each input's check against hidden_states[0]
    max_abs_diff_b: float | None

    def __repr__(self) -> str:
        return f"EmbeddingComparison({len(self.shared)} shared tokens)"

    def to_table(self, verbose: bool = False) -> str:
        """The shared tokens, each with the largest difference between its two outputs, and what explains it;
        `verbose` adds how far the position and segment rows themselves differ, and what the rows leave unexplained."""
        rows = []
        for s in self.shared:
            why = "identical" if s.same_position_and_segment else " and ".join(_moved(s)) or "nothing moved"
            row: tuple[Any, ...] = (
                visible(s.piece),
                s.id,
                f"{s.position_a}/{s.position_b}",
                f"{s.segment_a}/{s.segment_b}",
                why,
                s.output_max_abs_diff,
            )
            if verbose:
                row += (s.position_row_max_abs_diff, s.segment_row_max_abs_diff, s.rows_explain_sum)
            rows.append(row)
        head = ["piece", "id", "pos a/b", "seg a/b", "what differs", "max |output a - output b|"]
        if verbose:
            head += ["max |pos row a - b|", "max |seg row a - b|", "unexplained sum diff"]
        return "\n".join(
            [
                f"A: {self.text_a!r}",
                f"B: {self.text_b!r}",
                table(head, rows),
                "max |output a - output b|: the largest difference between the token's two output vectors, number "
                "by number.",
                *(_sentence(s, verbose) for s in self.shared),
                "At the embedding layer a token's vector depends only on its id, position and segment: with all "
                "three equal the outputs are identical; at another position the sums differ by exactly the "
                "difference of the position rows, and LayerNorm then rescales.",
            ]
        )


def _moved(s: SharedToken) -> list[str]:
    """What differs between a shared token's two places: its position, its segment."""
    return [
        name
        for name, a, b in (("position", s.position_a, s.position_b), ("segment", s.segment_a, s.segment_b))
        if a != b
    ]


def _sentence(s: SharedToken, verbose: bool) -> str:
    """One shared token in words, each number the one its table row shows (formatted as the table formats it)."""
    head = f"{visible(s.piece)!r} (id {s.id}): the same row of word_embeddings in both texts"
    if s.same_position_and_segment:
        return (
            f"{head}, at the same position and segment, so the outputs are identical "
            f"(max |output a - output b| = {cell(s.output_max_abs_diff)})."
        )
    places = []
    if s.position_a != s.position_b:
        places.append(f"position {s.position_a} in A and {s.position_b} in B")
    if s.segment_a != s.segment_b:
        places.append(f"segment {s.segment_a} in A and {s.segment_b} in B")
    text = (
        f"{head}, at {' and '.join(places)}: with those rows added and LayerNorm's rescaling, the outputs differ by "
        f"at most {cell(s.output_max_abs_diff)} (max |output a - output b|)."
    )
    if verbose:
        details = [
            f"the {name} rows differ by at most {cell(value)} (max |{short} row a - b|)"
            for name, short, value in (
                ("position", "pos", s.position_row_max_abs_diff),
                ("segment", "seg", s.segment_row_max_abs_diff),
            )
            if value
        ]
        if details:
            text += f" Before LayerNorm, {' and '.join(details)}."
    return text
