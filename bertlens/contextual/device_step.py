"""The word path's device side: one batch of texts laid end to end (pipeline.py) through the model, its words pooled
where the states are, and only the pooled rows copied out.

`FlatEncoder` runs BERT-style encoders (transformers' BERT, RoBERTa and their kin, their own modules) on the flat
token axis with no padding: the embedding layer, products, LayerNorms and GELUs work on every token alike, and
attention is variable-length. Three routes compute it (`ATTENTIONS`): "varlen", PyTorch's fused variable-length
kernels on CUDA (flash attention, memory-efficient attention) called directly through private aten ops; "jagged",
the public `scaled_dot_product_attention` over nested jagged tensors; "padded", the same over each batch padded to its
longest text (sorted batches: little padding) with a key mask. `attention_kind` probes them once per model, device
and dtype: the private route only where it runs and agrees with "padded", else the first public one that does.
Other models run padded batches as they are.

On CUDA the step never waits for the device: the batch's indices go over in one pinned copy, the pooled rows come
back into pinned memory on a side stream, and `rows()` waits only for that copy's event when the rows are read
(pipeline.py reads a batch after handing the next one over), then moves them into ordinary memory.

This module imports torch: import it lazily, where a model runs.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from ..core.model import Model
from ..core.options import Combine, WordPool
from ..core.packing import exact_gelu, plain_self_attention
from .pipeline import DeviceBatch, WordIndex


def _on(values: Any, device: torch.device) -> torch.Tensor:
    return values.to(device) if isinstance(values, torch.Tensor) else torch.from_numpy(values).to(device)


def pool_states(
    states: tuple[torch.Tensor, ...], words: WordIndex, count: int, pool: WordPool, combine: Combine | None
) -> torch.Tensor:
    """Pool words from each layer's states (tokens, H), `words` indexing the states' flat token axis (numpy arrays or
    tensors): (layers or 1, words, D) float32. Mean, first and last are linear: each layer is pooled on its own
    (only its words' pieces are read) and the pooled layers combined; max is not, so its layers are combined first."""
    flats = list(states)  # each (tokens, H)
    device = flats[0].device  # the indices go where the states are (the GPU's, on CUDA)
    if pool == "max":
        return _max_pool(flats, words, count, combine)
    if pool == "first+last":  # first's layers, then last's, as pool_words lays out combined layers
        ends = [pool_states(states, words, count, end, combine) for end in ("first", "last")]
        return torch.cat(ends, dim=-1)
    at = {k: _on(getattr(words, k), device) for k in ("pieces", "word_of_piece", "first", "last")}
    sizes = (at["last"] - at["first"] + 1).to(torch.float32)[:, None]  # contiguous runs

    def one(flat: torch.Tensor) -> torch.Tensor:  # (words, D) of one layer
        if pool in ("first", "last"):
            return flat.index_select(0, at[pool]).float()
        pieces = flat.index_select(0, at["pieces"]).float()  # (pieces, H)
        total = torch.zeros((count, flat.shape[1]), device=device)
        return total.index_add_(0, at["word_of_piece"], pieces).div_(sizes)

    pooled = [one(flat) for flat in flats]  # layers x (words, D)
    if combine is None:
        return torch.stack(pooled)
    if combine == "concat":
        return torch.cat(pooled, dim=1)[None]  # (1, words, layers x D)
    total = torch.stack(pooled).sum(0)
    return (total if combine == "sum" else total / len(pooled))[None]


def _max_pool(flats: list[torch.Tensor], words: WordIndex, count: int, combine: Combine | None) -> torch.Tensor:
    """The element-wise max over each word's pieces, the layers combined per piece first: (layers or 1, words, D)."""
    device = flats[0].device
    index = _on(words.pieces, device)
    pieces = torch.stack([flat.index_select(0, index) for flat in flats]).float()  # (layers, pieces, H)
    if combine == "concat":
        width = len(flats) * pieces.shape[-1]  # given, not -1: a batch of empty texts has no piece to infer it from
        pieces = pieces.permute(1, 0, 2).reshape(1, len(index), width)  # (1, pieces, layers x H)
    elif combine is not None:
        pieces = pieces.sum(0, keepdim=True) if combine == "sum" else pieces.mean(0, keepdim=True)
    out = torch.zeros((pieces.shape[0], count, pieces.shape[2]), dtype=torch.float32, device=device)
    spread = _on(words.word_of_piece, device)[None, :, None].expand_as(pieces)
    return out.scatter_reduce_(1, spread, pieces, "amax", include_self=False)


@dataclass
class Flat:
    """A batch's token-axis tensors on the device."""

    ids: torch.Tensor  # (tokens,)
    positions: torch.Tensor  # (tokens,)
    offsets: torch.Tensor  # (rows + 1,)
    where: torch.Tensor  # (tokens,) each token's place in a (rows x longest) padded box
    rows: int
    longest: int
    shortest: int


def _padded_attention(qkv: torch.Tensor, flat: Flat, scale: float) -> torch.Tensor:
    """Attention of each text within itself, its batch padded to the longest text: qkv (tokens, 3, heads, size) ->
    (tokens, heads, size)."""
    _, _, heads, size = qkv.shape
    box = qkv.new_zeros((flat.rows * flat.longest, 3, heads, size)).index_copy_(0, flat.where, qkv)
    q, k, v = box.view(flat.rows, flat.longest, 3, heads, size).permute(2, 0, 3, 1, 4).unbind(0)  # (B, h, L, s)
    lengths = flat.offsets[1:] - flat.offsets[:-1]
    keys = torch.arange(flat.longest, device=qkv.device)[None] < lengths[:, None]  # (B, L)
    out = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keys[:, None, None, :], scale=scale)
    return out.transpose(1, 2).reshape(flat.rows * flat.longest, heads, size).index_select(0, flat.where)


