"""The inference copy of the torch model: its linear layers prepacked for oneDNN, and BERT's GELU fused into them.

PyTorch's `nn.Linear` on the CPU hands each product to MKL (float32) or oneDNN (bfloat16), which rearrange the weight
matrix into their blocked layout on every call. For BERT's small matrices (384 x 384 in the default model) that
can cost as much as the product itself, so packing the weights once more than doubles the products' speed
(docs/benchmarks.md, "Contextual vectors: throughput"). `packed_copy` makes a copy of a model whose linear layers keep
their weights in oneDNN's layout (`PackedLinear`), and whose feed-forward layers apply GELU inside the product, as
`torch.compile`'s freezing does, without compiling. The arithmetic is the same (float32 stays float32, bfloat16 takes
float32 sums); only the order of the sums differs, so vectors agree with transformers' own to float32 rounding.

The prepacked product is PyTorch's private oneDNN ops (`_reorder_linear_weight`, `_linear_pointwise`, and
`_is_mkldnn_bf16_supported`, which has no public twin). `onednn_products` probes them once per dtype: they must exist
and agree with `nn.functional.linear` and the exact GELU on a small case. Where they do not (or `packed_copy(...,
prepack=False)` asks), the copy keeps PyTorch's public modules: `nn.Linear` products, the GELU module, and query,
key and value as one plain stacked `nn.Linear`.

This module imports torch: import it lazily, where a model runs.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from .options import BATCH_TOKENS

if TYPE_CHECKING:
    from .model import Model

ROWS_HINT = BATCH_TOKENS  # the rows (tokens) per product oneDNN lays the weights out for
ROW_STEP = 256  # products of more rows than this take a multiple of it (see product_rows)


def product_rows(rows: int) -> int:
    """The rows a packed product runs for `rows` real ones: the next power of two up to `ROW_STEP`, then the next
    multiple of it, so a dozen sizes cover everything up to 2,048 rows.

    oneDNN makes a primitive for every distinct shape of product and keeps up to 1,024 of them, megabytes each (about
    2 MB for a 384 x 1536 product, 7 MB for the default model's shapes): a corpus run whose batches all differed in
    size grew by 400 MB (bench/extract_memory.py, docs/benchmarks.md). Padding rows are zeros; their results are
    dropped.
    """
    if rows <= ROW_STEP:
        return max(16, 1 << max(rows - 1, 0).bit_length())
    return -(-rows // ROW_STEP) * ROW_STEP


@functools.cache
def onednn_products(dtype: torch.dtype) -> bool:
    """Whether oneDNN's prepacked products (`PackedLinear`, PyTorch's private oneDNN ops) run on this CPU in `dtype`
    and agree with `nn.functional.linear` and the exact GELU on a small case: probed once per dtype.

    float32 and bfloat16 only (oneDNN's bfloat16 needs AVX512-BF16 or AMX; PyTorch says which through a private op,
    with no public twin). Any failure, or an answer off by more than a few roundings of the dtype, means no."""
    if dtype not in (torch.float32, torch.bfloat16) or not torch.backends.mkldnn.is_available():
        return False
    generator = torch.Generator().manual_seed(0)
    weight, bias, x = (torch.randn(shape, generator=generator) for shape in ((40, 24), (40,), (5, 24)))
    linear = nn.Linear(24, 40, dtype=dtype, device="meta")  # no initial values drawn
    linear.weight, linear.bias = nn.Parameter(weight.to(dtype)), nn.Parameter(bias.to(dtype))
    rows = x.to(dtype)
    try:
        if dtype == torch.bfloat16 and not torch.ops.mkldnn._is_mkldnn_bf16_supported():
            return False
        with torch.inference_mode():
            found = [PackedLinear(linear, act)(rows).double() for act in ("none", "gelu")]
    except Exception:  # any failure means: not on this CPU, or not in this PyTorch
        return False
    exact = nn.functional.linear(rows.double(), linear.weight.double(), linear.bias.double())  # (5, 40)
    expected = [exact, nn.functional.gelu(exact)]
    # float32 sums of 24 products and the bias, then one rounding to `dtype`: a wrong answer is off by ~1
    magnitudes = rows.double().abs() @ linear.weight.double().abs().T + linear.bias.double().abs()
    allowed = 25 * 2.0**-24 * magnitudes + 2 * torch.finfo(dtype).eps * exact.abs()
    return all(
        f.shape == e.shape and bool(((f - e).abs() <= 2 * allowed).all()) for f, e in zip(found, expected, strict=True)
    )


class PackedLinear(nn.Module):
    """`nn.Linear` (and optionally the exact GELU after it) with its weight in oneDNN's blocked layout (made only where
    `onednn_products` finds oneDNN's private ops working)."""

    def __init__(self, linear: nn.Linear, activation: str = "none") -> None:
        super().__init__()
        self.in_features = linear.in_features
        self.out_features = linear.out_features
        self.activation = activation  # oneDNN's post-op: "none" or "gelu" (erf, as BERT's GELUActivation)
        weight = linear.weight.detach()  # (out, in)
        self.register_buffer("packed", torch.ops.mkldnn._reorder_linear_weight(weight, ROWS_HINT))
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features)  # (batch x tokens, in)
        count, padded = rows.shape[0], product_rows(rows.shape[0])
        if padded != count:  # ragged batches come padded already (runner.py); others are padded here
            rows = torch.cat([rows, rows.new_zeros(padded - count, self.in_features)])
        algorithm = "none" if self.activation == "gelu" else ""
        y = torch.ops.mkldnn._linear_pointwise(rows, self.packed, self.bias, self.activation, [], algorithm)
        out: torch.Tensor = y[:count].reshape(*x.shape[:-1], self.out_features)  # (..., out)
        return out

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, activation={self.activation}"


