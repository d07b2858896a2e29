"""Every option vocabulary shared by the library, the CLI and the web API, declared once, with its metadata.

Each vocabulary is a `Literal` type (for type hints and pydantic) and the tuple of its values (for click's `Choice`
and for the library's own checks), so a choice added here reaches every surface. Each option that more than one
command (or a command and the web API) takes is an `Option` (name, help text, default, choices): `cli.params.option`
makes its click option and `web.requests.field` its request field, so that they cannot drift apart. Where one
command's default differs from the others', it is a declaration of its own beside the shared one
(`REPORT_K_OPTION = K_OPTION.but(default=5)`). Nothing here imports more than `typing` and `dataclasses`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from .errors import InputError

# Static vectors: how a word's pieces (rows of word_embeddings) pool into one vector.
Pool = Literal["mean", "first", "last", "sum"]
POOLS: tuple[str, ...] = get_args(Pool)
SHOWN_NUMBERS = 8  # a vector's numbers a table shows (`vector`, `layers --vectors`); --json (and `vector --all`): all

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
# Where the model runs for a corpus: this process, or a Ray cluster's actors (contextual/engines.py).
Engine = Literal["local", "ray"]
ENGINES: tuple[str, ...] = get_args(Engine)
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
# The most (padded) tokens in one forward pass: the fastest measured on the CPU (less padding, activations that stay in
# cache: docs/benchmarks.md, "Contextual vectors: throughput"); it also bounds memory.
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

    The CLI's help and the API's description are the one `help` text; both use the same choices and default. A
    command whose default differs declares its own (`K_OPTION.but(default=5)`), here, beside the shared one.
    """

    name: str  # the request field and the Python name of the CLI's value, e.g. "remove_top" (its flag: --remove-top)
    help: str  # the CLI's --help line and the API's field description
    default: Any = None  # what applies when it is not given (a tuple for a list option)
    choices: tuple[Any, ...] | None = None  # one of the vocabularies above, or None: any value of `kind`
    kind: type = str  # str, int or float; bool: a switch, off unless given
    flag: str | None = None  # the CLI's spelling: None for "--" + name (dashes for underscores), "" for an argument
    metavar: str | None = None  # the CLI's placeholder (None: click's own)
    many: bool = False  # several values: a list field; on the CLI several values after the flag (an argument: any)
    required: bool = False  # the API field has no default (a CLI argument is required unless `many`)
    short: str | None = None  # the CLI's one-letter spelling beside the long one, e.g. "-o"

    @property
    def flags(self) -> tuple[str, ...]:
        """The CLI's option strings; () for a positional argument."""
        if self.flag == "":
            return ()
        long = self.flag or "--" + self.name.replace("_", "-")
        return (long, self.short) if self.short else (long,)

    def but(self, **changes: Any) -> Option:
        """This option with `changes` (a help text of its own, say): the same name, so the same flag and field."""
        return replace(self, **changes)


# neighbors and similarity: the space searched, the queries, which rows may answer.
METRIC_OPTION = Option("metric", "similarity measure", "cosine", METRICS)
CENTER_OPTION = Option("center", "subtract the mean row first (anisotropy correction)", False, kind=bool)
REMOVE_TOP_OPTION = Option("remove_top", "also remove the top D principal directions", 0, kind=int, metavar="D")
POOL_OPTION = Option("pool", "for words: how to pool their pieces", "mean", POOLS)
QUERIES_OPTION = Option(
    "queries",
    "tokens or words (token ids with the id option); one result each",
    (),
    flag="",
    metavar="QUERY",
    many=True,
)
# extend-report: a short list beside each new word, for several strategies side by side.
K_OPTION = Option("k", "how many neighbours", 10, kind=int, flag="-k")
REPORT_K_OPTION = K_OPTION.but(default=5)  # extend-report: a short list beside each new word
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
WORD_POOL_OPTION = Option("pool", "how a word's pieces pool", "mean", WORD_POOLS)

# Projections (plot tokens / contextual / trajectory, and the page's projections).
METHOD_OPTION = Option("method", "projection method", "pca", PROJECTION_METHODS)
DIMS_OPTION = Option("dims", "2 or 3 dimensions", 2, DIMS, kind=int)
SEED_OPTION = Option("seed", "seed of t-SNE and UMAP", 0, kind=int)
PRETRAIN_SEED_OPTION = SEED_OPTION.but(default=None, help="seed of weights, data order, masks and dropout (default 0)")
LAYER_OPTION = Option("layer", "0 = embedding output, -1 = the last", -1, kind=int)
# The last stored layer of an index is its last layer only when it stored every layer: there the default is None,
# resolved by the library (search, senses); same-sense reads every layer unless one is chosen.
INDEX_LAYER_OPTION = LAYER_OPTION.but(
    default=None, help="0 = embedding output, -1 = the last (default: the index's last)"
)
LEVEL_OPTION = Option("level", "a point per word or per token", "word", LEVELS)
LABEL_OPTION = Option("label", "a label for every point (metadata column 'label')")

