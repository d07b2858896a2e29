"""How far the embedding layer's reconstruction may lie from the model's own output: a bound on float32 rounding,
derived from the data, never a fixed epsilon.

0 where LayerNorm repeats this PyTorch's kernel bit for bit (`bertlens.embeddings.layer_norm`) and nothing else rounds;
otherwise a bound on the float32 rounding of the parts computed differently (a projection's sums in another order,
another LayerNorm kernel).
"""

from __future__ import annotations

import numpy as np

from ..core.model import Model
from .layer_norm import Kernel, difference_bound, fallback_kernel, gamma, propagated_bound


def check_tolerance(
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
            projection = linear_bound(total, weights.projection_weight, weights.projection_bias)  # (tokens, H)
            bound = bound + propagated_bound(normed_input, ln_weight, eps, projection)
        else:
            spread = bound.max(initial=0.0) * np.abs(weights.projection_weight).sum(axis=1)  # LayerNorm's, projected
            bound = linear_bound(normed, weights.projection_weight, weights.projection_bias) + spread
        reasons.append("the projection's float32 sums may round in another order")
    return float(bound.max(initial=0.0)), "; ".join(reasons)


def linear_bound(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """(tokens, H) bound on |PyTorch's float32 x @ weight.T + bias - ours (float64 sums, rounded once)|, whatever order
    its sums take: gamma_(E+2) * (|x| @ |W|.T + |b|) (Higham)."""
    terms = x.shape[1] + 2  # E products summed, the bias added, ours rounded once
    magnitude = np.abs(x.astype(np.float64)) @ np.abs(weight.T.astype(np.float64))  # (tokens, E) @ (E, H)
    if bias is not None:
        magnitude = magnitude + np.abs(bias.astype(np.float64))
    bound: np.ndarray = gamma(terms) * magnitude
    return bound
