"""The model's forward pass as PyTorch modules made from its own tensors, without importing transformers.

transformers' `BertModel` is a tree of PyTorch modules: `nn.Embedding` rows summed and `nn.LayerNorm`, then in every
layer `nn.Linear` products, scaled-dot-product attention, the exact (erf) GELU, residual sums and `nn.LayerNorm`.
Importing transformers to build that tree costs more than everything else in a cold start (it imports
`torch._dynamo`, `torch.distributed.tensor` and scipy before a weight is read). `encoder_model` builds the same tree
from the same PyTorch modules, in transformers' names and order, and loads the model's tensors into it; it answers
`hidden_states` as transformers does (the embedding output first, then every layer's). `embedding_module` builds the
embedding layer alone, from the tensors `Model.embedding_weights` has read already (the check of `explain`).

Only what is exactly transformers' computation is built here (`native_reason` says why not otherwise): BERT and the
RoBERTa family (RoBERTa, XLM-RoBERTa, CamemBERT) as encoders, with absolute positions, the exact GELU, no
feed-forward chunking, from weights files holding every tensor under transformers' names. Anything else runs in
transformers itself (`Model.torch_model`). tests/core/test_encoder.py holds these modules to transformers' own
outputs, bit for bit, on tiny random models of each family and on the default model.

This module imports torch: import it lazily, where a model runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch
from torch import nn

from . import families

if TYPE_CHECKING:
    from .families import EmbeddingWeights, Family, ModelConfig
    from .sources import ModelSource
    from .weights import StateDictReader, WeightsReader


class Model(Protocol):
    """What this module reads of a loaded model (`core.model.Model`, which builds its encoder here: a Protocol, so that
    the import runs one way)."""

    source: ModelSource
    family: Family
    config: ModelConfig
    raw_config: dict[str, Any]
    reader: WeightsReader | StateDictReader

    @property
    def embedding_weights(self) -> EmbeddingWeights: ...


NATIVE_FAMILIES = ("bert", "roberta", "xlm-roberta", "camembert")
OFFSET_POSITIONS = ("roberta", "xlm-roberta", "camembert")  # position ids count from padding_idx + 1


@dataclass(frozen=True)
class Shape:
    """The sizes and choices of one encoder, read from config.json with transformers' defaults (BertConfig)."""

    hidden: int
    heads: int
    intermediate: int
    layers: int
    eps: float
    offset_positions: bool  # RoBERTa's position ids (transformers' create_position_ids_from_input_ids)
    pad: int  # padding_idx: where RoBERTa's position ids start (pad + 1)


def native_reason(model: Model) -> str | None:
    """Why `model` cannot run as this module's encoder (None when it can): a family, config or source it lacks."""
    raw, family = model.raw_config, model.family
    if model.source.kind == "object" or model.reader.format not in ("safetensors", "pytorch"):
        return "an already-loaded transformers model runs as it is"
    if family.model_type not in NATIVE_FAMILIES:
        return f"{family.label} runs in transformers"
    if raw.get("hidden_act", "gelu") != "gelu":
        return f"hidden_act {raw.get('hidden_act')!r} is not the exact GELU"
    if raw.get("position_embedding_type", "absolute") not in (None, "absolute"):
        return f"position_embedding_type {raw.get('position_embedding_type')!r} is not absolute"
    if raw.get("is_decoder") or raw.get("add_cross_attention") or raw.get("chunk_size_feed_forward"):
        return "a decoder, cross-attention or feed-forward chunking"
    sizes = [raw.get(key) for key in ("num_attention_heads", "intermediate_size", "num_hidden_layers")]
    if not all(isinstance(n, int) and n >= 1 for n in sizes):
        return "config.json does not give num_attention_heads, intermediate_size and num_hidden_layers"
    heads = int(raw["num_attention_heads"])
    if model.config.hidden_size % heads or model.config.embedding_size != model.config.hidden_size:
        return "the hidden size is not a multiple of the heads, or embeddings are factorised"
    if family.model_type in OFFSET_POSITIONS and model.config.pad_token_id is None:
        return "RoBERTa's positions need pad_token_id"
    if not model.config.uses_absolute_positions or model.config.type_vocab_size < 1:
        return "no position or token-type table"
    return None


def shape_of(model: Model) -> Shape:
    config = model.config
    return Shape(
        hidden=config.hidden_size,
        heads=int(model.raw_config["num_attention_heads"]),
        intermediate=int(model.raw_config["intermediate_size"]),
        layers=config.num_hidden_layers,
        eps=config.layer_norm_eps,
        offset_positions=model.family.model_type in OFFSET_POSITIONS,
        pad=config.pad_token_id or 0,
    )


# Every module is made on the "meta" device (no memory, no initial values) and given the model's tensors after.


def _embedding(rows: int, width: int) -> nn.Embedding:
    """An `nn.Embedding` with an empty (meta) table: drawing a meta table's initial values imports torch._dynamo."""
    return nn.Embedding(rows, width, _weight=torch.empty((rows, width), device="meta"))