class FusedProjections(nn.Module):
    """An attention block's query, key and value products as one product of their stacked weights (one 384 x 1152
    product runs 1.5x (float32) to 3x (bfloat16) faster than three 384 x 384 ones). `ProjectionPart`s serve the
    three slices: the first call on an input computes all three, the others read theirs from it."""

    def __init__(self, linears: list[nn.Linear], pack: bool = True) -> None:
        super().__init__()
        stacked = nn.Linear(linears[0].in_features, sum(lin.out_features for lin in linears))
        stacked = stacked.to(dtype=linears[0].weight.dtype)
        with torch.no_grad():
            stacked.weight.copy_(torch.cat([lin.weight for lin in linears]))  # (3 out, in)
            stacked.bias.copy_(torch.cat([lin.bias for lin in linears]))
        self.product: nn.Module = PackedLinear(stacked) if pack else stacked
        self.widths = [lin.out_features for lin in linears]
        self._input: torch.Tensor | None = None
        self._output: torch.Tensor | None = None
        self._served: set[int] = set()

    def part(self, which: int, x: torch.Tensor) -> torch.Tensor:
        """Slice `which` of the stacked product of `x`: (..., out) (a view)."""
        if self._input is not x or which in self._served:
            self._input, self._output, self._served = x, self.product(x), set()
        assert self._output is not None
        start = sum(self.widths[:which])
        out = self._output[..., start : start + self.widths[which]]
        self._served.add(which)
        if len(self._served) == len(self.widths):  # all three read: let the input and product go
            self._input, self._output = None, None
        return out


class ProjectionPart(nn.Module):
    """One of query, key, value, read from its block's `FusedProjections`."""

    def __init__(self, fused: FusedProjections, which: int) -> None:
        super().__init__()
        self.fused = [fused]  # a list, so the shared block is not registered three times as a submodule
        self.which = which

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fused[0].part(self.which, x)


@dataclass(frozen=True)
class Ragged:
    """How a ragged batch lays its texts end to end on one token axis, with no padding between them: `groups` of
    rows of equal length, each (first token, rows, tokens per row), then at most some padding tokens at the end (to
    `product_rows`). The linear layers, LayerNorms and GELUs work on every token alike; only attention needs to know
    where a text starts, and `SelfAttention` reads it from here."""

    groups: tuple[tuple[int, int, int], ...]