# Where a command writes, and whether it may replace what is there (each command says what it writes: its own help).
OUT_OPTION = Option("out", "where to write the result", short="-o")
OVERWRITE_OPTION = Option("overwrite", "replace what --out names if it exists", False, kind=bool)
NO_PROGRESS_OPTION = Option("no_progress", "no progress on standard error", False, kind=bool)
CACHE_DIR_OPTION = Option("cache_dir", "where the normalised matrix is cached (default: ~/.cache/bertlens)")
THREADS_OPTION = Option("threads", "torch CPU threads for this run", kind=int)
WORD2VEC_THREADS_OPTION = THREADS_OPTION.but(default=1, help="with --word2vec: its worker threads")  # watch

# Running the model (contextual commands, plots of contextual vectors, search, senses, same-sense, evaluate wic).
DEVICE_OPTION = Option("device", "where the model runs", "cpu", DEVICES)
PRECISION_OPTION = Option(
    "precision",
    "float32, bfloat16, float16 (CUDA only), or auto: bfloat16 where this machine computes it natively "
    "(float16 on CUDA GPUs without bfloat16) and it keeps cosine >= 0.999 with float32 in every layer, else float32 "
    "(the choice is said on standard error; `bertlens precision` tells why)",
    "float32",
    PRECISIONS,
    metavar="{" + ",".join(PRECISIONS) + "}",
)
BF16_OPTION = Option("bf16", "the same as --precision bfloat16", False, kind=bool)
BATCH_TOKENS_OPTION = Option("batch_tokens", "most padded tokens per forward pass", BATCH_TOKENS, kind=int)
RUN_OPTIONS = (DEVICE_OPTION, PRECISION_OPTION, BF16_OPTION, BATCH_TOKENS_OPTION)
TRAIN_PRECISION_OPTION = Option(
    "precision", "autocast while pretraining (default auto: bfloat16 where the hardware has it)", None, TRAIN_PRECISIONS
)

# Where a corpus's model runs: this process, or a Ray cluster (distill, extract, index).
ENGINE_OPTION = Option("engine", "where the model runs", "local", ENGINES)
ADDRESS_OPTION = Option("address", "with --engine ray: the cluster (auto, host:port); default a local one")
ACTORS_OPTION = Option("actors", "with --engine ray: model actors (default 2)", kind=int)
CPUS_PER_ACTOR_OPTION = Option(
    "cpus_per_actor", "with --engine ray: CPUs (torch threads) per actor (default 1)", kind=float
)
GPUS_PER_ACTOR_OPTION = Option(
    "gpus_per_actor", "with --engine ray: GPUs per actor (default 0: CPU actors)", kind=float
)
ENGINE_OPTIONS = (ENGINE_OPTION, ADDRESS_OPTION, ACTORS_OPTION, CPUS_PER_ACTOR_OPTION, GPUS_PER_ACTOR_OPTION)

# Layers: 0 is the embedding output, -1 the last. The default is the last layer everywhere.
LAYERS_OPTION = Option("layers", "layers combined (-1: the last)", (-1,), kind=int, many=True)
COMBINE_OPTION = Option("combine", "how layers combine", "mean", COMBINES)

# A corpus read in part. Most commands read all of it; those that measure or show a sample read a bounded one.
MAX_TEXTS_OPTION = Option("max_texts", "read only the first N texts of the corpus", kind=int, metavar="N")
CONTEXT_MAX_TEXTS_OPTION = MAX_TEXTS_OPTION.but(default=2000)  # context --corpus, plot contextuality
PLOT_MAX_TEXTS_OPTION = MAX_TEXTS_OPTION.but(default=1000)  # plot contextual --corpus: a readable picture
REPORT_MAX_TEXTS_OPTION = MAX_TEXTS_OPTION.but(default=200)  # extend-report --texts
MAX_CONTEXTS_OPTION = Option("max_contexts", "contexts per word", 50, kind=int)
CORPUS_OPTION = Option("corpus", "instead of texts: a text file or folder", metavar="PATH")
RESUME_OPTION = Option("resume", "continue an interrupted run in --out", False, kind=bool)
VERIFY_OPTION = Option("verify", "check every byte of what the command wrote against its record", False, kind=bool)
NO_CHECK_OPTION = Option("no_check", "skip the check against the model (no torch needed)", False, kind=bool)

