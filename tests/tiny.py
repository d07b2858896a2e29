"""Tiny randomly initialised models of every supported family, built from a config inside the tests (no download).

Each is saved as a Hugging Face directory (config.json, model.safetensors, tokenizer.json). LayerNorm and
projection parameters are perturbed away from their 1/0 initial values, so a reconstruction that forgot them fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

WORDS = [
    "the",
    "a",
    "an",
    "is",
    "was",
    "be",
    "to",
    "of",
    "and",
    "in",
    "on",
    "at",
    "it",
    "he",
    "she",
    "we",
    "they",
    "you",
    "i",
    "this",
    "that",
    "cat",
    "dog",
    "sat",
    "ran",
    "mat",
    "red",
    "blue",
    "big",
    "small",
    "house",
    "car",
    "tree",
    "day",
    "night",
    "run",
    "walk",
    "good",
    "bad",
    "new",
    "old",
    "bread",
    "banana",
]
BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
ROBERTA_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
VOCAB = 80
FAMILIES = ("bert", "roberta", "xlm-roberta", "distilbert", "albert", "electra", "deberta-v2", "modernbert")


def build_tokenizer(specials: tuple[str, ...], size: int = VOCAB) -> tuple[Any, dict[str, int]]:
    """A WordPiece tokenizer over a small English vocabulary, with a [CLS] A [SEP] B [SEP] template."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = list(specials) + [w for w in WORDS if w not in specials]
    vocab += [c for c in "abcdefghijklmnopqrstuvwxyz,.!?" if c not in vocab]
    vocab += ["##s", "##ed", "##ing", "##an"]
    vocab = vocab[:size]
    table = {t: i for i, t in enumerate(vocab)}
    cls, sep, unk = ("<s>", "</s>", "<unk>") if specials[0] == "<s>" else (specials[2], specials[3], specials[1])
    tok = Tokenizer(models.WordPiece(vocab=table, unk_token=unk, max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    roberta = specials[0] == "<s>"  # RoBERTa: <s> A </s></s> B </s>, every segment id 0
    tok.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}",
        pair=f"{cls} $A {sep} {sep} $B {sep}" if roberta else f"{cls} $A {sep} $B:1 {sep}:1",
        special_tokens=[(cls, table[cls]), (sep, table[sep])],
    )
    tok.decoder = decoders.WordPiece()
    tok.add_special_tokens(list(specials))
    return tok, table


def tiny_config(family: str, **overrides: Any) -> Any:
    import transformers as T

    common = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
    )
    if family == "bert":
        config = T.BertConfig(pad_token_id=0, **common)
    elif family in ("roberta", "xlm-roberta"):
        cls = T.RobertaConfig if family == "roberta" else T.XLMRobertaConfig
        config = cls(pad_token_id=1, bos_token_id=0, eos_token_id=2, type_vocab_size=1, **common)
    elif family == "distilbert":
        config = T.DistilBertConfig(
            vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=37, max_position_embeddings=64, pad_token_id=0
        )
    elif family == "albert":
        config = T.AlbertConfig(embedding_size=16, pad_token_id=0, **common)
    elif family == "electra":
        config = T.ElectraConfig(embedding_size=16, pad_token_id=0, **common)
    elif family == "deberta-v2":
        config = T.DebertaV2Config(
            embedding_size=16,
            position_biased_input=False,
            relative_attention=True,
            pos_att_type=["p2c", "c2p"],
            type_vocab_size=0,
            pad_token_id=0,
            **common,
        )
    elif family == "modernbert":
        config = T.ModernBertConfig(
            vocab_size=VOCAB,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=37,
            max_position_embeddings=64,
            pad_token_id=0,
            bos_token_id=2,
            eos_token_id=3,
            cls_token_id=2,
            sep_token_id=3,
            global_attn_every_n_layers=1,
            local_attention=16,
        )
    else:
        raise ValueError(family)
    for key, value in overrides.items():
        setattr(config, key, value)
    return config


def perturb(model: Any, seed: int) -> None:
    """Move LayerNorm, projection and embedding parameters away from their initial values."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "embed" in name or "LayerNorm" in name or "norm" in name:
                param.add_(torch.randn(param.shape, generator=generator) * 0.3)


def make_tiny(
    family: str, directory: Path, *, mlm: bool = False, seed: int = 0, safetensors: bool = True, **overrides: Any
) -> Path:
    """Build, perturb and save a tiny model of `family` (base model, or with its masked-LM head) with a tokenizer."""
    import torch
    import transformers as T

    torch.manual_seed(seed)
    config = tiny_config(family, **overrides)
    cls = T.AutoModelForMaskedLM if mlm else T.AutoModel
    model = cls.from_config(config).eval()
    perturb(model, seed)
    specials = ROBERTA_SPECIALS if family in ("roberta", "xlm-roberta") else BERT_SPECIALS
    tokenizer, _ = build_tokenizer(specials)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    if not safetensors:  # the older PyTorch pickle layout
        torch.save(model.state_dict(), directory / "pytorch_model.bin")
        (directory / "model.safetensors").unlink()
    tokenizer.save(str(directory / "tokenizer.json"))
    return directory
