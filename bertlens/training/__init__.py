"""Train a small BERT from scratch (WordPiece tokenizer + masked-LM) and watch its input embeddings form."""

from .baseline import Word2VecBaseline, word2vec_baseline
from .config import PRESETS, PretrainConfig
from .pretrain import PretrainResult, pretrain
from .tokenizer_training import TokenizerConfig, TokenizerResult, train_tokenizer
from .watch import WatchReport, watch_report

__all__ = [
    "PRESETS",
    "PretrainConfig",
    "PretrainResult",
    "TokenizerConfig",
    "TokenizerResult",
    "WatchReport",
    "Word2VecBaseline",
    "pretrain",
    "train_tokenizer",
    "watch_report",
    "word2vec_baseline",
]