class SelfAttention(nn.Module):
    """An encoder's BERT-style self-attention (absolute positions, a padding mask) from one query/key/value product.

    A ragged batch (`ragged=Ragged(...)`, hidden states (1, tokens, H)) attends within each group of equal-length
    rows, which needs no mask. In bfloat16, groups of at most `short` (96) tokens a row take two batched products with
    the softmax in float32: PyTorch's fused CPU kernel works in blocks meant for long sequences and at ~30 tokens took
    1.9x as long (the whole forward pass ran 10 % faster without it); float32 and longer rows keep that kernel, which
    was as fast or faster there. Same arithmetic either way: products summed in float32, the softmax in float32.
    """

    def __init__(self, attention: Any, short: int | None = None, pack: bool = True) -> None:  # transformers' module
        super().__init__()
        bfloat16 = attention.query.weight.dtype == torch.bfloat16
        self.short = (96 if bfloat16 else 0) if short is None else short  # measured: docs/benchmarks.md
        self.heads = int(attention.num_attention_heads)
        self.size = int(attention.attention_head_size)
        self.scaling = float(attention.scaling)
        self.projections = FusedProjections([attention.query, attention.key, attention.value], pack).product

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        ragged: Ragged | None = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, None]:
        if ragged is not None:
            return self._ragged(hidden_states, ragged), None
        batch, tokens, _ = hidden_states.shape
        qkv = self.projections(hidden_states).view(batch, tokens, 3, self.heads, self.size)
        out = self._attend(qkv, attention_mask)  # (B, heads, T, size)
        return out.transpose(1, 2).reshape(batch, tokens, self.heads * self.size), None

    def _ragged(self, hidden_states: torch.Tensor, ragged: Ragged) -> torch.Tensor:
        """Attention over a ragged batch's hidden states (1, tokens, H), group by group: (1, tokens, H)."""
        flat = hidden_states.reshape(-1, hidden_states.shape[-1])  # (tokens, H)
        qkv = self.projections(flat)  # (tokens, 3H)
        out = torch.empty((flat.shape[0], self.heads * self.size), dtype=qkv.dtype, device=qkv.device)
        end = 0
        for start, rows, tokens in ragged.groups:
            end = start + rows * tokens
            part = qkv[start:end].view(rows, tokens, 3, self.heads, self.size)
            attended = self._attend(part, None).transpose(1, 2)  # (rows, T, heads, size)
            out[start:end].view(rows, tokens, self.heads, self.size).copy_(attended)
        out[end:].zero_()  # padding after the last group (runner.py pads to product_rows): attends to nothing
        return out.view(*hidden_states.shape[:-1], self.heads * self.size)

    def _attend(self, qkv: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """Attention from query, key and value (B, T, 3, heads, size): (B, heads, T, size)."""
        batch, tokens = qkv.shape[:2]
        if tokens > self.short:
            q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (B, heads, T, size), a view
            return nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask, scale=self.scaling)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).reshape(3, batch * self.heads, tokens, self.size)  # one copy
        scores = torch.bmm(q, k.transpose(1, 2)).view(batch, self.heads, tokens, tokens).float().mul_(self.scaling)
        if attention_mask is not None:  # (B, 1, T, T) with every query row alike: padding hides keys
            hidden = (
                ~attention_mask[:, :, :1, :] if attention_mask.dtype == torch.bool else attention_mask[:, :, :1, :] < 0
            )
            scores.masked_fill_(hidden, float("-inf"))
        weights = torch.softmax(scores, dim=-1).to(v.dtype).view(batch * self.heads, tokens, tokens)
        return torch.bmm(weights, v).view(batch, self.heads, tokens, self.size)


def takes_ragged(net: nn.Module) -> bool:
    """Whether `net`'s self-attention is `SelfAttention` throughout, so that it can run ragged batches."""
    return any(isinstance(module, SelfAttention) for module in net.modules())


SELF_ATTENTIONS = {f"{family}SelfAttention" for family in ("Bert", "Roberta", "XLMRoberta", "Electra", "Camembert")}


def plain_self_attention(module: nn.Module) -> bool:
    """Whether `module` is an encoder's BERT-style self-attention that `SelfAttention` computes exactly."""
    config = getattr(module, "config", None)
    return (
        type(module).__name__ in SELF_ATTENTIONS
        and config is not None
        and not config.is_decoder
        and not getattr(module, "is_cross_attention", False)
        and getattr(config, "position_embedding_type", "absolute") in (None, "absolute")
        and all(isinstance(getattr(module, name, None), nn.Linear) for name in ("query", "key", "value"))
    )


