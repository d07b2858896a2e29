"""Train a WordPiece vocabulary (the tokenizers library's trainer) on a corpus, saved in Hugging Face layout.

The tokenizer is BERT's: BertNormalizer (optionally lower-casing and stripping accents), BertPreTokenizer, WordPiece
with `##` continuation pieces, and the `[CLS] A [SEP] B [SEP]` template with token types 0 and 1. The folder gets
`tokenizer.json`, `vocab.txt` and `tokenizer_config.json`, so transformers' AutoTokenizer and bertlens both read it.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.corpus import iter_texts
from ..core.errors import InputError
from ..core.outputs import folder_for, output_path, replace_text, staging, write_error
from ..core.results import Result, table

BERT_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "tokenizer_config.json")


@dataclass(frozen=True)
class TokenizerConfig:
    """How the WordPiece vocabulary is trained.

    >>> config = TokenizerConfig(vocab_size=30522, lowercase=True)
    """

    vocab_size: int = 30522  # pieces in the vocabulary, special tokens included (BERT's is 30,522)
    lowercase: bool = True  # lower-case (and strip accents, as BERT uncased does) before splitting
    strip_accents: bool | None = None  # None: strip when lowercasing, as BERT does
    special_tokens: tuple[str, ...] = BERT_SPECIAL_TOKENS  # must hold [PAD] [UNK] [CLS] [SEP] [MASK] (ids 0..)
    min_frequency: int = 2  # a merge must be seen this often
    limit_alphabet: int = 1000  # most frequent characters kept as single-character pieces
    max_texts: int | None = None  # read at most this many texts of the corpus (None: all)
    model_max_length: int = 512  # written to tokenizer_config.json


@dataclass(frozen=True, repr=False)
class TokenizerResult(Result):
    """A trained tokenizer: where it was written and what it holds.

    >>> result = train_tokenizer("sample", "tok/", TokenizerConfig(vocab_size=8000))  # doctest: +SKIP
    >>> result.files  # tokenizer.json, vocab.txt, tokenizer_config.json  # doctest: +SKIP
    """

    out: str
    vocab_size: int  # pieces actually learnt, special tokens included
    requested_size: int
    special_tokens: tuple[str, ...]
    lowercase: bool
    texts: int  # texts (non-blank lines) read
    files: tuple[str, ...]
    sample: tuple[str, ...]  # a few of the longest whole-word pieces learnt

    def __repr__(self) -> str:
        return f"TokenizerResult({self.vocab_size} pieces from {self.texts} texts at {self.out})"

    def to_table(self) -> str:
        rows = [
            ("out", self.out),
            ("vocabulary", f"{self.vocab_size} pieces (asked for {self.requested_size})"),
            ("special tokens", " ".join(self.special_tokens)),
            ("lower-cased", self.lowercase),
            ("texts read", self.texts),
            ("files", ", ".join(self.files)),
            ("sample", " ".join(self.sample)),
        ]
        return table(["", "value"], rows)


REQUIRED_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
MAX_VOCAB_SIZE = 1 << 24  # tokenizers' trainer aborts the process (a Rust capacity overflow) near 2**31 pieces
# Whole-number fields: (least, most, an example). The trainer converts them to 32-bit or pointer-sized integers.
_WHOLE: dict[str, tuple[int, int, str]] = {
    "vocab_size": (1, MAX_VOCAB_SIZE, "30522 (BERT's); a few thousand suit a small corpus"),
    "min_frequency": (1, 2**32 - 1, "2"),
    "limit_alphabet": (1, MAX_VOCAB_SIZE, "1000"),
    "model_max_length": (1, 2**31 - 1, "512"),
    "max_texts": (1, 2**63 - 1, "100000"),
}


def _check_types(config: TokenizerConfig) -> None:
    for name, (least, most, example) in _WHOLE.items():
        value = getattr(config, name)
        if value is None and name == "max_texts":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
            raise InputError(
                f"{name} must be a whole number from {least} to {most:,}, got {value!r}.", f"Usual: {example}."
            )
    for name in ("lowercase",):
        if not isinstance(getattr(config, name), bool):
            raise InputError(f"{name} must be true or false, got {getattr(config, name)!r}.", "Example: True.")
    if config.strip_accents is not None and not isinstance(config.strip_accents, bool):
        raise InputError(f"strip_accents must be true, false or None, got {config.strip_accents!r}.", "None.")
    tokens = config.special_tokens
    if not isinstance(tokens, (tuple, list)) or not all(isinstance(t, str) and t.strip() for t in tokens):
        raise InputError(f"special_tokens must be a list of non-blank tokens, got {tokens!r}.", "[PAD] [UNK] …")


def _check(config: TokenizerConfig) -> None:
    _check_types(config)
    missing = [t for t in REQUIRED_SPECIALS if t not in config.special_tokens]
    if missing:
        raise InputError(
            f"The special tokens lack {' '.join(missing)}, which masked-language-model training needs.",
            f"Include {' '.join(REQUIRED_SPECIALS)} (more may follow).",
        )
    if len(set(config.special_tokens)) != len(config.special_tokens):
        raise InputError("A special token is listed twice.", "List each special token once.")
    if config.vocab_size <= len(config.special_tokens):
        raise InputError(
            f"A vocabulary of {config.vocab_size} pieces has no room beside the {len(config.special_tokens)} special "
            "tokens.",
            "Ask for more pieces (BERT uses 30522; a few thousand suit a small corpus).",
        )


def build_untrained(config: TokenizerConfig) -> tuple[Any, Any]:
    """A BERT tokenizer with an empty WordPiece model, and the trainer that fills it."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=100))
    strip = config.lowercase if config.strip_accents is None else config.strip_accents
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=strip, lowercase=config.lowercase
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.WordPieceTrainer(
        vocab_size=config.vocab_size,
        min_frequency=config.min_frequency,
        special_tokens=list(config.special_tokens),
        limit_alphabet=config.limit_alphabet,
        continuing_subword_prefix="##",
        show_progress=False,
    )
    return tokenizer, trainer