def _linear(inputs: int, outputs: int) -> nn.Linear:
    return nn.Linear(inputs, outputs, device="meta")


class Embeddings(nn.Module):
    """transformers' `BertEmbeddings` (and `RobertaEmbeddings`): word + token-type + position rows, LayerNorm."""

    def __init__(self, vocab: int, positions: int, types: int, shape: Shape) -> None:
        super().__init__()
        self.word_embeddings = _embedding(vocab, shape.hidden)
        self.position_embeddings = _embedding(positions, shape.hidden)
        self.token_type_embeddings = _embedding(types, shape.hidden)
        self.LayerNorm = nn.LayerNorm(shape.hidden, eps=shape.eps, device="meta")
        self.position_scheme: families.PositionScheme = "absolute-offset" if shape.offset_positions else "absolute"
        self.pad = shape.pad

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        batch, tokens = input_ids.shape  # (B, T)
        if position_ids is None:  # (B, T): RoBERTa's as create_position_ids_from_input_ids, else 0, 1, 2, ...
            position_ids = families.position_ids(input_ids, self.position_scheme, self.pad)
        if token_type_ids is None:
            token_type_ids = torch.zeros((batch, tokens), dtype=torch.long, device=input_ids.device)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)  # (B, T, H)
        embeddings = embeddings + self.position_embeddings(position_ids)
        normalised: torch.Tensor = self.LayerNorm(embeddings)  # dropout: inactive in eval mode
        return normalised


class SelfAttention(nn.Module):
    """transformers' `BertSelfAttention` with its "sdpa" attention: query, key, value products, then
    `scaled_dot_product_attention` over the heads. `core/packing.py` replaces it with its own, as it does
    transformers'."""

    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.num_attention_heads = shape.heads
        self.attention_head_size = shape.hidden // shape.heads
        self.scaling = self.attention_head_size**-0.5
        self.query = _linear(shape.hidden, shape.hidden)
        self.key = _linear(shape.hidden, shape.hidden)
        self.value = _linear(shape.hidden, shape.hidden)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        input_shape = hidden_states.shape[:-1]  # (B, T)
        hidden_shape = (*input_shape, -1, self.attention_head_size)
        query = self.query(hidden_states).view(*hidden_shape).transpose(1, 2)  # (B, heads, T, size)
        key = self.key(hidden_states).view(*hidden_shape).transpose(1, 2)
        value = self.value(hidden_states).view(*hidden_shape).transpose(1, 2)
        out = nn.functional.scaled_dot_product_attention(
            query, key, value, attn_mask=attention_mask, dropout_p=0.0, scale=self.scaling, is_causal=False
        )
        return out.transpose(1, 2).contiguous().reshape(*input_shape, -1).contiguous()  # (B, T, H)


class Output(nn.Module):
    """transformers' `BertSelfOutput` and `BertOutput`: a product, then LayerNorm of it plus the block's input."""

    def __init__(self, width: int, shape: Shape) -> None:
        super().__init__()
        self.dense = _linear(width, shape.hidden)
        self.LayerNorm = nn.LayerNorm(shape.hidden, eps=shape.eps, device="meta")

    def forward(self, hidden_states: torch.Tensor, input_tensor: torch.Tensor) -> torch.Tensor:
        normalised: torch.Tensor = self.LayerNorm(self.dense(hidden_states) + input_tensor)
        return normalised


class Attention(nn.Module):
    """transformers' `BertAttention`: self-attention, then its output block."""

    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.self: nn.Module = SelfAttention(shape)
        self.output = Output(shape.hidden, shape)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None, **kwargs: Any) -> torch.Tensor:
        attended, _ = _pair(self.self(hidden_states, attention_mask=attention_mask, **kwargs))
        output: torch.Tensor = self.output(attended, hidden_states)
        return output


def _pair(out: Any) -> tuple[torch.Tensor, Any]:
    """A self-attention's output: this module's answers a tensor, core/packing.py's a (tensor, None) pair."""
    return (out[0], out[1]) if isinstance(out, tuple) else (out, None)


class Intermediate(nn.Module):
    """transformers' `BertIntermediate`: a product, then the exact GELU."""

    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.dense = _linear(shape.hidden, shape.intermediate)
        self.intermediate_act_fn: nn.Module = nn.GELU()  # erf, as transformers' GELUActivation for "gelu"

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        activated: torch.Tensor = self.intermediate_act_fn(self.dense(hidden_states))
        return activated


class Layer(nn.Module):
    """transformers' `BertLayer` of an encoder: attention, then the feed-forward block."""

    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.attention = Attention(shape)
        self.intermediate = Intermediate(shape)
        self.output = Output(shape.intermediate, shape)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None, **kwargs: Any) -> torch.Tensor:
        attention_output = self.attention(hidden_states, attention_mask, **kwargs)
        output: torch.Tensor = self.output(self.intermediate(attention_output), attention_output)
        return output


