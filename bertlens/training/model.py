"""What a pre-training run trains: a new BERT built from the config, or the BERT it continues, and its tokenizer.

A new model is `BertForMaskedLM` (`BertForPreTraining` with next-sentence prediction) with weights drawn from
`seed`. A continued one comes from `init_from` through `core.loader.load_torch_model`, the one place models are
loaded, with any head the checkpoint lacks initialised from `seed`. `freeze_embeddings` applies the embeddings mode
(all rows trainable, none, or only the new rows).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from ..core.errors import NAME, InputError
from ..core.paths import OUTPUT, user_path
from .config import PretrainConfig
from .data import SpecialIds

if TYPE_CHECKING:
    import torch
    from tokenizers import Tokenizer
    from transformers import BertConfig, BertForMaskedLM, BertForPreTraining

    Bert: TypeAlias = "BertForMaskedLM | BertForPreTraining"
else:
    Bert: TypeAlias = Any


def bert_config(config: PretrainConfig, special: SpecialIds) -> BertConfig:
    """The transformers BertConfig of a new model of the config's shape, for this tokenizer's vocabulary."""
    from transformers import BertConfig

    return BertConfig(
        vocab_size=special.vocab_size,
        hidden_size=config.hidden_size,
        num_hidden_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size,
        max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size,
        hidden_dropout_prob=config.hidden_dropout_prob,
        attention_probs_dropout_prob=config.attention_probs_dropout_prob,
        pad_token_id=special.pad,
        tie_word_embeddings=config.tie_word_embeddings,
        architectures=["BertForPreTraining" if config.next_sentence else "BertForMaskedLM"],
    )


def new_model(config: PretrainConfig, special: SpecialIds) -> Bert:
    """A freshly initialised BertForMaskedLM (BertForPreTraining with next-sentence), weights from `seed`."""
    import torch
    from transformers import BertForMaskedLM, BertForPreTraining

    shape = bert_config(config, special)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        try:
            return (BertForPreTraining if config.next_sentence else BertForMaskedLM)(shape)
        except (MemoryError, RuntimeError) as exc:  # torch says "can't allocate memory" with a RuntimeError
            if not isinstance(exc, MemoryError) and "memory" not in str(exc).lower():
                raise
            raise InputError(
                f"A model of this shape ({config.num_hidden_layers} layers x {config.hidden_size}, "
                f"{special.vocab_size} tokens) does not fit in memory.",
                "Choose a smaller preset or hidden size.",
            ) from None


def continued_model(config: PretrainConfig) -> tuple[Bert, Tokenizer, Path]:
    """The model to continue from `init_from`, its tokenizer and its folder (heads it lacks: new, from the seed)."""
    from ..core.loader import load_torch_model
    from ..core.model import load_model

    assert config.init_from is not None
    source = load_model(config.init_from)
    if source.family.model_type != "bert":
        raise InputError(
            f"Continuing pre-training supports BERT models; {config.init_from} is {source.family.label}.",
            "Give a BERT checkpoint (model_type bert).",
        )
    path = Path(str(source.source.path))
    positions = source.config.max_position_embeddings or 0
    if config.seq_length > positions:
        raise InputError(
            f"seq_length {config.seq_length} is longer than the model's position table ({positions} rows).",
            "Use {seq_length} or less.",
            arguments={"seq_length": positions},
        )
    # any head the checkpoint lacks is initialised from the seed
    model = load_torch_model(path, "pretraining" if config.next_sentence else "masked-lm", seed=config.seed)
    return model, source.vocabulary.tokenizer, path


def input_rows(model: Bert) -> int:
    """Rows of the model's input embedding matrix (its vocabulary size)."""
    return int(model.bert.embeddings.word_embeddings.weight.shape[0])


def freeze_embeddings(model: Bert, config: PretrainConfig) -> None:
    """Apply the embeddings mode: all rows trainable, none, or only rows >= new_rows_from."""
    weight = model.bert.embeddings.word_embeddings.weight
    if config.embeddings == "frozen":
        weight.requires_grad_(False)
    elif config.embeddings == "new-rows":
        first = int(config.new_rows_from or 0)
        if first >= weight.shape[0]:
            raise InputError(
                f"new_rows_from {first} is past the last row of the embedding matrix ({weight.shape[0]} rows).",
                "Give the id of the first new row (the old vocabulary size).",
            )

        def keep_old_rows(grad: torch.Tensor) -> torch.Tensor:
            grad = grad.clone()
            grad[:first] = 0  # Adam moments of the old rows stay 0, so their update is exactly 0
            return grad

        weight.register_hook(keep_old_rows)


def tokenizer_folder(tokenizer: str | os.PathLike[str] | None) -> Path:
    """The folder of the tokenizer a model trained from scratch uses (train-tokenizer's output), checked."""
    if tokenizer is None:
        raise InputError(
            "No tokenizer was given for a model trained from scratch.",
            "Train one first (`bertlens train-tokenizer CORPUS --out TOKENIZER_DIR`), then pass {tokenizer}.",
            arguments={"tokenizer": NAME},
        )
    folder = user_path(tokenizer, "tokenizer", OUTPUT)  # only read: it may be a model's folder
    try:
        if folder.is_file():
            folder = folder.parent
        found = (folder / "tokenizer.json").exists()
    except OSError as exc:  # e.g. a folder this user may not enter
        raise InputError(
            f"Cannot look into the tokenizer folder {folder}: {exc.strerror or exc}.",
            "Make the folder readable for this user (chmod a+rx), or give another tokenizer folder.",
        ) from None
    if not found:
        raise InputError(f"{folder} holds no tokenizer.json.", "Give the folder that train-tokenizer wrote.")
    return folder


def read_tokenizer(folder: Path) -> Tokenizer:
    """The `tokenizers.Tokenizer` in `folder`/tokenizer.json, or an InputError that names the file and what to do."""
    from tokenizers import Tokenizer

    file = folder / "tokenizer.json"
    hint = (
        "Give the folder that `bertlens train-tokenizer` wrote, or train one again "
        "(`bertlens train-tokenizer CORPUS --out DIR`)."
    )
    try:
        if not stat.S_ISREG(file.stat().st_mode):
            raise InputError(f"The tokenizer {file} is not a regular file.", hint)
        return Tokenizer.from_file(str(file))
    except OSError as exc:
        raise InputError(f"Cannot read the tokenizer {file}: {exc.strerror or exc}.", hint) from None
    except Exception as exc:  # tokenizers raises plain Exception for a malformed file
        raise InputError(f"The tokenizer file {file} is broken or not a tokenizers JSON file ({exc}).", hint) from None
