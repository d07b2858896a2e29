"""The embedding layer laid bare: token + position + token-type rows, summed, LayerNorm, projection; checked.

The reconstruction runs in numpy from the model's own parameters; the check runs the model's embedding layer in
PyTorch and compares with its output, `hidden_states[0]` (eval mode, so dropout is inactive), within a tolerance
derived from the data (`bertlens.embeddings.tolerance`). `compare_inputs` explains two texts and compares their
shared tokens. The result types live in `bertlens.embeddings.layer_results`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..core import families
from ..core.errors import InputError, InputTooLongError
from ..core.model import Model
from ..core.tokens import encode, position_capacity
from .layer_norm import fallback_kernel, layer_norm, matching_kernel
from .layer_results import EmbeddingComparison, EmbeddingLayerExplanation, SharedToken, TokenEmbedding
from .tolerance import check_tolerance

if TYPE_CHECKING:
    from tokenizers import Encoding

    from .layer_norm import Kernel

__all__ = [
    "EmbeddingComparison",
    "EmbeddingLayerExplanation",
    "SharedToken",
    "TokenEmbedding",
    "compare_inputs",
    "explain",
    "position_ids",
]


def position_ids(model: Model, ids: np.ndarray) -> np.ndarray | None:
    """The position ids the model uses for `ids` (tokens,), or None when it adds no position rows."""
    if not model.config.uses_absolute_positions or model.embedding_weights.position_embeddings is None:
        return None
    positions: np.ndarray = families.position_ids(ids, model.family.position_scheme, model.config.pad_token_id).astype(
        np.int64
    )
    return positions


def explain(model: Model, text: str, pair: str | None = None, *, check: bool = True) -> EmbeddingLayerExplanation:
    """Decompose the embedding layer's output for every token of `text` (and `pair`), checked against the model.

    >>> x = explain(load_model(), "hello, world!")
    >>> [token.piece for token in x.tokens], x.max_abs_diff
    (['[CLS]', 'hello', ',', 'world', '!', '[SEP]'], 0.0)
    """
    encoding = encode(model, text, pair)
    ids = np.asarray(encoding.ids, dtype=np.int64)  # (tokens,)
    capacity = position_capacity(model)
    if capacity is not None and len(ids) > capacity:
        raise InputTooLongError(
            f"The input has {len(ids)} tokens but the model has only {capacity} positions.",
            "Shorten the text; the embedding layer has no row for positions past the table.",
        )
    positions = position_ids(model, ids)
    types = _token_type_ids(model, np.asarray(encoding.type_ids, dtype=np.int64))
    rows = _summed_rows(model, ids, types, positions)
    after = _after_sum(model, rows.total, check)
    tolerance, reason = check_tolerance(model, rows.total, after.normed_input, after.normed, after.kernel, check)
    reference = _model_embedding_output(model, ids, types) if check else None  # (tokens, H)
    diffs = None if reference is None else np.abs(after.output.astype(np.float64) - reference).max(axis=-1)  # (tokens,)
    tokens = _tokens(encoding, ids, positions, types, rows, after, reference, diffs)
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
        layer_norm_kernel=after.kernel or fallback_kernel(),
        layer_norm_bit_exact=(after.kernel is not None) if check else None,
        tolerance_reason=reason,
    )


class _Rows(NamedTuple):
    """The rows of every token (tokens, E), and their sum."""

    word: np.ndarray
    token_type: np.ndarray | None
    position: np.ndarray | None
    total: np.ndarray


class _AfterSum(NamedTuple):
    """The steps after the sum, each (tokens, H): the projection where it comes first, LayerNorm's input, mean and
    1/std (tokens,) and output, and the layer's output; the emulated LayerNorm kernel equal to torch's (or None)."""

    projected: np.ndarray | None
    normed_input: np.ndarray
    mean: np.ndarray
    rstd: np.ndarray
    normed: np.ndarray
    output: np.ndarray
    kernel: Kernel | None


def _summed_rows(model: Model, ids: np.ndarray, types: np.ndarray | None, positions: np.ndarray | None) -> _Rows:
    """The word, token-type and position rows of every token (tokens, E), and their sum in the family's order.

    float32 throughout, in transformers' order: the sum is bit for bit what the model feeds LayerNorm, and LayerNorm
    repeats PyTorch's float32 operations (layer_norm.py), so the check can hold to the bit, not just to rounding.
    """
    weights = model.embedding_weights
    word_rows = weights.word_embeddings[ids]  # (tokens, E)
    type_table, position_table = weights.token_type_embeddings, weights.position_embeddings
    type_rows = None if types is None or type_table is None else type_table[types]  # (tokens, E)
    position_rows = None if positions is None or position_table is None else position_table[positions]  # (tokens, E)
    parts = {"word": word_rows, "token_type": type_rows, "position": position_rows}
    total = word_rows.copy()
    for name in model.family.sum_order[1:]:
        if parts[name] is not None:
            total = total + parts[name]  # (tokens, E)
    return _Rows(word_rows, type_rows, position_rows, total)


def _after_sum(model: Model, total: np.ndarray, check: bool) -> _AfterSum:
    """The sum (tokens, E) projected (where the family projects before LayerNorm), normalised, and projected (where
    it projects after); with `check`, LayerNorm runs the emulated kernel that matches torch's bit for bit."""
    weights = model.embedding_weights
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
    return _AfterSum(projected, normed_input, mean, rstd, normed, output, kernel)


