"""The tokenizer of a model, loaded with the tokenizers library and stripped of padding and truncation."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import CorruptModelError, InputError, MissingTokenizerError
from .sources import check_readable

if TYPE_CHECKING:
    from tokenizers import Tokenizer

_HINT = "Restore the tokenizer files from the model's original copy."


@dataclass(frozen=True)
class Vocabulary:
    """A `tokenizers.Tokenizer` that never pads or truncates, and what bertlens needs to know about it."""

    tokenizer: Tokenizer
    special_ids: frozenset[int]
    model_max_length: int | None  # from tokenizer_config.json, when it names a real limit
    source: str  # the file it came from, or "object"

    @property
    def size(self) -> int:
        return int(self.tokenizer.get_vocab_size(with_added_tokens=True))

    @property
    def max_id(self) -> int:
        return max(self.tokenizer.get_vocab(with_added_tokens=True).values(), default=-1)

    def id_to_token(self, token_id: int) -> str | None:
        return self.tokenizer.id_to_token(int(token_id))

    def token_to_id(self, token: str) -> int | None:
        return self.tokenizer.token_to_id(token)

    def tokens_by_id(self, rows: int) -> list[str | None]:
        """The token of every id in 0..rows-1 (None where the tokenizer has no token for a row)."""
        table: list[str | None] = [None] * rows
        for token, token_id in self.tokenizer.get_vocab(with_added_tokens=True).items():
            if 0 <= token_id < rows:
                table[token_id] = token
        return table


def load_vocabulary(files: tuple[Path, ...], tokenizer_config: dict[str, Any] | None) -> Vocabulary:
    """Read tokenizer.json, or build a tokenizer from vocab.txt (WordPiece) or vocab.json + merges.txt (BPE)."""
    import tokenizers

    config = tokenizer_config or {}
    first = files[0]
    for file in files:
        check_readable(file)  # tokenizers words a missing permission as a parse error
    try:
        if first.name == "tokenizer.json":
            tokenizer = tokenizers.Tokenizer.from_file(str(first))
        elif first.name == "vocab.txt":
            tokenizer = _wordpiece_from_vocab(first, config)
        else:
            tokenizer = _bpe_from_vocab(first, files[1], config)
    except MissingTokenizerError:
        raise
    except Exception as exc:  # tokenizers raises plain Exception for a malformed file
        raise CorruptModelError(f"Cannot read the tokenizer {first}: {exc}", _HINT) from None
    return from_tokenizer(tokenizer, source=str(first), model_max_length=config.get("model_max_length"), copy=False)


def from_tokenizer(tokenizer: Any, *, source: str, model_max_length: Any = None, copy: bool = True) -> Vocabulary:
    """Wrap a `tokenizers.Tokenizer` (or a transformers fast tokenizer) with padding and truncation off: on a copy, so
    that the caller's tokenizer stays as it was, unless `copy` is false (a tokenizer no one else holds, just read)."""
    import tokenizers

    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    if not isinstance(backend, tokenizers.Tokenizer):
        raise InputError(
            f"Expected a tokenizers.Tokenizer or a transformers fast tokenizer, got {type(tokenizer).__name__}.",
            "Load the tokenizer with AutoTokenizer.from_pretrained(..., use_fast=True).",
        )
    if model_max_length is None:
        model_max_length = getattr(tokenizer, "model_max_length", None)
    if copy:  # serialising and parsing the whole vocabulary again: as long as reading the file
        backend = tokenizers.Tokenizer.from_str(backend.to_str())
    backend.no_padding()
    backend.no_truncation()
    special = frozenset(i for i, t in backend.get_added_tokens_decoder().items() if t.special)
    limit = int(model_max_length) if isinstance(model_max_length, (int, float)) and model_max_length < 1e9 else None
    return Vocabulary(tokenizer=backend, special_ids=special, model_max_length=limit, source=source)


def _wordpiece_from_vocab(vocab: Path, config: dict[str, Any]) -> Tokenizer:
    from tokenizers.implementations import BertWordPieceTokenizer

    lines = vocab.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise MissingTokenizerError(f"{vocab} is empty.", _HINT)
    wrapper = BertWordPieceTokenizer(
        str(vocab),
        lowercase=bool(config.get("do_lower_case", True)),
        strip_accents=config.get("strip_accents"),
        handle_chinese_chars=bool(config.get("tokenize_chinese_chars", True)),
    )
    return wrapper._tokenizer


def _bpe_from_vocab(vocab: Path, merges: Path, config: dict[str, Any]) -> Tokenizer:
    from tokenizers import processors
    from tokenizers.implementations import ByteLevelBPETokenizer

    wrapper = ByteLevelBPETokenizer(str(vocab), str(merges), add_prefix_space=bool(config.get("add_prefix_space")))
    table = json.loads(vocab.read_text(encoding="utf-8"))
    bos, eos = config.get("bos_token", "<s>"), config.get("eos_token", "</s>")
    bos = bos.get("content", "<s>") if isinstance(bos, dict) else bos
    eos = eos.get("content", "</s>") if isinstance(eos, dict) else eos
    specials = [t for t in ("<s>", "</s>", "<pad>", "<unk>", "<mask>", bos, eos) if t in table]
    wrapper.add_special_tokens(sorted(set(specials)))
    if bos in table and eos in table:
        wrapper._tokenizer.post_processor = processors.RobertaProcessing((eos, table[eos]), (bos, table[bos]))
    return wrapper._tokenizer