def _finish(tokenizer: Any) -> None:
    from tokenizers import processors

    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )


def tokenizer_config_json(lowercase: bool, strip_accents: bool | None, model_max_length: int) -> dict[str, Any]:
    """tokenizer_config.json for a BERT WordPiece tokenizer (what transformers' BertTokenizerFast writes)."""
    return {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": lowercase,
        "strip_accents": strip_accents,
        "tokenize_chinese_chars": True,
        "model_max_length": model_max_length,
        "unk_token": "[UNK]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "cls_token": "[CLS]",
        "mask_token": "[MASK]",
        "clean_up_tokenization_spaces": False,
    }


def save_tokenizer(tokenizer: Any, folder: Path, config_json: dict[str, Any]) -> None:
    """Write tokenizer.json, vocab.txt (ids in order) and tokenizer_config.json into `folder`."""
    tokenizer.save(str(folder / "tokenizer.json"))
    vocab = tokenizer.get_vocab(with_added_tokens=True)
    by_id = sorted(vocab.items(), key=lambda item: item[1])
    replace_text(folder / "vocab.txt", "".join(f"{token}\n" for token, _ in by_id))
    replace_text(folder / "tokenizer_config.json", json.dumps(config_json, indent=2) + "\n")


def trained_tokenizer(corpus: str | os.PathLike[str], config: TokenizerConfig) -> tuple[Any, int]:
    """A `tokenizers.Tokenizer` trained on `corpus` in memory (nothing written), and the number of texts read."""
    _check(config)
    texts = iter_texts(corpus)
    first = next(texts)  # raises the corpus's own error (missing, empty, not UTF-8) before anything is written
    count = 0

    def stream() -> Iterator[str]:
        nonlocal count
        for item in itertools.chain([first], texts):
            if config.max_texts is not None and count >= config.max_texts:
                return
            count += 1
            yield item.text

    tokenizer, trainer = build_untrained(config)
    tokenizer.train_from_iterator(stream(), trainer=trainer)
    _finish(tokenizer)
    learnt = tokenizer.get_vocab_size(with_added_tokens=True)
    if learnt > config.vocab_size:
        raise InputError(
            f"The corpus has {learnt - len(config.special_tokens)} distinct characters and pieces that must be kept, "
            f"more than the {config.vocab_size} asked for.",
            "Raise the vocabulary size or lower limit_alphabet.",
        )
    return tokenizer, count


def config_json(config: TokenizerConfig) -> dict[str, Any]:
    """tokenizer_config.json for a tokenizer trained with `config`."""
    strip = config.lowercase if config.strip_accents is None else config.strip_accents
    return tokenizer_config_json(config.lowercase, strip, config.model_max_length)


def train_tokenizer(
    corpus: str | os.PathLike[str],
    out: str | os.PathLike[str],
    config: TokenizerConfig = TokenizerConfig(),
    *,
    overwrite: bool = False,
) -> TokenizerResult:
    """Train a WordPiece vocabulary on `corpus` (a text file or folder, plain or WikiExtractor) into the folder `out`.

    The files are written to a staging folder beside `out` and moved in only when training succeeded; files already
    in `out` are replaced only with `overwrite`.

    >>> result = train_tokenizer("sample", "tok/", TokenizerConfig(vocab_size=8000))  # doctest: +SKIP
    >>> result.vocab_size  # doctest: +SKIP
    8000
    """
    if not isinstance(config, TokenizerConfig):
        raise InputError(f"config must be a TokenizerConfig, got {type(config).__name__}.", "TokenizerConfig()")
    _check(config)
    target = output_path(out, "tokenizer")
    if (target.exists() or target.is_symlink()) and not target.is_dir():
        raise InputError(f"{target} exists and is not a folder.", "Give a folder for the tokenizer (it is created).")
    clash = [name for name in TOKENIZER_FILES if (target / name).exists()]
    if clash and not overwrite:
        raise InputError(f"{target} already holds {', '.join(clash)}.", "Choose another folder or pass overwrite.")
    tokenizer, count = trained_tokenizer(corpus, config)
    try:
        with folder_for(target), staging(target.parent, "tokenizer") as folder:
            save_tokenizer(tokenizer, folder, config_json(config))
            for name in TOKENIZER_FILES:
                os.replace(folder / name, target / name)
    except OSError as exc:
        raise write_error(target, exc, "the tokenizer") from None
    vocab = tokenizer.get_vocab()
    words = sorted((t for t in vocab if not t.startswith("##") and t.isalpha()), key=lambda t: (-len(t), t))
    return TokenizerResult(
        out=str(target),
        vocab_size=tokenizer.get_vocab_size(with_added_tokens=True),
        requested_size=config.vocab_size,
        special_tokens=tuple(config.special_tokens),
        lowercase=config.lowercase,
        texts=count,
        files=TOKENIZER_FILES,
        sample=tuple(words[:8]),
    )
