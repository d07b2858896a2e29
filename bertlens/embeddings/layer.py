"""The embedding layer laid bare: token + position + token-type rows, summed, LayerNorm, projection; checked.

The reconstruction runs in numpy from the model's own parameters; the check runs the transformers model and
compares with `hidden_states[0]` (eval mode, so dropout is inactive). The check's tolerance is derived, not fixed: 0
where LayerNorm repeats this PyTorch's kernel bit for bit (layer_norm.py) and nothing else rounds; otherwise a bound on
the float32 rounding of the parts computed differently (a projection's sums in another order, another LayerNorm).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError, InputTooLongError
from ..core.layer_norm import Kernel, difference_bound, fallback_kernel, layer_norm, matching_kernel, propagated_bound
from ..core.model import Model
from ..core.results import Result, table, visible
from ..core.tokens import encode, position_capacity

UNIT_ROUNDOFF = 2.0**-24  # float32


@dataclass(frozen=True, repr=False)
class TokenEmbedding:
    """Every intermediate vector of one token. Vectors have E (embedding size) or H (hidden size) entries."""

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
    layer_norm_mean: float  # mean of LayerNorm's input
    layer_norm_std: float  # sqrt(variance + eps) of LayerNorm's input: the divisor (1 / PyTorch's rstd)
    layer_norm_output: np.ndarray  # (E,) or (H,) float32
    output: np.ndarray  # (H,) float32: our reconstruction of the layer's output
    model_output: np.ndarray | None  # (H,) hidden_states[0] from transformers; None when not checked
    max_abs_diff: float | None  # max |output - model_output|

    def __repr__(self) -> str:
        return f"TokenEmbedding({self.piece!r}, id={self.id}, position={self.position_id}, type={self.token_type_id})"


@dataclass(frozen=True, repr=False)
class EmbeddingLayerExplanation(Result):
    """What the embedding layer computes for each token of a text, and how closely it matches the model."""

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
    max_abs_diff: float | None  # over all tokens and dimensions
    float32_step: float | None  # float32 spacing (ulp) at the largest |output|: the unit of the model's rounding
    tolerance: float  # the largest difference the check accepts, derived from the data (0: bit for bit expected)
    layer_norm_kernel: Kernel  # the PyTorch LayerNorm kernel emulated (capability, lanes, fused multiply-adds)
    layer_norm_bit_exact: bool | None  # it equals this PyTorch's kernel bit for bit; None when not checked
    tolerance_reason: str  # why the tolerance is what it is, in words

    @property
    def matches(self) -> bool:
        return self.max_abs_diff is not None and self.max_abs_diff <= self.tolerance

    def matrix(self, part: str) -> np.ndarray:
        """One part for all tokens stacked, e.g. `matrix("output")` -> (tokens, H)."""
        return np.stack([getattr(t, part) for t in self.tokens])

    def __repr__(self) -> str:
        check = f", max |diff| {self.max_abs_diff:.2e}" if self.max_abs_diff is not None else ""
        return f"EmbeddingLayerExplanation({self.family}, {len(self.tokens)} tokens{check})"

    def to_table(self) -> str:
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
        if self.checked:
            verdict = "within" if self.matches else "OUTSIDE"
            steps = self.max_abs_diff / self.float32_step if self.float32_step else 0.0
            lines.append(
                f"Check: max |ours - hidden_states[0]| = {self.max_abs_diff:.2e} ({steps:.1f} float32 steps at the "
                f"largest output), {verdict} the {self.tolerance:.2g} tolerance ({self.tolerance_reason})."
            )
        lines.append(
            "Each output depends only on (id, position, segment): the same token at the same position and segment is "
            "the same vector in every input; at another position it differs only by the position row (before "
            "LayerNorm)."
        )
        return "\n".join(lines)


def position_ids(model: Model, ids: np.ndarray) -> np.ndarray | None:
    """The position ids the model uses for `ids` (tokens,), or None when it adds no position rows."""
    scheme = model.family.position_scheme
    if not model.config.uses_absolute_positions or model.embedding_weights.position_embeddings is None:
        return None
    if scheme == "absolute-offset":  # RoBERTa: count non-pad tokens, start after padding_idx
        pad = model.config.pad_token_id or 0
        not_pad = (ids != pad).astype(np.int64)
        return np.cumsum(not_pad) * not_pad + pad
    return np.arange(len(ids), dtype=np.int64)


def explain(model: Model, text: str, pair: str | None = None, *, check: bool = True) -> EmbeddingLayerExplanation:
    """Decompose the embedding layer's output for every token of `text` (and `pair`), checked against the model."""
    encoding = encode(model, text, pair)
    ids = np.asarray(encoding.ids, dtype=np.int64)  # (tokens,)
    capacity = position_capacity(model)
    if capacity is not None and len(ids) > capacity:
        raise InputTooLongError(
            f"The input has {len(ids)} tokens but the model has only {capacity} positions.",
            "Shorten the text; the embedding layer has no row for positions past the table.",
        )
    weights = model.embedding_weights
    positions = position_ids(model, ids)
    types = _token_type_ids(model, np.asarray(encoding.type_ids, dtype=np.int64))

    # float32 throughout, in transformers' order: `sum` is bit for bit what the model feeds LayerNorm, and LayerNorm
    # repeats PyTorch's float32 operations (layer_norm.py), so the check can hold to the bit, not just to rounding.
    word_rows = weights.word_embeddings[ids]  # (tokens, E)
    type_rows = None if types is None else weights.token_type_embeddings[types]  # type: ignore[index]
    position_rows = None if positions is None else weights.position_embeddings[positions]  # type: ignore[index]
    parts = {"word": word_rows, "token_type": type_rows, "position": position_rows}
    total = word_rows.copy()
    for name in model.family.sum_order[1:]:
        if parts[name] is not None:
            total = total + parts[name]  # (tokens, E)

    projected = None
    normed_input = total
    if weights.projection_weight is not None and model.family.projection_order == "before-LayerNorm":
        projected = _linear(total, weights.projection_weight, weights.projection_bias)  # (tokens, H)
        normed_input = projected
    normed_input = normed_input.astype(np.float32)
    width, eps, with_bias = normed_input.shape[1], weights.layer_norm_eps, weights.layer_norm_bias is not None
    kernel = matching_kernel(width, eps, with_bias) if check else None  # the check runs torch anyway
    mean, rstd, normed = layer_norm(
        normed_input, weights.layer_norm_weight, weights.layer_norm_bias, eps, kernel or fallback_kernel()
    )
    output = normed
    if weights.projection_weight is not None and model.family.projection_order == "after-LayerNorm":
        output = _linear(normed, weights.projection_weight, weights.projection_bias)  # (tokens, H)
    tolerance, reason = _tolerance(model, total, normed_input, normed, kernel, check)

    reference = _model_embedding_output(model, ids, types) if check else None  # (tokens, H)
    diffs = None if reference is None else np.abs(output.astype(np.float64) - reference).max(axis=-1)  # (tokens,)
    special = encoding.special_tokens_mask
    tokens = tuple(
        TokenEmbedding(
            index=i,
            piece=encoding.tokens[i],
            id=int(ids[i]),
            position_id=None if positions is None else int(positions[i]),
            token_type_id=None if types is None else int(types[i]),
            special=bool(special[i]),
            word_row=word_rows[i],
            position_row=None if position_rows is None else position_rows[i],
            token_type_row=None if type_rows is None else type_rows[i],
            sum=total[i],
            projected=None if projected is None else projected[i],
            layer_norm_mean=float(mean[i]),
            layer_norm_std=float(1.0 / rstd[i]),
            layer_norm_output=normed[i],
            output=output[i],
            model_output=None if reference is None else reference[i],
            max_abs_diff=None if diffs is None else float(diffs[i]),
        )
        for i in range(len(ids))
    )
    steps, absent, notes = _describe(model, positions is not None, types is not None, encoding.type_ids)
    return EmbeddingLayerExplanation(
        model=model.source.description,
        family=model.family.label,
        text=text,
        pair=pair,
        formula=_formula(model, positions is not None, types is not None),
        steps=steps,
        absent_parts=absent,
        notes=notes,
        dropout=model.config.dropout,
        dropout_active=False,
        tokens=tokens,
        checked=reference is not None,
        max_abs_diff=None if diffs is None else (float(diffs.max()) if len(diffs) else 0.0),
        float32_step=None if reference is None else float(np.spacing(np.float32(np.abs(reference).max(initial=0.0)))),
        tolerance=tolerance,
        layer_norm_kernel=kernel or fallback_kernel(),
        layer_norm_bit_exact=(kernel is not None) if check else None,
        tolerance_reason=reason,
    )