def _jagged_attention(qkv: torch.Tensor, flat: Flat, scale: float) -> torch.Tensor:
    """The same over nested jagged tensors, no padding at all: qkv (tokens, 3, heads, size) -> (tokens, heads,
    size). PyTorch's jagged kernels take each of query, key and value contiguous."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "nested tensors are a prototype"
        q, k, v = (
            torch.nested.nested_tensor_from_jagged(
                part.contiguous(), flat.offsets, min_seqlen=flat.shortest, max_seqlen=flat.longest
            ).transpose(1, 2)  # (B, heads, j, size)
            for part in qkv.unbind(1)
        )
        out = nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
        return out.transpose(1, 2).values()


def _varlen_attention(qkv: torch.Tensor, flat: Flat, scale: float) -> torch.Tensor:
    """The same through the variable-length kernels themselves (private aten ops: chosen only by `attention_kind`'s
    probe, or asked for by name), which the nested-jagged path calls after Python-level dispatch on every operation:
    flash attention in float16/bfloat16, memory-efficient attention in float32 (both take texts end to end with their
    cumulative lengths): qkv (tokens, 3, heads, size) -> (tokens, heads, size)."""
    q, k, v = qkv.unbind(1)  # (tokens, heads, size) each, views
    cu = flat.offsets.to(torch.int32)
    if qkv.dtype == torch.float32:
        found = torch.ops.aten._efficient_attention_forward(
            q[None], k[None], v[None], None, cu, cu, flat.longest, flat.longest, 0.0, 0, False, scale=scale
        )
        out: torch.Tensor = found[0][0]
        return out
    found = torch.ops.aten._flash_attention_forward(
        q, k, v, cu, cu, flat.longest, flat.longest, 0.0, False, False, scale=scale
    )
    out = found[0]
    return out


ATTENTIONS = {"varlen": _varlen_attention, "jagged": _jagged_attention, "padded": _padded_attention}


def attention_kind(model: Model, device: str, dtype: str) -> str:
    """How attention runs on `device` in `dtype`: "varlen" (PyTorch's variable-length kernels, called directly),
    else "jagged" (nested jagged tensors), whichever first runs and agrees with "padded", else "padded". Probed once
    (per model, device and dtype) on random numbers shaped as a batch's are, never per batch."""

    def probe() -> str:
        if device == "cpu":
            return "padded"  # no variable-length kernels; nested tensors take a slow path on the CPU
        generator = torch.Generator().manual_seed(0)
        lengths = [3, 17, 5]
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        qkv = torch.randn((offsets[-1], 3, 2, 32), generator=generator).to(device, getattr(torch, dtype))
        flat, _ = flat_tensors(torch.device(device), np.zeros(offsets[-1], np.int64), offsets, max(lengths))
        padded = _padded_attention(qkv, flat, 0.25).float()
        for kind in ("varlen", "jagged"):
            try:
                found = ATTENTIONS[kind](qkv, flat, 0.25).float()
            except Exception:  # any failure means: not on this device
                continue
            bound = 5e-2 if dtype != "float32" else 1e-4  # a wrong answer is off by ~0.5
            if found.shape == padded.shape and torch.allclose(found, padded, atol=bound, rtol=0):
                return kind
        return "padded"

    return str(model.remember(("attention", device, dtype), probe))


def flat_tensors(
    device: torch.device,
    ids: np.ndarray,
    offsets: np.ndarray,
    longest: int,
    positions: np.ndarray | None = None,
    words: WordIndex | None = None,
) -> tuple[Flat, WordIndex | None]:
    """A batch's token-axis tensors (and its words' indices), copied to `device` in one go: one pinned,
    asynchronous copy on CUDA."""
    lengths = np.diff(offsets)
    rows = len(lengths)
    where = np.repeat(np.arange(rows) * longest - offsets[:-1], lengths) + np.arange(offsets[-1])
    parts = [ids, np.zeros_like(ids) if positions is None else positions, offsets, where]
    if words is not None:
        parts += [getattr(words, name) for name in WORD_FIELDS]
    host = torch.from_numpy(np.concatenate(parts).astype(np.int64, copy=False))
    if device.type == "cuda":
        host = host.pin_memory()
    sent = torch.split(host.to(device, non_blocking=True), [len(part) for part in parts])
    flat = Flat(sent[0], sent[1], sent[2], sent[3], rows, longest, int(lengths.min()) if rows else 0)
    return flat, (WordIndex(*sent[4:]) if words is not None else None)


WORD_FIELDS = ("pieces", "word_of_piece", "first", "last")


def flat_encoder_reason(net: nn.Module) -> str | None:
    """Why `net` cannot run on the flat token axis (None when it can): BERT-style embeddings and encoder layers,
    plain self-attention, the exact GELU."""
    embeddings = getattr(net, "embeddings", None)
    layers = getattr(getattr(net, "encoder", None), "layer", None)
    if embeddings is None or layers is None or hasattr(net, "embeddings_project"):
        return "not a BERT-style encoder"
    for layer in layers:
        attention = getattr(layer, "attention", None)
        own = getattr(attention, "self", None)
        if not isinstance(own, nn.Module) or not plain_self_attention(own):
            return "its self-attention is not BERT's"
        if not exact_gelu(getattr(getattr(layer, "intermediate", None), "intermediate_act_fn", None)):
            return "its feed-forward activation is not the exact GELU"
    return None


class FlatEncoder:
    """A BERT-style encoder over texts laid end to end: the hidden states of chosen layers, (tokens, H) each."""

    def __init__(self, net: nn.Module, attention: str, types: bool) -> None:
        self.net = net
        self.attend = ATTENTIONS[attention]
        self.types = types
        self.layers = list(net.encoder.layer)  # type: ignore[union-attr,arg-type]
        self.qkv = []  # per layer: the stacked query/key/value weight (3H, H) and bias, heads, size, scale
        for layer in self.layers:
            own = layer.attention.self
            parts = [own.query, own.key, own.value]
            weight = torch.cat([p.weight.detach() for p in parts])
            bias = torch.cat([p.bias.detach() for p in parts])
            heads, size = int(own.num_attention_heads), int(own.attention_head_size)
            self.qkv.append((weight, bias, heads, size, float(getattr(own, "scaling", size**-0.5))))

    def __call__(self, flat: Flat, layers: list[int]) -> tuple[torch.Tensor, ...]:
        """The hidden states of `layers` (absolute: 0 is the embedding output), each (tokens, H)."""
        kept: dict[int, torch.Tensor] = {}
        ids = flat.ids[None]  # (1, tokens)
        given = {"token_type_ids": torch.zeros_like(ids)} if self.types else {}
        hidden = self.net.embeddings(input_ids=ids, position_ids=flat.positions[None], **given)[0]  # type: ignore[operator]
        if 0 in layers:
            kept[0] = hidden
        for number, layer in enumerate(self.layers[: max(layers)], start=1):
            weight, bias, heads, size, scale = self.qkv[number - 1]
            qkv = nn.functional.linear(hidden, weight, bias).view(-1, 3, heads, size)  # (tokens, 3, heads, size)
            attended = self.attend(qkv, flat, scale).reshape(-1, heads * size)  # (tokens, H)
            attention_output = layer.attention.output(attended, hidden)
            hidden = layer.output(layer.intermediate(attention_output), attention_output)
            if number in layers:
                kept[number] = hidden
        return tuple(kept[layer] for layer in layers)


def flat_encoder(model: Model, device: str, dtype: str, attention: str | None = None) -> FlatEncoder | None:
    """The model's `FlatEncoder` on `device` in `dtype` (made once; `attention` None: `attention_kind`'s), or None
    where the model does not run flat (`flat_encoder_reason`)."""
    net = model.torch_model_on(device, dtype)
    if flat_encoder_reason(net) is not None:
        return None
    kind = attention or attention_kind(model, device, dtype)
    types = model.family.token_type_embeddings is not None and model.config.type_vocab_size > 0
    return model.remember(("flat", device, dtype, kind), lambda: FlatEncoder(net, kind, types))


class _Ready:
    """Rows already on the host."""

    def __init__(self, rows: torch.Tensor) -> None:
        self._rows = rows

    def rows(self) -> torch.Tensor:
        return self._rows


class _Copying:
    """Rows on their way into pinned host memory: `rows()` waits for the copy's event alone, then moves them into
    ordinary memory, so that the pinned block goes back to PyTorch's cache for the next batch (pinning fresh memory
    for every batch a caller keeps costs more than the copy; results never hold page-locked memory)."""

    def __init__(self, staged: torch.Tensor, event: Any) -> None:
        self._staged: torch.Tensor | None = staged
        self._event = event

    def rows(self) -> torch.Tensor:
        self._event.synchronize()
        staged, self._staged = self._staged, None
        assert staged is not None, "rows() is read once"
        out = torch.empty(staged.shape, dtype=staged.dtype)
        return out.copy_(staged)


class WordStep:
    """The device step of the word path (a `pipeline.DeviceStep`): forward, pool, copy out."""

    def __init__(
        self,
        model: Model,
        device: str,
        dtype: str,
        layers: list[int],
        pool: WordPool,
        combine: Combine | None,
        out_dtype: str = "float32",
        attention: str | None = None,
    ) -> None:
        self.device = torch.device(device)
        self.layers, self.pool, self.combine = layers, pool, combine
        self.out_dtype = getattr(torch, out_dtype)
        self.types = model.family.token_type_embeddings is not None and model.config.type_vocab_size > 0
        self.pad = model.config.pad_token_id or 0
        self.net = model.torch_model_on(device, dtype)
        self.flat = flat_encoder(model, device, dtype, attention)
        self.stream = torch.cuda.Stream(self.device) if self.device.type == "cuda" else None

    def __call__(self, batch: DeviceBatch) -> Any:
        with torch.inference_mode():
            flat, index = flat_tensors(
                self.device, batch.ids, batch.offsets, batch.longest, batch.positions, batch.words
            )
            assert index is not None
            states = self.flat(flat, self.layers) if self.flat is not None else self._padded(flat)
            pooled = pool_states(states, index, len(batch.words.first), self.pool, self.combine).to(self.out_dtype)
        if self.stream is None:
            return _Ready(pooled)
        out = torch.empty(pooled.shape, dtype=pooled.dtype, pin_memory=True)
        self.stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self.stream):
            out.copy_(pooled, non_blocking=True)
            event = torch.cuda.Event()
            event.record(self.stream)
        pooled.record_stream(self.stream)  # not reused before the copy is done
        return _Copying(out, event)

    def _padded(self, flat: Flat) -> tuple[torch.Tensor, ...]:
        """The model as it is, on the batch padded to its longest text: the asked layers back on the flat axis."""
        box = flat.rows * flat.longest
        ids = torch.full((box,), self.pad, dtype=torch.long, device=self.device).index_copy_(0, flat.where, flat.ids)
        mask = torch.zeros(box, dtype=torch.long, device=self.device).index_fill_(0, flat.where, 1)
        ids, mask = ids.view(flat.rows, flat.longest), mask.view(flat.rows, flat.longest)
        given = {"token_type_ids": torch.zeros_like(ids)} if self.types else {}
        every = self.net(input_ids=ids, attention_mask=mask, output_hidden_states=True, **given).hidden_states
        return tuple(every[layer].reshape(box, -1).index_select(0, flat.where) for layer in self.layers)