class Layers(nn.Module):
    """transformers' `BertEncoder`: the layers, in order (`encoder.layer.N` in the weights)."""

    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.layer = nn.ModuleList(Layer(shape) for _ in range(shape.layers))


@dataclass
class EncoderOutput:
    """What the runs read of transformers' `BaseModelOutput`: the last layer, and every layer's hidden states."""

    last_hidden_state: torch.Tensor  # (B, T, H)
    hidden_states: tuple[torch.Tensor, ...]  # (layers + 1) x (B, T, H): the embedding output first


class Encoder(nn.Module):
    """transformers' `BertModel` (and `RobertaModel`) without the pooler, as an encoder in eval mode."""

    def __init__(self, vocab: int, positions: int, types: int, shape: Shape) -> None:
        super().__init__()
        self.embeddings = Embeddings(vocab, positions, types, shape)
        self.encoder = Layers(shape)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        output_hidden_states: bool = True,
        **kwargs: Any,
    ) -> EncoderOutput:
        """`kwargs` go to every self-attention as they are (`ragged`, for core/packing.py's)."""
        hidden = self.embeddings(input_ids, token_type_ids, position_ids)  # (B, T, H)
        mask = bidirectional_mask(attention_mask, hidden.shape[1])
        every = [hidden]
        for layer in self.encoder.layer:
            hidden = layer(hidden, mask, **kwargs)
            every.append(hidden)
        return EncoderOutput(last_hidden_state=hidden, hidden_states=tuple(every) if output_hidden_states else ())


def bidirectional_mask(attention_mask: torch.Tensor | None, tokens: int) -> torch.Tensor | None:
    """transformers' mask for "sdpa" attention in an encoder: None when nothing is padding, else (B, 1, T, T) booleans,
    True where a query may attend to a key (every query alike: padding hides keys)."""
    if attention_mask is None or bool(attention_mask.all()):
        return None
    keys = attention_mask.bool()[:, None, None, :]  # (B, 1, 1, T)
    return keys.expand(attention_mask.shape[0], 1, tokens, tokens)


def _tensor(array: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32))


def _embedding_state(model: Model) -> dict[str, torch.Tensor] | None:
    """The embedding layer's tensors under `Embeddings`' names (shared with `Model.embedding_weights`, no copy); None
    when the weights lack one of them (transformers then says what is missing)."""
    weights = model.embedding_weights
    if weights.position_embeddings is None or weights.token_type_embeddings is None or weights.layer_norm_bias is None:
        return None
    return {
        "word_embeddings.weight": _tensor(weights.word_embeddings),
        "position_embeddings.weight": _tensor(weights.position_embeddings),
        "token_type_embeddings.weight": _tensor(weights.token_type_embeddings),
        "LayerNorm.weight": _tensor(weights.layer_norm_weight),
        "LayerNorm.bias": _tensor(weights.layer_norm_bias),
    }


def _sizes(state: dict[str, torch.Tensor]) -> tuple[int, int, int]:
    return (
        state["word_embeddings.weight"].shape[0],
        state["position_embeddings.weight"].shape[0],
        state["token_type_embeddings.weight"].shape[0],
    )


def embedding_module(model: Model) -> Embeddings | None:
    """The model's embedding layer as `Embeddings` in eval mode, from its tensors as read (None: `native_reason`)."""
    if native_reason(model) is not None:
        return None
    state = _embedding_state(model)
    if state is None:
        return None
    module = Embeddings(*_sizes(state), shape_of(model))
    module.load_state_dict(state, assign=True)
    return module.eval()


def encoder_model(model: Model) -> Encoder | None:
    """The model as `Encoder`, float32 on the CPU, in eval mode, with every tensor its weights files hold for it.

    None when it cannot be built exactly (see `native_reason`) or a tensor is missing or misshapen: transformers then
    loads it, and says what is wrong. `CorruptModelError` when a parameter holds NaN or ±inf, as transformers' load.
    """
    from .families import base_prefix
    from .loader import non_finite_error

    if native_reason(model) is not None:
        return None
    reader = model.reader
    prefix = base_prefix(reader.names(), model.family)
    embedding = _embedding_state(model)
    if embedding is None:
        return None
    net = Encoder(*_sizes(embedding), shape_of(model))
    state: dict[str, torch.Tensor] = {f"embeddings.{name}": tensor for name, tensor in embedding.items()}
    damaged = []  # the embedding layer's tensors are checked as Model.embedding_weights reads them
    for name, meta in net.state_dict().items():
        if name in state:
            continue
        stored = prefix + name
        if stored not in reader or tuple(reader.shape(stored)) != tuple(meta.shape):
            return None
        array = reader.get(stored)
        if array.size and not (np.isfinite(array.min()) and np.isfinite(array.max())):  # a NaN or an infinity
            damaged.append(name)
        state[name] = _tensor(array)
    if damaged:  # as transformers' load is refused (core/loader.py), in numpy: one thread, quick on a busy machine
        raise non_finite_error(damaged)
    net.load_state_dict(state, assign=True)
    return net.eval()
