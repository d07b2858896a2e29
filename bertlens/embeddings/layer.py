"""The embedding layer laid bare: token + position + token-type rows, summed, LayerNorm, projection; checked.

The rows and their sum are read from the model's own parameters in numpy (float32, in transformers' order, so the sum
is bit for bit what the model adds). With the check, the sum goes through the model's own `LayerNorm` (and projection)
module, and the result is compared with what transformers' own code computes from the token ids alone: the family's
embeddings module (`BertEmbeddings`, ...) or, where the layer's output is formed outside it, the whole model's
`hidden_states[0]` (eval mode, so dropout is inactive). The two must be equal, bit for bit; the answer names what ran
(`checked_against`). LayerNorm's mean and standard deviation are shown in float64. Without the check, nothing runs in
torch: LayerNorm and any projection are computed in float64 and rounded once to float32.
The result types live in `bertlens.embeddings.layer_results`; two texts' shared tokens are compared in
`bertlens.embeddings.comparison`.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..core import families
from ..core.errors import InputError, InputTooLongError
from ..core.model import Model
from ..core.tokens import encode, pair_of, position_capacity
from .layer_results import EmbeddingLayerExplanation, TokenEmbedding

if TYPE_CHECKING:
    from tokenizers import Encoding
    from torch import nn

__all__ = ["EmbeddingLayerExplanation", "TokenEmbedding", "explain", "position_ids"]


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
    after = _through_model(model, rows.total) if check else _in_float64(model, rows.total)
    reference = _reference(model, ids, types) if check else None
    diffs = None if reference is None else np.abs(after.output.astype(np.float64) - reference.output).max(axis=-1)
    tokens = _tokens(encoding, ids, positions, types, rows, after, reference, diffs)  # diffs: (tokens,)
    steps, absent, notes = _describe(model, positions is not None, types is not None, encoding.type_ids)
    return EmbeddingLayerExplanation(
        model=model.source.description,
        family=model.family.label,
        text=text,
        pair=pair_of(pair),
        formula=_formula(model, positions is not None, types is not None),
        steps=steps,
        absent_parts=absent,
        notes=notes,
        dropout=model.config.dropout,
        dropout_active=False,
        tokens=tokens,
        checked=reference is not None,
        checked_against=None if reference is None else reference.ran,
        max_abs_diff=None if diffs is None else (float(diffs.max()) if len(diffs) else 0.0),
        float32_step=(
            None if reference is None else float(np.spacing(np.float32(np.abs(reference.output).max(initial=0.0))))
        ),
    )


class _Rows(NamedTuple):
    """The rows of every token (tokens, E), and their sum."""

    word: np.ndarray
    token_type: np.ndarray | None
    position: np.ndarray | None
    total: np.ndarray


class _AfterSum(NamedTuple):
    """The steps after the sum: the projection where it comes first (tokens, H), LayerNorm's input (tokens, E or H),
    its mean and standard deviation sqrt(var + eps) in float64 (tokens,), its output, and the layer's output (tokens,
    H), both float32."""

    projected: np.ndarray | None
    normed_input: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    normed: np.ndarray
    output: np.ndarray


class _Reference(NamedTuple):
    """The embedding layer's output as transformers' own code computes it from the ids (tokens, H), and what ran."""

    output: np.ndarray
    ran: str


def _summed_rows(model: Model, ids: np.ndarray, types: np.ndarray | None, positions: np.ndarray | None) -> _Rows:
    """The word, token-type and position rows of every token (tokens, E), and their sum in the family's order.

    float32 throughout, in transformers' order: the sum is bit for bit what the model feeds its LayerNorm, so the check
    (the model's LayerNorm applied to this sum, against the model's own output) can hold to the bit.
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


