"""Every option vocabulary shared by the library, the CLI and the web API, declared once, with its metadata.

Each vocabulary is a `Literal` type (for type hints and pydantic) and the tuple of its values (for argparse and for
the library's own checks), so a choice added here reaches every surface. Each option that both the CLI and the web
API take is an `Option` (name, help text, default, choices): `cli.common.add_option` makes its flag and
`web.requests.field` its request field, so that the two cannot drift apart. Nothing here imports more than `typing`
and `dataclasses`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from .errors import InputError

# Static vectors: how a word's pieces (rows of word_embeddings) pool into one vector.
Pool = Literal["mean", "first", "last", "sum"]
POOLS: tuple[str, ...] = get_args(Pool)

# Contextual vectors: how a word's pieces (hidden states) pool, how layers combine, how a text pools.
WordPool = Literal["mean", "first", "last", "first+last", "max"]
WORD_POOLS: tuple[str, ...] = get_args(WordPool)
Combine = Literal["mean", "sum", "concat"]
COMBINES: tuple[str, ...] = get_args(Combine)
SentencePool = Literal["cls", "mean", "max"]
SENTENCE_POOLS: tuple[str, ...] = get_args(SentencePool)
Device = Literal["cpu", "cuda", "auto"]
DEVICES: tuple[str, ...] = get_args(Device)
# The precision the model runs in (core/precision.py); float16 on CUDA GPUs only (GPUs without bfloat16: T4, V100).
Precision = Literal["auto", "float32", "bfloat16", "float16"]
PRECISIONS: tuple[str, ...] = get_args(Precision)
ShardFormat = Literal["npy", "parquet"]
SHARD_FORMATS: tuple[str, ...] = get_args(ShardFormat)

# Similarity in the input matrix.
Metric = Literal["cosine", "dot", "euclidean"]
METRICS: tuple[str, ...] = get_args(Metric)
AnalogyMethod = Literal["3cosadd", "3cosmul"]
ANALOGY_METHODS: tuple[str, ...] = get_args(AnalogyMethod)

# Projections (views) and plots.
ProjectionMethod = Literal["pca", "tsne", "umap"]
PROJECTION_METHODS: tuple[str, ...] = get_args(ProjectionMethod)
ProjectionMetric = Literal["cosine", "euclidean"]
PROJECTION_METRICS: tuple[str, ...] = get_args(ProjectionMetric)
Level = Literal["word", "token"]
LEVELS: tuple[str, ...] = get_args(Level)
Dims = Literal[2, 3]
DIMS: tuple[int, ...] = get_args(Dims)
PlotFormat = Literal["png", "svg", "html"]
PLOT_FORMATS: tuple[str, ...] = get_args(PlotFormat)

# Files written from the embedding matrix.
ExportFormat = Literal["npy", "safetensors", "word2vec", "tensorboard"]
EXPORT_FORMATS: tuple[str, ...] = get_args(ExportFormat)

# New words: how their first rows are made.
Strategy = Literal[
    "random", "mean", "mean-resizing", "pieces", "pieces-first", "pieces-last", "pieces-weighted", "neighbors", "rows"
]
STRATEGIES: tuple[str, ...] = get_args(Strategy)

# Training.
Preset = Literal["demo", "tiny", "mini", "small", "base"]
PRESET_NAMES: tuple[str, ...] = get_args(Preset)
TrainPrecision = Literal["auto", "float32", "bfloat16"]  # autocast while pretraining
# The most (padded) tokens in one forward pass. 2048 ran fastest on an AMD EPYC (AVX-512): 12% over 4096 in float32,
# 8% in bfloat16 (less padding, activations that stay in cache; docs/benchmarks.md); it also bounds memory.
BATCH_TOKENS = 2048
TRAIN_PRECISIONS: tuple[str, ...] = get_args(TrainPrecision)
EmbeddingMode = Literal["trainable", "frozen", "new-rows"]
EMBEDDING_MODES: tuple[str, ...] = get_args(EmbeddingMode)
Schedule = Literal["linear", "constant"]
SCHEDULES: tuple[str, ...] = get_args(Schedule)


def check_choice(value: object, choices: tuple[object, ...], what: str) -> None:
    """Refuse `value` unless it is one of `choices`, naming them (`what`: e.g. "pooling", "layer combination")."""
    if value not in choices:
        raise InputError(f"Unknown {what} {value!r}.", f"Choose one of: {', '.join(map(str, choices))}.")


@dataclass(frozen=True)
class Option:
    """One option as both surfaces show it: a CLI flag (or argument) and a web API request field.

    The CLI's help and the API's description are the one `help` text; both use the same choices and default.
    """

    name: str  # the request field and the CLI's argparse dest, e.g. "remove_top" (its flag: --remove-top)
    help: str  # the CLI's --help line and the API's field description
    default: Any = None  # what applies when it is not given (a tuple for a list option)
    choices: tuple[Any, ...] | None = None  # one of the vocabularies above, or None: any value of `kind`
    kind: type = str  # str, int or float; bool: a switch, off unless given
    flag: str | None = None  # the CLI's spelling: None for "--" + name (dashes for underscores), "" for an argument
    metavar: str | None = None  # the CLI's placeholder (None: argparse's own)
    many: bool = False  # several values: a list field; on the CLI nargs "+" (an argument: "*")
    required: bool = False  # the API field has no default (a CLI argument is required by its nargs)
    cli_unset: bool = False  # the CLI keeps None unless given, so a command can refuse it where it does not apply

    @property
    def flags(self) -> tuple[str, ...]:
        """The CLI's option strings; () for a positional argument."""
        if self.flag == "":
            return ()
        return (self.flag or "--" + self.name.replace("_", "-"),)

    @property
    def cli_default(self) -> Any:
        """The value argparse gives when the flag is absent (a list option: a fresh list)."""
        if self.cli_unset:
            return None
        return list(self.default) if self.many else self.default