PROJECTIONS = (("query", "key", "value"), ("q_lin", "k_lin", "v_lin"), ("query_proj", "key_proj", "value_proj"))


def can_pack(net: nn.Module) -> bool:
    """Whether `net`'s linear layers can be prepacked: on the CPU, in a dtype `onednn_products` finds working."""
    parameter = next(net.parameters(), None)
    return parameter is not None and parameter.device.type == "cpu" and onednn_products(parameter.dtype)


def exact_gelu(module: Any) -> bool:
    """Whether `module` is the exact (erf) GELU, the one oneDNN's "gelu" post-op computes: transformers'
    `GELUActivation`, or PyTorch's `nn.GELU`."""
    if type(module) is nn.GELU:
        return module.approximate == "none"
    return type(module).__name__ == "GELUActivation" and getattr(module, "act", None) is nn.functional.gelu


def packed_copy(net: nn.Module, prepack: bool = True) -> nn.Module:
    """A copy of `net` (in eval mode, for inference) with every `nn.Linear` a `PackedLinear`; `net` untouched.

    An attention block's query, key and value become one `FusedProjections` product. A feed-forward block holding
    `dense` then an exact GELU (`intermediate_act_fn`, as BERT, RoBERTa and ELECTRA do) gets the GELU inside the
    product. BERT-style self-attention becomes `SelfAttention`, which also runs ragged batches. A CPU model that
    cannot be packed (see `can_pack`: float64, say), or any CPU model given `prepack=False`, keeps PyTorch's public
    modules: `nn.Linear` products (query, key and value one plain stacked product) and its GELU, with `SelfAttention`;
    a model on another device is returned as it is. The copy shares the tensors it keeps (embedding rows,
    LayerNorms) with `net`.
    """
    parameter = next(net.parameters(), None)
    if parameter is None or parameter.device.type != "cpu":
        return net
    pack = prepack and can_pack(net)
    if not pack and not any(plain_self_attention(m) or _projections(m) for m in net.modules()):
        return net  # nothing to change: no copy
    shared = {id(t): t for t in net.parameters()}  # read, never written: no second embedding table
    packed = copy.deepcopy(net, shared).eval()
    for module in list(packed.modules()):
        for name, child in list(module.named_children()):
            if plain_self_attention(child):
                setattr(module, name, SelfAttention(child, pack=pack))
    for module in list(packed.modules()):
        found = _projections(module)
        if found is not None:
            fused = FusedProjections([getattr(module, name) for name in found], pack)
            module.add_module("fused_projections", fused)
            for which, name in enumerate(found):
                setattr(module, name, ProjectionPart(fused, which))
        if not pack:
            continue
        dense, act = getattr(module, "dense", None), getattr(module, "intermediate_act_fn", None)
        fuse = isinstance(dense, nn.Linear) and exact_gelu(act)
        for name, child in list(module.named_children()):
            if isinstance(child, nn.Linear):
                setattr(module, name, PackedLinear(child, "gelu" if fuse and name == "dense" else "none"))
        if fuse:
            module.intermediate_act_fn = nn.Identity()
    return packed


def _projections(module: nn.Module) -> tuple[str, str, str] | None:
    """The names of `module`'s query, key and value `nn.Linear`s (each with a bias), if it holds all three."""
    for names in PROJECTIONS:
        linears = [getattr(module, name, None) for name in names]
        if all(isinstance(lin, nn.Linear) and lin.bias is not None for lin in linears):
            return names
    return None


def inference_model(model: Model, device: str, dtype: str, prepack: bool = True) -> nn.Module:
    """The torch model runs use on `device` in `dtype`: `packed_copy` of `Model.torch_model_on`, made once per model
    (`prepack=False`: PyTorch's public modules only, as where `onednn_products` finds no oneDNN)."""
    return model.remember(
        ("inference", device, dtype, prepack), lambda: packed_copy(model.torch_model_on(device, dtype), prepack)
    )