def _statistics(normed_input: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """LayerNorm's mean and standard deviation sqrt(var + eps) of each row (tokens, D), in float64: (tokens,) each."""
    x = normed_input.astype(np.float64)
    return x.mean(axis=-1), np.sqrt(x.var(axis=-1) + eps)


def _through_model(model: Model, total: np.ndarray) -> _AfterSum:
    """The sum (tokens, E) through the model's own modules, as its embedding layer applies them: the projection where
    it comes first, `LayerNorm`, the projection where it comes after (float32, torch)."""
    import torch

    net = model.torch_model()
    family, weights = model.family, model.embedding_weights
    norm = net.get_submodule(family.layer_norm)
    projection = None
    if weights.projection_weight is not None and family.projection is not None:
        projection = net.get_submodule(family.projection)
    before = projection is not None and family.projection_order == "before-LayerNorm"
    with torch.inference_mode():
        x = torch.from_numpy(np.ascontiguousarray(total))[None]  # (1, tokens, E): the model's batch of one
        projected = projection(x) if projection is not None and before else None  # (1, tokens, H)
        normed = norm(x if projected is None else projected)
        output = projection(normed) if projection is not None and not before else normed  # (1, tokens, H)
        normed_input = (x if projected is None else projected)[0].float().numpy()
        mean, std = _statistics(normed_input, weights.layer_norm_eps)
        return _AfterSum(
            None if projected is None else projected[0].float().numpy(),
            normed_input,
            mean,
            std,
            normed[0].float().numpy(),
            output[0].float().numpy(),
        )


def _in_float64(model: Model, total: np.ndarray) -> _AfterSum:
    """The steps after the sum (tokens, E) without torch: each in float64, rounded once to float32."""
    weights = model.embedding_weights
    projection = weights.projection_weight
    before = projection is not None and model.family.projection_order == "before-LayerNorm"
    projected = _linear(total, projection, weights.projection_bias) if projection is not None and before else None
    normed_input = total if projected is None else projected
    mean, std = _statistics(normed_input, weights.layer_norm_eps)
    scaled = (normed_input.astype(np.float64) - mean[:, None]) / std[:, None]  # (tokens, D)
    scaled = scaled * weights.layer_norm_weight.astype(np.float64)
    if weights.layer_norm_bias is not None:
        scaled = scaled + weights.layer_norm_bias.astype(np.float64)
    normed = scaled.astype(np.float32)
    output = normed
    if projection is not None and not before:
        output = _linear(normed, projection, weights.projection_bias)  # (tokens, H)
    return _AfterSum(
        None if projected is None else projected.astype(np.float32),
        normed_input.astype(np.float32),
        mean,
        std,
        normed,
        output.astype(np.float32),
    )


def _tokens(
    encoding: Encoding,
    ids: np.ndarray,
    positions: np.ndarray | None,
    types: np.ndarray | None,
    rows: _Rows,
    after: _AfterSum,
    reference: _Reference | None,
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
            layer_norm_std=float(after.std[i]),
            layer_norm_output=after.normed[i],
            output=after.output[i],
            model_output=None if reference is None else reference.output[i],
            max_abs_diff=None if diffs is None else float(diffs[i]),
        )
        for i in range(len(ids))
    )


def _linear(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """x @ weight.T + bias, accumulated in float64 and rounded once to float32: (tokens, E) -> (tokens, H)."""
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


def _reference(model: Model, ids: np.ndarray, types: np.ndarray | None) -> _Reference:
    """The embedding layer's output for one unpadded input, computed by transformers' own code from the ids: (tokens,
    H). The family's embeddings module runs alone where the layer's output is its output (no projection, or one
    inside it); otherwise the whole model runs and its `hidden_states[0]` is read."""
    import torch
    import transformers

    net = model.torch_model()
    ids_ = torch.from_numpy(ids)[None]  # (1, tokens)
    type_ids = None if types is None else torch.from_numpy(types)[None]
    projection = model.family.projection
    inside = model.embedding_weights.projection_weight is None or (projection or "").startswith("embeddings.")
    embeddings: nn.Module | None = getattr(net, "embeddings", None)
    with torch.inference_mode():
        if inside and embeddings is not None:
            accepted = inspect.signature(embeddings.forward).parameters
            kwargs = {"input_ids": ids_}
            if type_ids is not None and "token_type_ids" in accepted:
                kwargs["token_type_ids"] = type_ids
            out = embeddings(**kwargs)
            states = (out[0] if isinstance(out, tuple) else out)[0].float().numpy()  # (1, tokens, H) -> (tokens, H)
            return _Reference(states, f"transformers {transformers.__version__} {type(embeddings).__name__}")
        kwargs = {"input_ids": ids_, "attention_mask": torch.ones_like(ids_)}
        if type_ids is not None:
            kwargs["token_type_ids"] = type_ids
        every = net(**kwargs, output_hidden_states=True).hidden_states
        states = every[0][0].float().numpy()  # (1, tokens, H) -> (tokens, H)
        return _Reference(states, f"transformers {transformers.__version__} {type(net).__name__} (hidden_states[0])")