# neighbors and similarity: the space searched, the queries, which rows may answer.
METRIC_OPTION = Option("metric", "similarity measure", "cosine", METRICS)
CENTER_OPTION = Option("center", "subtract the mean row first (anisotropy correction)", False, kind=bool)
REMOVE_TOP_OPTION = Option("remove_top", "also remove the top D principal directions", 0, kind=int, metavar="D")
POOL_OPTION = Option("pool", "for words: how to pool their pieces (default mean)", "mean", POOLS, cli_unset=True)
QUERIES_OPTION = Option(
    "queries",
    "tokens or words (token ids with the id option); one result each",
    (),
    flag="",
    metavar="QUERY",
    many=True,
)
K_OPTION = Option("k", "how many neighbours (default 10)", 10, kind=int, flag="-k")
ID_OPTION = Option("id", "the queries are token ids", False, kind=bool)
POSITIVE_OPTION = Option("positive", "terms to add (king woman)", (), metavar="TERM", many=True)
NEGATIVE_OPTION = Option("negative", "terms to subtract (man)", (), metavar="TERM", many=True)
WORDS_ONLY_OPTION = Option("words_only", "only whole words: no pieces, numbers, punctuation", False, kind=bool)
NO_PIECES_OPTION = Option("no_pieces", "drop ## continuation pieces", False, kind=bool)
NO_NUMBERS_OPTION = Option("no_numbers", "drop tokens made of digits", False, kind=bool)
NO_PUNCTUATION_OPTION = Option("no_punctuation", "drop punctuation and symbol tokens", False, kind=bool)
SPECIALS_OPTION = Option("specials", "keep special tokens ([CLS], [SEP], …)", False, kind=bool)
UNUSED_OPTION = Option("unused", "keep [unused…] rows", False, kind=bool)
# Which rows may answer (neighbors, similarity; a subset for export).
FILTER_OPTIONS = (
    WORDS_ONLY_OPTION,
    NO_PIECES_OPTION,
    NO_NUMBERS_OPTION,
    NO_PUNCTUATION_OPTION,
    SPECIALS_OPTION,
    UNUSED_OPTION,
)
NEIGHBORS_OPTIONS = (
    QUERIES_OPTION,
    K_OPTION,
    ID_OPTION,
    POSITIVE_OPTION,
    NEGATIVE_OPTION,
    METRIC_OPTION,
    CENTER_OPTION,
    REMOVE_TOP_OPTION,
    POOL_OPTION,
    *FILTER_OPTIONS,
)

# Texts.
PAIR_OPTION = Option("pair", "a second text, for a text pair (segment 1)")

# context and trajectory: a word followed across sentences.
WORD_OPTION = Option("word", "the word to follow, e.g. bread", flag="", required=True)
SENTENCES_OPTION = Option(
    "sentences", "two or more sentences that contain it", flag="", metavar="SENTENCE", many=True, required=True
)
TRAJECTORY_SENTENCES_OPTION = Option(
    "sentences", "sentences that contain it (one or more)", flag="", metavar="SENTENCE", many=True, required=True
)
WORD_POOL_OPTION = Option("pool", "how a word's pieces pool (default mean)", "mean", WORD_POOLS, cli_unset=True)

# Projections (plot tokens / contextual / trajectory, and the page's projections).
METHOD_OPTION = Option("method", "projection method (default pca)", "pca", PROJECTION_METHODS)
DIMS_OPTION = Option("dims", "2 or 3 dimensions (default 2)", 2, DIMS, kind=int)
SEED_OPTION = Option("seed", "seed of t-SNE and UMAP (default 0)", 0, kind=int, cli_unset=True)
LAYER_OPTION = Option("layer", "0 = embedding output, -1 = the last (default)", -1, kind=int)
LEVEL_OPTION = Option("level", "a point per word or per token", "word", LEVELS)
LABEL_OPTION = Option("label", "a label for every point (metadata column 'label')")