def _tokens(
    encoding: Encoding,
    ids: np.ndarray,
    positions: np.ndarray | None,
    types: np.ndarray | None,
    rows: _Rows,
    after: _AfterSum,
    reference: np.ndarray | None,
    diffs: np.ndarray | None,
) -> tuple[TokenEmbedding, ...]:
    """Each token's parts, steps and output, beside the model's own output and their difference where checked."""
    return tuple(
        TokenEmbedding(
            index=i,
            piece=encoding.tokens[i],
            id=int(ids[i]),
            position_id=None if positions is None else int(positions[i]),
            token_type_id=None if types is None else int(types[i]),
            special=bool(encoding.special_tokens_mask[i]),
            word_row=rows.word[i],
            position_row=None if rows.position is None else rows.position[i],
            token_type_row=None if rows.token_type is None else rows.token_type[i],
            sum=rows.total[i],
            projected=None if after.projected is None else after.projected[i],
            layer_norm_mean=float(after.mean[i]),
            layer_norm_std=float(1.0 / after.rstd[i]),
            layer_norm_output=after.normed[i],
            output=after.output[i],
            model_output=None if reference is None else reference[i],
            max_abs_diff=None if diffs is None else float(diffs[i]),
        )
        for i in range(len(ids))
    )


def _linear(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """x @ weight.T + bias, accumulated in float64 and rounded once to float32: (tokens, E) -> (tokens, H).

    PyTorch's float32 matrix product rounds along the way (in an order set by the BLAS library), so a projection can
    add a float32 step or so to the check's difference.
    """
    out = x.astype(np.float64) @ weight.T.astype(np.float64)  # (tokens, E) @ (E, H) -> (tokens, H)
    rows: np.ndarray = (out + bias if bias is not None else out).astype(np.float32)
    return rows


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
    type_table, position_table = weights.token_type_embeddings, weights.position_embeddings
    if has_types and type_table is not None:
        steps.append(f"token_type_embeddings: row segment of a {type_table.shape} matrix, added")
    else:
        absent.append("token_type_embeddings: this model has no token-type (segment) rows")
        if any(raw_types):
            absent[-1] += "; the tokenizer's segment ids are ignored"
    if has_positions and position_table is not None:
        where = (
            f"ids start at padding_idx + 1 = {(config.pad_token_id or 0) + 1}"
            if family.position_scheme == "absolute-offset"
            else "ids 0, 1, 2, …"
        )
        steps.append(f"position_embeddings: row position of a {position_table.shape} matrix ({where}), added")
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
    """`hidden_states[0]` of the model for one unpadded input: (tokens, H).

    Where core/encoder.py builds the model's embedding layer (BERT, RoBERTa), that module runs alone: PyTorch's
    `nn.Embedding` and `nn.LayerNorm` over the model's tensors in transformers' order, equal bit for bit to
    transformers' `hidden_states[0]` (tests/core/test_encoder.py), without importing transformers or reading the other
    layers. Otherwise the transformers model runs.
    """
    import torch

    from ..core.encoder import embedding_module

    layer = model.remember("embedding-module", lambda: embedding_module(model))
    if layer is not None:
        type_ids = None if types is None else torch.from_numpy(types)[None]
        with torch.inference_mode():
            states: np.ndarray = (
                layer(torch.from_numpy(ids)[None], type_ids)[0].float().numpy()
            )  # (1, tokens, H) -> (tokens, H)
            return states
    net = model.torch_model()
    kwargs: dict[str, torch.Tensor] = {
        "input_ids": torch.from_numpy(ids)[None],
        "attention_mask": torch.ones(1, len(ids), dtype=torch.long),
    }
    if types is not None:
        kwargs["token_type_ids"] = torch.from_numpy(types)[None]
    with torch.inference_mode():
        out = net(**kwargs, output_hidden_states=True)
    states = out.hidden_states[0][0].float().numpy()  # (1, tokens, H) -> (tokens, H)
    return states


def compare_inputs(model: Model, text_a: str, text_b: str, *, check: bool = True) -> EmbeddingComparison:
    """For each token of `text_a` whose id also occurs in `text_b`, compare the two embedding-layer outputs.

    >>> c = compare_inputs(load_model(), "I like eating bread", "The banana bread was horrible")
    >>> [token.piece for token in c.shared]
    ['[CLS]', 'bread', '[SEP]']
    """
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
        output_diff = float(np.abs(ta.output - tb.output).max())
        position_diff, segment_diff = (
            _row_diff(ta.position_row, tb.position_row),
            _row_diff(ta.token_type_row, tb.token_type_row),
        )
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
                output_max_abs_diff=output_diff,
                rows_explain_sum=float(np.abs(sum_a - sum_b - explained).max()),
                word_row_max_abs_diff=float(np.abs(ta.word_row - tb.word_row).max()),
                position_row_max_abs_diff=position_diff,
                segment_row_max_abs_diff=segment_diff,
                statement=_statement(ta, tb, position_diff, segment_diff, output_diff),
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


def _row_diff(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    return None if a is None or b is None else float(np.abs(a - b).max())


def _statement(
    a: TokenEmbedding, b: TokenEmbedding, position_diff: float | None, segment_diff: float | None, output_diff: float
) -> str:
    """One shared token compared in a sentence: its word_embeddings row is the same in both inputs (one id, one row);
    what differs is the position and segment rows, and through them (and LayerNorm) the outputs."""
    same_row = f"{a.piece!r}: the same word_embeddings row (id {a.id}) in both"
    moved = []
    if position_diff:
        moved.append(f"position rows ({a.position_id} vs {b.position_id}; max |diff| {position_diff:.4g})")
    if segment_diff:
        moved.append(f"segment rows ({a.token_type_id} vs {b.token_type_id}; max |diff| {segment_diff:.4g})")
    if not moved:
        same_place = (a.position_id, a.token_type_id) == (b.position_id, b.token_type_id)
        where = "at the same position and segment" if same_place else "and no position or segment row differs"
        return f"{same_row}, {where}: identical outputs (max |diff| {output_diff:.4g})."
    return (
        f"{same_row}; the outputs differ by {' and '.join(moved)}: max |output diff| {output_diff:.4g} after LayerNorm."
    )


def _exact_sum(token: TokenEmbedding) -> np.ndarray:
    rows = [r for r in (token.word_row, token.token_type_row, token.position_row) if r is not None]
    total: np.ndarray = np.sum([r.astype(np.float64) for r in rows], axis=0)  # (E,)
    return total
