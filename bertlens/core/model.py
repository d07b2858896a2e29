"""One model as bertlens sees it: its files, config, vocabulary, embedding tensors and (on demand) the torch model.

Loading is cheap: it reads config.json, the tokenizer and the weights' headers. The embedding tensors are read on
first use, and torch and transformers only when a model runs: texts run through transformers' own model
(`torch_model`), loaded with the model's weights.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from .errors import CorruptModelError, InputError, VocabularyMismatchError
from .families import (
    EmbeddingWeights,
    Family,
    ModelConfig,
    base_prefix,
    check_embedding_shapes,
    embedding_tensor_names,
    family_for,
    non_finite_rows,
    read_embedding_weights,
)
from .loader import copy_on, load_torch_model
from .sources import ModelSource, resolve
from .vocab import Vocabulary, from_tokenizer, load_vocabulary
from .weights import StateDictReader, WeightsReader

if TYPE_CHECKING:
    from torch.nn import Module

T = TypeVar("T")


@dataclass
class Model:
    """A loaded model. Build it with `load_model`; it keeps its expensive parts once read.

    >>> model = load_model()
    >>> tokenize(model, "I am Sinan").ids
    [101, 1045, 2572, 8254, 2319, 102]
    """

    source: ModelSource
    family: Family
    config: ModelConfig
    raw_config: dict[str, Any]
    vocabulary: Vocabulary
    reader: WeightsReader | StateDictReader
    _weights: EmbeddingWeights | None = field(default=None, repr=False)
    _non_finite: dict[str, np.ndarray] | None = field(default=None, repr=False)
    _torch_model: Module | None = field(default=None, repr=False)
    _rows: int | None = field(default=None, repr=False)
    _variants: dict[tuple[str, str], Module] = field(default_factory=dict, repr=False)
    _memo: dict[object, Any] = field(default_factory=dict, repr=False)

    def remember(self, key: object, make: Callable[[], T]) -> T:
        """`make()`, computed once per loaded model and `key` (facts derived from it, e.g. a precision probe)."""
        if key not in self._memo:
            self._memo[key] = make()
        value: T = self._memo[key]
        return value

    @cached_property
    def content_hash(self) -> str:
        """A hash of the config, `word_embeddings` and vocabulary (32 hex digits), computed once per loaded model.

        It depends only on the model's numbers, not on where its files lie: an occurrence index, a calibration or a
        Ray actor's copy of the model is checked against it (~0.3 s for the default model).
        """
        digest = hashlib.sha256(json.dumps(self.raw_config, sort_keys=True, default=str).encode())
        rows = np.ascontiguousarray(self.embedding_weights.word_embeddings, dtype=np.float32)  # (vocab, D)
        digest.update(rows.tobytes())
        digest.update("\n".join(t or "" for t in self.vocabulary.tokens_by_id(self.matrix_rows)).encode())
        return digest.hexdigest()[:32]

    def __repr__(self) -> str:
        return (
            f"Model({self.family.label}, vocab={self.vocabulary.size}, hidden={self.config.hidden_size}, "
            f"layers={self.config.num_hidden_layers}, from {self.source.description})"
        )

    @property
    def embedding_weights(self) -> EmbeddingWeights:
        """The embedding layer's parameters as numpy arrays (read once); `CorruptModelError` if any is NaN or ±inf."""
        damaged = describe_non_finite(self)
        if damaged:
            more = len(damaged) - 1
            others = f" ({more} more tensor{'s' if more > 1 else ''} damaged too)" if more else ""
            raise CorruptModelError(
                f"The weights' {damaged[0]}{others}: vectors and similarities built from them would be NaN.",
                "The model is broken (a diverged training run, or a damaged file): use an earlier checkpoint or "
                "the model's original copy. `bertlens info` lists every damaged tensor.",
            )
        return self.stored_embedding_weights

    @property
    def stored_embedding_weights(self) -> EmbeddingWeights:
        """The embedding layer's parameters as stored, unchecked (they may hold NaN: see `non_finite_rows`)."""
        if self._weights is None:
            self._weights = read_embedding_weights(self.reader, self.family, self.config)
        return self._weights

    @property
    def non_finite_rows(self) -> dict[str, np.ndarray]:
        """Embedding tensor name -> ids of its rows holding NaN or ±inf; empty for a sound model."""
        if self._non_finite is None:
            names = embedding_tensor_names(self.family, base_prefix(self.reader.names(), self.family))
            found = non_finite_rows(self.stored_embedding_weights)
            self._non_finite = {names[part]: rows for part, rows in found.items()}
        return self._non_finite

    @property
    def matrix_rows(self) -> int:
        if self._rows is None:
            self._rows = self.reader.shape(_word_embeddings_name(self))[0]
        return self._rows

    def torch_model(self) -> Module:
        """The transformers base model in eval mode, float32 on the CPU (imports torch and transformers): the model
        texts run through, loaded once with the model's weights."""
        if self._torch_model is None:
            self._torch_model = load_torch_model(str(self.source.path), "base", base_class=self.family.base_class)
        return self._torch_model

    def torch_model_on(self, device: str, dtype: str) -> Module:
        """A copy of `torch_model()` on `device` in `dtype` (float32, bfloat16 or float16), made once and kept.

        The float32 CPU model itself is never converted, so its numbers stay exact for every other use.
        """
        if (device, dtype) == ("cpu", "float32"):
            return self.torch_model()
        if (device, dtype) not in self._variants:
            self._variants[(device, dtype)] = copy_on(self.torch_model(), device, dtype)
        return self._variants[(device, dtype)]


