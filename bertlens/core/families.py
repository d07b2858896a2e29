"""Architecture adapters: where each BERT-family model keeps its embedding parts, and what its embedding layer does.

Names follow transformers' attributes (`word_embeddings`, `position_embeddings`, `token_type_embeddings`,
`LayerNorm`). Parts a family lacks are None, never zeros, so results can say plainly that they do not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import numpy as np

from .errors import CorruptModelError, UnsupportedArchitectureError

if TYPE_CHECKING:
    from .weights import StateDictReader, WeightsReader

    Reader = WeightsReader | StateDictReader

PositionScheme = Literal["absolute", "absolute-offset", "none"]
ProjectionOrder = Literal["after-LayerNorm", "before-LayerNorm"]


@dataclass(frozen=True)
class Family:
    """Parameter names (relative to the base model) and the order of operations of one family's embedding layer."""

    model_type: str
    label: str
    word_embeddings: str
    position_embeddings: str | None
    token_type_embeddings: str | None
    layer_norm: str
    projection: str | None = None  # a Linear from embedding size to hidden size, when the two differ
    projection_order: ProjectionOrder = "after-LayerNorm"
    position_scheme: PositionScheme = "absolute"
    masks_output: bool = False  # DeBERTa multiplies the output by the attention mask
    dropout_config: str = "hidden_dropout_prob"
    sum_order: tuple[str, ...] = ("word", "token_type", "position")  # the order transformers adds the rows in
    notes: tuple[str, ...] = ()
    base_class: str | None = None  # transformers' class of the base model (e.g. "BertModel"), imported by name


class PartNames(TypedDict):
    """Where a family keeps its embedding parts (the `Family` fields of the same names)."""

    word_embeddings: str
    position_embeddings: str | None
    token_type_embeddings: str | None
    layer_norm: str


_BERT_LIKE = PartNames(
    word_embeddings="embeddings.word_embeddings",
    position_embeddings="embeddings.position_embeddings",
    token_type_embeddings="embeddings.token_type_embeddings",
    layer_norm="embeddings.LayerNorm",
)
_ROBERTA_NOTE = (
    "Position ids start after the padding index: position = padding_idx + 1 + i for the i-th non-pad token "
    "(transformers' create_position_ids_from_input_ids).",
)

_ROBERTA_LIKE = (
    ("roberta", "RoBERTa", "RobertaModel"),
    ("xlm-roberta", "XLM-RoBERTa", "XLMRobertaModel"),
    ("camembert", "CamemBERT", "CamembertModel"),
)

FAMILIES: dict[str, Family] = {
    f.model_type: f
    for f in (
        Family("bert", "BERT", **_BERT_LIKE, base_class="BertModel"),
        *(
            Family(kind, label, position_scheme="absolute-offset", notes=_ROBERTA_NOTE, **_BERT_LIKE, base_class=base)
            for kind, label, base in _ROBERTA_LIKE
        ),
        Family(
            "distilbert",
            "DistilBERT",
            base_class="DistilBertModel",
            word_embeddings="embeddings.word_embeddings",
            position_embeddings="embeddings.position_embeddings",
            token_type_embeddings=None,
            layer_norm="embeddings.LayerNorm",
            dropout_config="dropout",
            notes=("DistilBERT has no token-type (segment) embeddings.",),
        ),
        Family(
            "albert",
            "ALBERT",
            base_class="AlbertModel",
            **_BERT_LIKE,
            projection="encoder.embedding_hidden_mapping_in",
            notes=(
                "Factorised embeddings: rows have embedding_size dimensions; the encoder's "
                "embedding_hidden_mapping_in projects the LayerNorm output to hidden_size.",
            ),
        ),
        Family(
            "electra",
            "ELECTRA",
            base_class="ElectraModel",
            **_BERT_LIKE,
            projection="embeddings_project",
            notes=("When embedding_size differs from hidden_size, embeddings_project maps the LayerNorm output.",),
        ),
        Family(
            "deberta-v2",
            "DeBERTa-v2",
            base_class="DebertaV2Model",
            **_BERT_LIKE,
            projection="embeddings.embed_proj",
            projection_order="before-LayerNorm",
            masks_output=True,
            sum_order=("word", "position", "token_type"),
            notes=(
                "Positions enter through relative attention inside every layer, not as rows added here "
                "(unless position_biased_input is true).",
                "The output is multiplied by the attention mask.",
            ),
        ),
        Family(
            "modernbert",
            "ModernBERT",
            base_class="ModernBertModel",
            word_embeddings="embeddings.tok_embeddings",
            position_embeddings=None,
            token_type_embeddings=None,
            layer_norm="embeddings.norm",
            dropout_config="embedding_dropout",
            notes=("Positions enter as rotary embeddings (RoPE) inside attention; LayerNorm may have no bias.",),
        ),
    )
}