def _tolerance(
    model: Model,
    total: np.ndarray,
    normed_input: np.ndarray,
    normed: np.ndarray,
    kernel: Kernel | None,
    check: bool,
) -> tuple[float, str]:
    """The largest difference from the model's output that float32 rounding explains, and why, in words.

    0 where LayerNorm is repeated bit for bit and nothing else rounds differently. A projection's float32 matrix
    product may sum in any order: within gamma_(E+2) * (|x| @ |W|.T + |b|) of ours (Higham), carried through
    LayerNorm when it comes first. A LayerNorm kernel bertlens does not repeat adds `difference_bound`.
    """
    weights, order = model.embedding_weights, model.family.projection_order
    ln_weight, eps = weights.layer_norm_weight, weights.layer_norm_eps
    bound = np.zeros((len(normed), model.config.hidden_size))  # (tokens, H)
    reasons = []
    if not check:
        reasons.append(f"not checked; LayerNorm follows {fallback_kernel().describe()}")
    elif kernel is not None:
        reasons.append(f"LayerNorm repeats {kernel.describe()}, bit for bit")
    else:
        bound = bound + difference_bound(normed_input, ln_weight, weights.layer_norm_bias, eps)
        reasons.append(
            "this PyTorch's LayerNorm kernel is none that bertlens repeats (each differs on probe rows), so the "
            "tolerance bounds how far two float32 LayerNorms can be apart"
        )
    if weights.projection_weight is not None:
        if order == "before-LayerNorm":
            projection = _linear_bound(total, weights.projection_weight, weights.projection_bias)  # (tokens, H)
            bound = bound + propagated_bound(normed_input, ln_weight, eps, projection)
        else:
            spread = bound.max(initial=0.0) * np.abs(weights.projection_weight).sum(axis=1)  # LayerNorm's, projected
            bound = _linear_bound(normed, weights.projection_weight, weights.projection_bias) + spread
        reasons.append("the projection's float32 sums may round in another order")
    return float(bound.max(initial=0.0)), "; ".join(reasons)


