"""What a model is: family, sizes, position scheme, parameter count and where it was loaded from."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.model import Model, describe_non_finite, require_model
from ..core.results import Result, table
from ..core.tokens import max_length
from ..core.weights import parameter_count

_SCHEMES = {
    "absolute": "absolute: a learned row per position, ids 0, 1, 2, …",
    "absolute-offset": "absolute, offset: a learned row per position, ids start at padding_idx + 1",
    "none": "none in the embedding layer (relative or rotary, inside attention)",
}


@dataclass(frozen=True)
class ModelInfo(Result):
    """What a model is: family, sizes, position scheme, parameters, where it came from (`bertlens info`).

    >>> info(load_model()).max_position_embeddings
    512
    """

    family: str
    model_type: str
    architectures: tuple[str, ...]
    source: str  # how it was found: default, directory, hf-cache, object
    location: str  # the directory, or a description
    weights_files: tuple[str, ...]
    tokenizer: str
    vocab_size: int  # tokens the tokenizer knows
    matrix_rows: int  # rows of word_embeddings (may exceed vocab_size when padded)
    embedding_size: int
    hidden_size: int
    layers: int
    position_scheme: str
    max_position_embeddings: int | None
    max_length: int | None  # the most tokens one input can have
    token_types: int  # rows of token_type_embeddings (0: none)
    embedding_projection: str | None
    layer_norm_eps: float
    parameters: int
    special_tokens: tuple[str, ...]
    warnings: tuple[str, ...] = ()  # damaged weights (NaN or infinite values): the model is broken; empty when sound

    def to_table(self) -> str:
        rows = [(f.replace("_", " "), _show(getattr(self, f))) for f in self.__dataclass_fields__]
        return table(["field", "value"], rows)


def _show(value: object) -> object:
    if isinstance(value, tuple):
        return ", ".join(map(str, value)) or "-"
    if isinstance(value, int) and not isinstance(value, bool) and value >= 10_000:
        return f"{value:,}"
    return value


def info(model: Model) -> ModelInfo:
    """Describe `model` from its config, tokenizer and weights (no torch needed); `warnings` reports damaged weights.

    >>> described = info(load_model())
    >>> described.family, described.layers, described.hidden_size, described.vocab_size
    ('BERT', 6, 384, 30522)
    """
    model = require_model(model)
    config, family = model.config, model.family
    scheme = family.position_scheme if config.uses_absolute_positions else "none"
    weights = model.stored_embedding_weights  # unchecked: a broken model is described, its damage listed
    projection = None
    if weights.projection_weight is not None:
        projection = f"{family.projection}: {config.embedding_size} -> {config.hidden_size}, {family.projection_order}"
    specials = sorted(model.vocabulary.special_ids)
    return ModelInfo(
        family=family.label,
        model_type=config.model_type,
        architectures=config.architectures,
        source=model.source.kind,
        location=str(model.source.path) if model.source.path else model.source.description,
        weights_files=tuple(str(p) for p in model.source.weights_files),
        tokenizer=model.vocabulary.source,
        vocab_size=model.vocabulary.size,
        matrix_rows=model.matrix_rows,
        embedding_size=int(weights.word_embeddings.shape[1]),
        hidden_size=config.hidden_size,
        layers=config.num_hidden_layers,
        position_scheme=_SCHEMES[scheme],
        max_position_embeddings=config.max_position_embeddings,
        max_length=max_length(model),
        token_types=0 if weights.token_type_embeddings is None else int(weights.token_type_embeddings.shape[0]),
        embedding_projection=projection,
        layer_norm_eps=config.layer_norm_eps,
        parameters=parameter_count(model.reader),
        special_tokens=tuple(model.vocabulary.id_to_token(i) or str(i) for i in specials),
        warnings=describe_non_finite(model),
    )