def _rows_phrase(rows: np.ndarray, unit: str, shown: int = 5) -> str:
    """'1 row (5)' or '7 rows (1, 2, 3, 4, 5, …)'."""
    ids = ", ".join(str(i) for i in rows[:shown]) + (", …" if len(rows) > shown else "")
    return f"{len(rows)} {unit}{'' if len(rows) == 1 else 's'} ({ids})"


def describe_non_finite(model: Model) -> tuple[str, ...]:
    """One line per embedding tensor holding NaN or ±inf (empty for a sound model), for reports such as `info`."""
    return tuple(
        f"{name} holds NaN or infinite values in "
        + _rows_phrase(rows, "row" if len(model.reader.shape(name)) > 1 else "entry")
        for name, rows in model.non_finite_rows.items()
    )


def require_model(value: object, name: str = "model") -> Model:
    """`value` when it is a loaded `Model`; an InputError saying how to get one otherwise."""
    if not isinstance(value, Model):
        raise InputError(
            f"{name} must be a bertlens Model, got {type(value).__name__}.",
            "Load one with bertlens.load_model(PATH) (or use Lens(PATH), whose .model is one).",
        )
    return value


def _word_embeddings_name(model: Model) -> str:
    return base_prefix(model.reader.names(), model.family) + model.family.word_embeddings + ".weight"


def load_model(
    model: str | os.PathLike[str] | Any | None = None,
    *,
    tokenizer: Any | None = None,
    env: Mapping[str, str] | None = None,
    offline: bool = False,
    progress: bool = False,
) -> Model:
    """Load a model from the default package, a directory, the Hugging Face Hub, or a transformers object.

    `model` is None (then `BERTLENS_MODEL`, then the default), "default", a path, a hub id (`bert-base-uncased`,
    `owner/name`, either with `@revision`: a branch, tag or commit), or an already-loaded transformers model, in which
    case `tokenizer` (a fast tokenizer) is required too. A hub id is read from the local Hugging Face cache, or fetched
    into it once (config, tokenizer and safetensors weights only) unless `offline` is true or HF_HUB_OFFLINE=1;
    `progress` shows the fetch on standard error. `env` (default: the process environment, only read) holds
    BERTLENS_MODEL and the Hugging Face variables (HF_HUB_OFFLINE, HF_HOME or HF_HUB_CACHE, HF_ENDPOINT, HF_TOKEN).

    Example:
        >>> model = load_model()  # the bundled default
        >>> model.config.hidden_size
        384
        >>> bert = load_model("bert-base-uncased")  # doctest: +SKIP
    """
    if model is not None and not isinstance(model, (str, os.PathLike)):
        return from_objects(model, tokenizer)
    if tokenizer is not None:
        raise InputError(
            "A tokenizer was given with a model path; it is used only with an already-loaded transformers model.",
            "Leave tokenizer out: a model directory brings its own tokenizer files.",
        )
    source = resolve(model, env, offline=offline, progress=progress)
    raw = source.read_json("config.json") or {}
    family = family_for(raw)
    config = ModelConfig.from_dict(raw, family)
    vocabulary = load_vocabulary(source.tokenizer_files, source.read_json("tokenizer_config.json"))
    reader = WeightsReader(source.weights_files, source.weights_format)
    return _checked(Model(source, family, config, raw, vocabulary, reader))


def from_objects(model: Any, tokenizer: Any) -> Model:
    """A `Model` over an already-loaded transformers model and its fast tokenizer (nothing is read from disk)."""
    config_obj = getattr(model, "config", None)
    if (
        config_obj is None
        or not callable(getattr(config_obj, "to_dict", None))
        or not callable(getattr(model, "state_dict", None))
    ):
        raise InputError(
            f"Expected a path, a hub id or a transformers model, got {type(model).__name__}.",
            "Pass a directory, a model id from the local cache, or a PreTrainedModel with its tokenizer.",
        )
    if tokenizer is None:
        raise InputError(
            "A transformers model was given without its tokenizer.",
            "Pass tokenizer=AutoTokenizer.from_pretrained(...) too.",
        )
    raw = config_obj.to_dict()
    if not isinstance(raw, dict):
        raise InputError(
            f"The model's config.to_dict() gave {type(raw).__name__}, not a dict.",
            "Pass a transformers PreTrainedModel, whose config is a PretrainedConfig.",
        )
    family = family_for(raw)
    config = ModelConfig.from_dict(raw, family)
    vocabulary = from_tokenizer(tokenizer, source="object")
    source = ModelSource(kind="object", spec="object", path=None, weights_format="object")
    base = getattr(model, "base_model", model).eval()
    checked = _checked(Model(source, family, config, raw, vocabulary, StateDictReader(model.state_dict())))
    checked._torch_model = base
    return checked


def _checked(model: Model) -> Model:
    rows = model.matrix_rows
    if model.vocabulary.max_id >= rows:
        raise VocabularyMismatchError(
            f"The tokenizer has ids up to {model.vocabulary.max_id} but the embedding matrix has only {rows} rows "
            f"({model.vocabulary.source}).",
            "The tokenizer belongs to another model, or new tokens were added without resizing the matrix "
            "(model.resize_token_embeddings). Use the tokenizer saved with these weights.",
        )
    if model.config.vocab_size != rows:
        raise VocabularyMismatchError(
            f"config.json says vocab_size={model.config.vocab_size} but the embedding matrix has {rows} rows.",
            "The config and the weights come from different models: restore the matching config.json.",
        )
    check_embedding_shapes(model.reader, model.family, model.config, model.raw_config)
    return model