def _linear_bound(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """(tokens, H) bound on |PyTorch's float32 x @ weight.T + bias - `_linear`'s|, whatever order its sums take."""
    terms = x.shape[1] + 2  # E products summed, the bias added, ours rounded once
    magnitude = np.abs(x.astype(np.float64)) @ np.abs(weight.T.astype(np.float64))  # (tokens, E) @ (E, H)
    if bias is not None:
        magnitude = magnitude + np.abs(bias.astype(np.float64))
    return terms * UNIT_ROUNDOFF / (1 - terms * UNIT_ROUNDOFF) * magnitude


def _linear(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """x @ weight.T + bias, accumulated in float64 and rounded once to float32: (tokens, E) -> (tokens, H).

    PyTorch's float32 matrix product rounds along the way (in an order set by the BLAS library), so a projection can
    add a float32 step or so to the check's difference.
    """
    out = x.astype(np.float64) @ weight.T.astype(np.float64)  # (tokens, E) @ (E, H) -> (tokens, H)
    return (out + bias if bias is not None else out).astype(np.float32)


def _token_type_ids(model: Model, from_tokenizer: np.ndarray) -> np.ndarray | None:
    table_ = model.embedding_weights.token_type_embeddings
    if table_ is None:
        return None
    if len(from_tokenizer) and from_tokenizer.max() >= len(table_):
        raise InputError(
            f"The tokenizer gives segment id {int(from_tokenizer.max())} but the model has only {len(table_)} "
            "token-type rows.",
            "This model was not trained on text pairs with segments: pass a single text.",
        )
    return from_tokenizer


def _formula(model: Model, has_positions: bool, has_types: bool) -> str:
    parts = ["word_embeddings[id]"]
    if has_types:
        parts.append("token_type_embeddings[segment]")
    if has_positions:
        parts.append("position_embeddings[position]")
    inner = " + ".join(parts)
    order = model.family.projection_order
    has_projection = model.embedding_weights.projection_weight is not None
    if has_projection and order == "before-LayerNorm":
        formula = f"LayerNorm(projection({inner}))"
    elif has_projection:
        formula = f"projection(LayerNorm({inner}))"
    else:
        formula = f"LayerNorm({inner})"
    if model.family.masks_output:
        formula += " * attention_mask"
    return f"output = dropout({formula})"


def _describe(
    model: Model, has_positions: bool, has_types: bool, raw_types: list[int]
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    family, config, weights = model.family, model.config, model.embedding_weights
    e, h = weights.word_embeddings.shape[1], config.hidden_size
    steps = [f"word_embeddings: row id of a ({weights.word_embeddings.shape[0]}, {e}) matrix"]
    absent: list[str] = []
    if has_types:
        steps.append(f"token_type_embeddings: row segment of a {weights.token_type_embeddings.shape} matrix, added")  # type: ignore[union-attr]
    else:
        absent.append("token_type_embeddings: this model has no token-type (segment) rows")
        if any(raw_types):
            absent[-1] += "; the tokenizer's segment ids are ignored"
    if has_positions:
        where = (
            f"ids start at padding_idx + 1 = {(config.pad_token_id or 0) + 1}"
            if family.position_scheme == "absolute-offset"
            else "ids 0, 1, 2, …"
        )
        steps.append(
            f"position_embeddings: row position of a {weights.position_embeddings.shape} matrix ({where}), added"
        )  # type: ignore[union-attr]
    else:
        absent.append(
            "position_embeddings: no absolute position rows are added here; positions enter inside the attention "
            "layers (relative or rotary)"
        )
    projection = weights.projection_weight is not None
    if projection and family.projection_order == "before-LayerNorm":
        steps.append(f"projection ({family.projection}): Linear {e} -> {h}, before LayerNorm")
    steps.append(
        f"LayerNorm: (x - mean) / sqrt(var + {config.layer_norm_eps:g}) * weight"
        + (" + bias" if weights.layer_norm_bias is not None else " (no bias)")
    )
    if projection and family.projection_order == "after-LayerNorm":
        steps.append(f"projection ({family.projection}): Linear {e} -> {h}, after LayerNorm")
    elif not projection and family.projection:
        absent.append(f"projection ({family.projection}): not needed, embedding size equals hidden size ({h})")
    if family.masks_output:
        steps.append("multiply by the attention mask (all ones for an unpadded input)")
    steps.append(f"dropout (p = {config.dropout:g}): inactive in eval mode, so it changes nothing")
    return tuple(steps), tuple(absent), family.notes


def _model_embedding_output(model: Model, ids: np.ndarray, types: np.ndarray | None) -> np.ndarray:
    """`hidden_states[0]` of the transformers model for one unpadded input: (tokens, H)."""
    import torch

    net = model.torch_model()
    kwargs = {
        "input_ids": torch.from_numpy(ids)[None],
        "attention_mask": torch.ones(1, len(ids), dtype=torch.long),
    }
    if types is not None:
        kwargs["token_type_ids"] = torch.from_numpy(types)[None]
    with torch.inference_mode():
        out = net(**kwargs, output_hidden_states=True)
    return out.hidden_states[0][0].float().numpy()  # (1, tokens, H) -> (tokens, H)


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


@dataclass(frozen=True, repr=False)
class EmbeddingComparison(Result):
    """The same token in two inputs: identical at the same (position, segment); otherwise only position rows move."""

    model: str
    text_a: str
    text_b: str
    shared: tuple[SharedToken, ...]
    max_abs_diff_a: float | None  # each input's check against hidden_states[0]
    max_abs_diff_b: float | None

    def __repr__(self) -> str:
        return f"EmbeddingComparison({len(self.shared)} shared tokens)"

    def to_table(self) -> str:
        rows = [
            (
                visible(s.piece),
                s.id,
                f"{s.position_a}/{s.position_b}",
                f"{s.segment_a}/{s.segment_b}",
                "identical" if s.same_position_and_segment else "differs by position rows",
                s.output_max_abs_diff,
                s.rows_explain_sum,
            )
            for s in self.shared
        ]
        head = ["piece", "id", "pos a/b", "seg a/b", "why", "max |out a - out b|", "unexplained sum diff"]
        return "\n".join(
            [
                f"A: {self.text_a!r}",
                f"B: {self.text_b!r}",
                table(head, rows),
                "At the embedding layer a token's vector depends only on its id, position and segment: with all "
                "three equal the outputs are identical; at another position the sums differ by exactly the "
                "difference of the position rows, and LayerNorm then rescales.",
            ]
        )


def compare_inputs(model: Model, text_a: str, text_b: str, *, check: bool = True) -> EmbeddingComparison:
    """For each token of `text_a` whose id also occurs in `text_b`, compare the two embedding-layer outputs."""
    a, b = explain(model, text_a, check=check), explain(model, text_b, check=check)
    first_in_b: dict[int, TokenEmbedding] = {}
    for token in b.tokens:
        first_in_b.setdefault(token.id, token)
    shared = []
    for ta in a.tokens:
        tb = first_in_b.get(ta.id)
        if tb is None:
            continue
        # In exact (float64) arithmetic the sums differ by the position and segment rows' differences alone.
        sum_a, sum_b = _exact_sum(ta), _exact_sum(tb)
        explained = np.zeros_like(sum_a)
        for row_a, row_b in ((ta.position_row, tb.position_row), (ta.token_type_row, tb.token_type_row)):
            if row_a is not None and row_b is not None:
                explained = explained + row_a.astype(np.float64) - row_b
        shared.append(
            SharedToken(
                piece=ta.piece,
                id=ta.id,
                index_a=ta.index,
                index_b=tb.index,
                position_a=ta.position_id,
                position_b=tb.position_id,
                segment_a=ta.token_type_id,
                segment_b=tb.token_type_id,
                same_position_and_segment=(ta.position_id, ta.token_type_id) == (tb.position_id, tb.token_type_id),
                output_max_abs_diff=float(np.abs(ta.output - tb.output).max()),
                rows_explain_sum=float(np.abs(sum_a - sum_b - explained).max()),
            )
        )
    return EmbeddingComparison(
        model=model.source.description,
        text_a=text_a,
        text_b=text_b,
        shared=tuple(shared),
        max_abs_diff_a=a.max_abs_diff,
        max_abs_diff_b=b.max_abs_diff,
    )


def _exact_sum(token: TokenEmbedding) -> np.ndarray:
    rows = [r for r in (token.word_row, token.token_type_row, token.position_row) if r is not None]
    return np.sum([r.astype(np.float64) for r in rows], axis=0)  # (E,)