# One spelling, several meanings: each command's own, declared here so that every shared spelling is declared once.
ANALOGY_METHOD_OPTION = Option("method", "analogy objective", "3cosadd", ANALOGY_METHODS)
PROJECTION_METRIC_OPTION = Option("metric", "t-SNE/UMAP distance (PCA: euclidean)", "cosine", PROJECTION_METRICS)
PROJECTION_NEIGHBORS_OPTION = Option("neighbors", "UMAP n_neighbors (default min(15, n - 1))", kind=int)
EXTEND_NEIGHBORS_OPTION = Option("neighbors", "neighbors: old tokens mixed (10)", kind=int, metavar="K")
WORDS_FILE_OPTION = Option("words_file", "a file with one new word per line", metavar="FILE")  # extend, extend-report
ROWS_OPTION = Option("rows", "rows strategy: a vector per word (word2vec text format)", metavar="FILE")  # the same
TEMPERATURE_OPTION = Option("temperature", "neighbors: weights are softmax(cosine / T)", 0.1, kind=float)  # the same
WORD_VECTORS_OPTION = Option("words", "one vector per word (pieces pooled) instead of tokens", False, kind=bool)
WORD_LIST_OPTION = Option("words", "the words", (), metavar="WORD", many=True)
NEW_WORDS_OPTION = WORD_LIST_OPTION.but(
    help="the new words themselves (a file of words: --words-file)", short="-w", metavar="W"
)
SENSE_WORDS_OPTION = Option("words", "co-occurring words shown per sense", 8, kind=int)
MAX_OCCURRENCES_OPTION = Option(
    "max_occurrences", "the most occurrences clustered (a seeded sample of more)", 500, kind=int
)
TYPICAL_OPTION = Option("typical", "sentences shown per sense, nearest its centre", 3, kind=int)
EXPORT_FORMAT_OPTION = Option(
    "format",
    "npy + vocab.txt; safetensors + vocab.txt; word2vec text; TensorBoard projector (TSVs + config)",
    "word2vec",
    EXPORT_FORMATS,
    short="-f",
)
SHARD_FORMAT_OPTION = Option("format", "shard format (parquet: pyarrow)", "npy", SHARD_FORMATS)
COUNT_OPTION = Option("count", "only the first N rows", kind=int)
WORD_SWITCH_OPTION = Option("word", "always tokenize each query and pool its pieces", False, kind=bool)
TARGET_WORD_OPTION = Option("word", "the target word of a plain sentence (its first whole-word occurrence)")
TOKEN_SWITCH_OPTION = Option("token", "each query must be a single vocabulary token", False, kind=bool)  # vector
ALL_OPTION = Option("all", "every one, not the first few", False, kind=bool)  # vector (numbers), contextuality (words)
SHOW_TOKEN_OPTION = Option("token", "one token's nearest tokens in both spaces", metavar="TOKEN")  # diff
PLOT_OPTION = Option("plot", "draw the result: .png, .svg or .html", metavar="FILE")  # senses, diff
# diff (the command and the page's Compare view).
TOP_OPTION = Option("top", "the tokens that moved most, listed with their neighbours", 20, kind=int, metavar="N")
CONTEXTUAL_OPTION = Option("contextual", "the layers too: CKA of every layer pair, words' neighbours", False, kind=bool)
LAYER_B_OPTION = Option(
    "layer_b", "with --contextual: B's layer, where it differs from --layer", kind=int, metavar="LAYER"
)
OCCURRENCES_OPTION = Option(
    "occurrences", "with --contextual: word occurrences compared", 10_000, kind=int, metavar="N"
)

# search by example (the command and the page's Corpus view).
ANY_WORD_OPTION = Option("any_word", "occurrences of other words used like it", False, kind=bool)
EXCLUDE_SAME_TEXT_OPTION = Option("exclude_same_text", "no hits from the example's own text", False, kind=bool)
# pretrain trains its own vocabulary on the run's corpus, usually small: 8000 pieces.
VOCAB_SIZE_OPTION = Option("vocab_size", "pieces, special tokens included", 30522, kind=int)
PRETRAIN_VOCAB_SIZE_OPTION = VOCAB_SIZE_OPTION.but(  # None unless given: the config's (a --resume run's own)
    default=None,
    help="without --tokenizer: pieces of the WordPiece vocabulary the run trains on its corpus (default 8000)",
)
STRATEGY_OPTION = Option("init", "how the new rows start", "pieces", STRATEGIES)
# extend-report compares several strategies: by default the five that need nothing more than the model.
REPORTED_STRATEGIES = ("random", "mean", "mean-resizing", "pieces", "neighbors")
STRATEGIES_OPTION = STRATEGY_OPTION.but(
    help="strategies to compare",
    default=REPORTED_STRATEGIES,
    many=True,
    metavar="STRATEGY",
)


def filter_flags(source: object) -> dict[str, bool]:
    """The token filter options (`FILTER_OPTIONS`) as `source` gives them: a command line's parsed arguments or a web
    request, by the declared names; `TokenFilter.from_flags(**filter_flags(source))` is the filter they choose."""
    return {option.name: bool(getattr(source, option.name, option.default)) for option in FILTER_OPTIONS}