@dataclass(frozen=True)
class ModelConfig:
    """The config fields bertlens needs, under one set of names for every family."""

    model_type: str
    architectures: tuple[str, ...]
    vocab_size: int
    hidden_size: int
    embedding_size: int
    num_hidden_layers: int
    max_position_embeddings: int | None
    type_vocab_size: int
    pad_token_id: int | None
    layer_norm_eps: float
    dropout: float
    uses_absolute_positions: bool

    @classmethod
    def from_dict(cls, raw: dict[str, Any], family: Family) -> ModelConfig:
        try:
            hidden = int(raw.get("hidden_size", raw.get("dim", 0)))
            positions = family.position_embeddings is not None and (
                raw.get("position_biased_input", True)  # DeBERTa-v2: rows added only when true
            )
            return cls(
                model_type=family.model_type,
                architectures=tuple(raw.get("architectures") or ()),
                vocab_size=int(raw["vocab_size"]),
                hidden_size=hidden,
                embedding_size=int(raw.get("embedding_size") or hidden),
                num_hidden_layers=int(raw.get("num_hidden_layers", raw.get("n_layers", 0))),
                max_position_embeddings=(
                    int(raw["max_position_embeddings"]) if raw.get("max_position_embeddings") else None
                ),
                type_vocab_size=int(raw.get("type_vocab_size", 0)) if family.token_type_embeddings else 0,
                pad_token_id=None if raw.get("pad_token_id") is None else int(raw["pad_token_id"]),
                layer_norm_eps=float(raw.get("layer_norm_eps", raw.get("norm_eps", 1e-12))),
                dropout=float(raw.get(family.dropout_config, 0.0) or 0.0),
                uses_absolute_positions=bool(positions),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptModelError(
                f"config.json lacks or mangles a field bertlens needs ({exc}).",
                "Restore config.json from the model's original copy.",
            ) from None


def position_ids(ids: Any, scheme: PositionScheme, pad: int | None) -> Any:
    """The position id of every token of `ids` (..., tokens), derived from the ids alone as the family's embedding
    module does: the one rule every path that runs a model follows (ragged, padded, windows, explain).

    "absolute-offset" (RoBERTa, XLM-RoBERTa, CamemBERT; transformers' `create_position_ids_from_input_ids`): a pad
    token takes padding_idx, every other token padding_idx + 1 + the non-pad tokens before it, so with padding_idx 1
    the ids of `<s> a <pad> b </s>` take 2, 3, 1, 4, 5. Every other scheme counts 0, 1, 2, … (the tokens' places).
    `ids` is a numpy array or a torch tensor: the answer is of the same kind, int64 (..., tokens), on the same device
    (only operations the two share are used, so this module needs no torch).
    """
    if scheme == "absolute-offset":
        padding_idx = pad or 0
        not_pad = ids != padding_idx  # (..., tokens) booleans
        return not_pad.cumsum(-1) * not_pad + padding_idx
    return (ids == ids).cumsum(-1) - 1  # 0, 1, 2, ... along the last axis


def family_for(raw_config: dict[str, Any]) -> Family:
    model_type = str(raw_config.get("model_type", ""))
    family = FAMILIES.get(model_type)
    if family is None:
        what = f"model_type {model_type!r}" if model_type else "a config.json without model_type"
        raise UnsupportedArchitectureError(
            f"bertlens does not support {what}.",
            f"Supported families: {', '.join(sorted(FAMILIES))}.",
        )
    return family


@dataclass(frozen=True)
class EmbeddingWeights:
    """The parameters of one model's embedding layer as float32 numpy arrays; absent parts are None.

    Shapes: word_embeddings (vocab, E); position_embeddings (positions, E); token_type_embeddings (types, E);
    LayerNorm weight and bias (E) or (H) when the projection comes first; projection weight (H, E), bias (H).
    """

    word_embeddings: np.ndarray
    position_embeddings: np.ndarray | None
    token_type_embeddings: np.ndarray | None
    layer_norm_weight: np.ndarray
    layer_norm_bias: np.ndarray | None
    layer_norm_eps: float
    projection_weight: np.ndarray | None
    projection_bias: np.ndarray | None


EMBEDDING_PARTS = (
    "word_embeddings",
    "position_embeddings",
    "token_type_embeddings",
    "layer_norm_weight",
    "layer_norm_bias",
    "projection_weight",
    "projection_bias",
)


def base_prefix(names: list[str], family: Family) -> str:
    """The prefix under which the base model sits in a checkpoint ('' or e.g. 'bert.', 'roberta.')."""
    suffix = family.word_embeddings + ".weight"
    prefixes = [n[: -len(suffix)] for n in names if n.endswith(suffix)]
    if not prefixes:
        raise CorruptModelError(
            f"The weights hold no {suffix} tensor, so there is no {family.label} embedding matrix to read.",
            "Check that the weights file belongs to this config.json.",
        )
    return min(prefixes, key=len)


def embedding_tensor_names(family: Family, prefix: str) -> dict[str, str]:
    """`EmbeddingWeights` field -> the full tensor name it is read from, for the parts `family` has."""
    parts = {
        "word_embeddings": family.word_embeddings + ".weight",
        "position_embeddings": family.position_embeddings and family.position_embeddings + ".weight",
        "token_type_embeddings": family.token_type_embeddings and family.token_type_embeddings + ".weight",
        "layer_norm_weight": family.layer_norm + ".weight",
        "layer_norm_bias": family.layer_norm + ".bias",
        "projection_weight": family.projection and family.projection + ".weight",
        "projection_bias": family.projection and family.projection + ".bias",
    }
    return {part: prefix + name for part, name in parts.items() if name}


def read_embedding_weights(reader: Reader, family: Family, config: ModelConfig) -> EmbeddingWeights:
    """Gather the embedding-layer tensors of `family` from a `WeightsReader` or `StateDictReader`."""
    names = embedding_tensor_names(family, base_prefix(reader.names(), family))

    def read(part: str) -> np.ndarray | None:
        full = names.get(part)
        return reader.get(full) if full is not None and full in reader else None

    def required(part: str) -> np.ndarray:
        array = read(part)
        if array is None:
            raise CorruptModelError(
                f"The weights lack {names.get(part)}, which a {family.label} embedding layer needs.",
                "Check that the weights file belongs to this config.json.",
            )
        return array

    word_embeddings = required("word_embeddings")  # every part is read, in `EMBEDDING_PARTS` order
    position_embeddings = read("position_embeddings")
    token_type_embeddings = read("token_type_embeddings")
    layer_norm_weight = required("layer_norm_weight")
    return EmbeddingWeights(
        word_embeddings=word_embeddings,
        position_embeddings=position_embeddings if config.uses_absolute_positions else None,
        token_type_embeddings=token_type_embeddings,
        layer_norm_weight=layer_norm_weight,
        layer_norm_bias=read("layer_norm_bias"),
        layer_norm_eps=config.layer_norm_eps,
        projection_weight=read("projection_weight"),
        projection_bias=read("projection_bias"),
    )


def non_finite_rows(weights: EmbeddingWeights) -> dict[str, np.ndarray]:
    """`EmbeddingWeights` field -> ids of its rows (entries, for a vector) holding NaN or ±inf; only damaged parts.

    A NaN or an infinity makes an array's min or max non-finite, so an intact model costs two reductions per part.
    """
    found = {}
    for part in EMBEDDING_PARTS:
        array = getattr(weights, part)
        if array is None or array.size == 0 or (np.isfinite(array.min()) and np.isfinite(array.max())):
            continue
        rows = array.reshape(len(array), -1)  # (rows, values per row); a vector's entries are its rows
        found[part] = np.flatnonzero(~np.isfinite(rows).all(axis=1))
    return found


_FROM_ORIGINAL = "copy the model's weights and config.json again from its original source."


@dataclass(frozen=True)
class ExpectedShape:
    """The shape config.json implies for one embedding tensor; None where it implies no size."""

    part: str  # the `EmbeddingWeights` field
    shape: tuple[int | None, ...]
    fields: tuple[str, ...]  # the config field behind each dimension, e.g. ("vocab_size", "hidden_size")

    def mismatch(self, found: tuple[int, ...]) -> str | None:
        """What to do when `found` is not this shape (None when it is)."""
        if len(found) != len(self.shape):
            return "The tensor has the wrong number of dimensions: " + _FROM_ORIGINAL
        for want, have, name in zip(self.shape, found, self.fields, strict=True):
            if want is not None and want != have:
                return (
                    "config.json and the weights do not belong together (one was edited, or comes from another "
                    f"model): restore the config.json saved with these weights (they need {name} = {have})."
                )
        return None


def expected_shapes(family: Family, config: ModelConfig, raw: dict[str, Any]) -> list[ExpectedShape]:
    """What config.json says each embedding tensor's shape is (as transformers would build the layer)."""
    hidden_field = "hidden_size" if "hidden_size" in raw or "dim" not in raw else "dim"
    hidden = config.hidden_size or None  # 0: the config does not say
    width, width_field = hidden, hidden_field  # E: the rows' width
    if family.projection is not None and (raw.get("embedding_size") or family.model_type != "deberta-v2"):
        # without embedding_size in config.json, ALBERT and ELECTRA use 128 (unknown here), DeBERTa-v2 hidden_size
        width, width_field = (config.embedding_size if raw.get("embedding_size") else None), "embedding_size"
    norm, norm_field = (hidden, hidden_field) if family.projection_order == "before-LayerNorm" else (width, width_field)
    positions = config.max_position_embeddings
    types = config.type_vocab_size if "type_vocab_size" in raw else None
    return [
        ExpectedShape("word_embeddings", (config.vocab_size, width), ("vocab_size", width_field)),
        ExpectedShape("position_embeddings", (positions, width), ("max_position_embeddings", width_field)),
        ExpectedShape("token_type_embeddings", (types, width), ("type_vocab_size", width_field)),
        ExpectedShape("layer_norm_weight", (norm,), (norm_field,)),
        ExpectedShape("layer_norm_bias", (norm,), (norm_field,)),
        ExpectedShape("projection_weight", (hidden, width), (hidden_field, width_field)),
        ExpectedShape("projection_bias", (hidden,), (hidden_field,)),
    ]


def _shape_text(shape: tuple[int | None, ...]) -> str:
    """(80, 32), (32,), (any, 16)."""
    dims = ["any" if n is None else str(n) for n in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def check_embedding_shapes(reader: Reader, family: Family, config: ModelConfig, raw: dict[str, Any]) -> None:
    """Raise `CorruptModelError` when an embedding tensor's stored shape is not the one config.json implies.

    Reads shapes only (safetensors headers), so it is cheap enough for every load.
    """
    names = embedding_tensor_names(family, base_prefix(reader.names(), family))
    for expected in expected_shapes(family, config, raw):
        name = names.get(expected.part)
        unused = expected.part == "position_embeddings" and not config.uses_absolute_positions
        if name is None or name not in reader or unused:
            continue
        found = tuple(int(n) for n in reader.shape(name))
        hint = expected.mismatch(found)
        if hint is not None:
            raise CorruptModelError(
                f"The weights' {name} has shape {_shape_text(found)}, but config.json implies "
                f"{_shape_text(expected.shape)} ({' x '.join(expected.fields)}).",
                hint,
            )
