"""Commands on contextual vectors: layers, context, distill, extract."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..core.options import (
    ALL_OPTION,
    COMBINE_OPTION,
    CORPUS_OPTION,
    ENGINE_OPTIONS,
    LAYERS_OPTION,
    LEVEL_OPTION,
    MAX_CONTEXTS_OPTION,
    MAX_TEXTS_OPTION,
    OUT_OPTION,
    OVERWRITE_OPTION,
    RESUME_OPTION,
    SENTENCE_POOLS,
    SENTENCES_OPTION,
    SHARD_FORMAT_OPTION,
    SHOWN_NUMBERS,
    VERIFY_OPTION,
    WORD_LIST_OPTION,
    WORD_OPTION,
    WORD_POOL_OPTION,
    WORD_VECTORS_OPTION,
    Combine,
)
from ..core.results import ResultList
from .common import (
    Commands,
    FlagParser,
    add_option,
    add_progress,
    load,
    only_with,
    run_options,
    run_parser,
    show_progress,
    text_argument,
    value_of,
)

if TYPE_CHECKING:
    from ..contextual.context import ContextComparison
    from ..contextual.contextuality import Contextuality
    from ..contextual.distill import DistilledVectors
    from ..contextual.engines import RayOptions
    from ..contextual.extract import ExtractResult
    from ..contextual.states import HiddenStates, TokenStates
    from ..contextual.vectors import SentenceVectors, WordVectors
    from ..core.integrity import IntegrityReport
    from ..core.results import Result


def register(commands: Commands, common: FlagParser) -> None:
    """Add the contextual-vector commands."""
    parents = [common, run_parser()]  # every one runs the model
    _add_layers(commands, parents)
    _add_context(commands, parents)
    _add_distill(commands, parents)
    _add_extract(commands, parents)


def _add_layers(commands: Commands, parents: list[FlagParser]) -> None:
    """`layers TEXT…`: a text's contextual vectors, of its tokens (every layer), its words or the whole text."""
    cmd = commands.add_parser(
        "layers", parents=parents, help="contextual vectors of a text's tokens or words, every layer"
    )
    cmd.add_argument(
        "texts",
        nargs="+",
        metavar="TEXT",
        help="one or more texts ('-' reads standard input); long texts run in overlapping windows",
    )
    add_option(cmd, WORD_VECTORS_OPTION)
    cmd.add_argument(
        "--sentence", choices=SENTENCE_POOLS, help="one vector for the whole text: CLS, or mean/max of tokens"
    )
    add_option(
        cmd,
        LAYERS_OPTION,
        unset=True,  # tokens get every layer: --layers is refused there, unless --vectors shows some
        help="layers for --words/--sentence (default: -1, the last); for tokens with --vectors, the layers shown",
    )
    add_option(cmd, COMBINE_OPTION, unset=True, help="how --layers combine (default mean)")
    add_option(cmd, WORD_POOL_OPTION, when="with --words")
    cmd.add_argument(
        "--vectors",
        nargs="?",
        type=int,
        const=SHOWN_NUMBERS,
        metavar="DIMS",
        help=f"show the vectors, not only their norms: the first DIMS numbers of each (default {SHOWN_NUMBERS}); "
        "--json gives every vector in full",
    )
    add_option(
        cmd,
        OUT_OPTION,
        short=False,
        metavar="FILE",
        help="write the vectors to FILE.npy (one text) or FILE.npz (one per text)",
    )
    add_option(cmd, OVERWRITE_OPTION, help="with --out: replace the file if it exists")
    cmd.set_defaults(run=_run_layers)


def _add_context(commands: Commands, parents: list[FlagParser]) -> None:
    """`context --word W SENTENCE…`: a word's vectors across sentences, or over a corpus (Ethayarajh's measures)."""
    cmd = commands.add_parser(
        "context", parents=parents, help="how context moves a word: its vectors across sentences, per layer"
    )
    add_option(cmd, WORD_OPTION)
    add_option(cmd, SENTENCES_OPTION)
    add_option(
        cmd,
        CORPUS_OPTION,
        help="instead of sentences: Ethayarajh's measures for WORD over a text file or folder ('all' words: --all)",
    )
    add_option(cmd, ALL_OPTION, help="with --corpus: measure every word seen in two texts")
    add_option(cmd, MAX_TEXTS_OPTION, unset=True, help="with --corpus: sentences read (default 2000)")
    add_option(cmd, MAX_CONTEXTS_OPTION, unset=True, when="with --corpus")
    add_option(cmd, WORD_POOL_OPTION, when="with SENTENCEs")
    add_progress(cmd)
    cmd.set_defaults(run=_run_context)


def _add_distill(commands: Commands, parents: list[FlagParser]) -> None:
    """`distill CORPUS --words …`: static word vectors averaged from a corpus's contexts."""
    cmd = commands.add_parser(
        "distill", parents=parents, help="static word vectors averaged from a corpus's contexts (word2vec file)"
    )
    cmd.add_argument("corpus", help="a text file or folder (plain text or WikiExtractor <doc> files)")
    add_option(cmd, WORD_LIST_OPTION, help="the words to distil")
    cmd.add_argument(
        "--benchmark", nargs="+", default=[], metavar="NAME", help="distil every word of these benchmarks (and score)"
    )
    add_option(
        cmd, OUT_OPTION, short=False, help="the word2vec text file to write (refused if it exists, unless --overwrite)"
    )
    add_option(cmd, OVERWRITE_OPTION, help="with --out: replace it if it exists")
    add_option(cmd, LAYERS_OPTION, help="layers to average (default: -1)")
    add_option(cmd, COMBINE_OPTION)
    add_option(cmd, MAX_CONTEXTS_OPTION)
    add_option(cmd, MAX_TEXTS_OPTION, help="stop after this many sentences of the corpus")
    add_engine(cmd)
    add_progress(cmd)
    cmd.set_defaults(run=_run_distill)


def _add_extract(commands: Commands, parents: list[FlagParser]) -> None:
    """`extract CORPUS --out DIR`: a corpus's contextual vectors to shards (or `extract OUT --verify`)."""
    cmd = commands.add_parser(
        "extract", parents=parents, help="contextual vectors of a whole corpus to NumPy or Parquet shards"
    )
    cmd.add_argument(
        "corpus", help="a text file or folder (plain text or WikiExtractor <doc> files); with --verify: the extract"
    )
    add_option(cmd, OUT_OPTION, help="a new folder for the shards (or one to --resume)")
    add_option(cmd, RESUME_OPTION, help="continue an interrupted extract in --out")
    add_option(
        cmd,
        VERIFY_OPTION,
        help="check every byte of the extract (bertlens extract OUT --verify) against its manifest: exit 0 when whole",
    )
    add_option(cmd, LEVEL_OPTION, help="a row per word or per token")
    add_option(cmd, LAYERS_OPTION, help="layers combined per row (default: -1)")
    add_option(cmd, COMBINE_OPTION)
    add_option(cmd, WORD_POOL_OPTION, when="with --level word")
    add_option(cmd, SHARD_FORMAT_OPTION)
    cmd.add_argument("--shard-texts", type=int, default=1000, help="texts per shard (bounds memory)")
    add_engine(cmd)
    add_progress(cmd)
    cmd.set_defaults(run=_run_extract)


def _run_layers(args: argparse.Namespace) -> Result:
    from ..contextual.states import hidden_states
    from ..contextual.vectors import preview, word_vectors_many
    from ..core.errors import InputError

    if args.sentence and args.words:
        raise InputError("--words and --sentence cannot be used together.", "Choose one vector per word or per text.")
    if not args.words:
        only_with(args, ["--pool"], "with --words")
    if not args.words and not args.sentence:
        only_with(args, ["--combine"], "with --words or --sentence (tokens get every layer)")
        if args.vectors is None:
            only_with(args, ["--layers"], "with --words, --sentence or --vectors (tokens get every layer)")
    if args.texts.count("-") > 1:
        raise InputError("Standard input ('-') can be read only once.", "Give '-' once, and the other texts inline.")
    layers = list(value_of(args, LAYERS_OPTION))
    combine: Combine = value_of(args, COMBINE_OPTION)
    model, texts = load(args), [text_argument(text) for text in args.texts]
    vectors: SentenceVectors | WordVectors | tuple[WordVectors, ...] | TokenStates | HiddenStates
    if args.sentence:
        from ..contextual.vectors import sentence_vectors

        vectors = sentence_vectors(
            model, texts, method=args.sentence, layers=layers, combine=combine, options=run_options(args)
        )
    elif args.words:
        many = word_vectors_many(
            model,
            texts,
            layers=layers,
            combine=combine,
            pool=value_of(args, WORD_POOL_OPTION),
            options=run_options(args),
        )
        vectors = many[0] if len(many) == 1 else many
    else:
        states = hidden_states(model, texts, options=run_options(args))
        vectors = states[0] if len(states) == 1 else states
        layers = args.layers
    result: Result = ResultList(vectors) if isinstance(vectors, tuple) else vectors  # several texts' word vectors
    if args.vectors is not None:
        result = preview(vectors, args.vectors, layers=None if args.sentence or args.words else layers)
    if args.out is None:
        only_with(args, ["--overwrite"], "with --out")
        return result
    from ..contextual.vectors import save_vectors

    return ResultList((result, save_vectors(vectors, args.out, overwrite=args.overwrite)))


def _run_context(args: argparse.Namespace) -> ContextComparison | Contextuality:
    from ..contextual.context import compare_contexts
    from ..core.errors import InputError

    if args.corpus is None:
        only_with(args, ["--all", "--max-texts", "--max-contexts"], "with --corpus")
        return compare_contexts(
            load(args), args.word, args.sentences, pool=value_of(args, WORD_POOL_OPTION), options=run_options(args)
        )
    from itertools import islice

    from ..contextual.contextuality import measure_contextuality
    from ..core.corpus import iter_sentences

    only_with(args, ["--pool"], "with SENTENCEs (contextuality averages a word's pieces)")
    if args.sentences:
        raise InputError("Give either SENTENCEs or --corpus, not both.", "Drop the SENTENCEs to measure a corpus.")
    max_texts = value_of(args, MAX_TEXTS_OPTION, "context")
    if max_texts < 2:
        raise InputError(f"--max-texts must be at least 2, got {max_texts}.", "Example: --max-texts 2000.")
    options = run_options(args)
    texts = list(islice(iter_sentences(args.corpus), max_texts))
    return measure_contextuality(
        load(args),
        texts,
        words=None if args.all else [args.word],
        max_contexts=value_of(args, MAX_CONTEXTS_OPTION),
        options=options,
        progress=show_progress(args),
    )


def add_engine(cmd: argparse.ArgumentParser) -> None:
    """--engine and the Ray engine's flags (see `bertlens.occurrences.ray_engine`)."""
    for option in ENGINE_OPTIONS:
        add_option(cmd, option)


def ray_options(args: argparse.Namespace) -> RayOptions | None:
    """The `RayOptions` of `add_engine`'s flags (None with the local engine, where they are refused)."""
    flags = {"actors": "--actors", "cpus_per_actor": "--cpus-per-actor", "gpus_per_actor": "--gpus-per-actor"}
    if args.engine != "ray":
        only_with(args, ["--address", *flags.values()], "with --engine ray")
        return None
    from ..contextual.engines import RayOptions

    given = {name: getattr(args, name) for name in flags if getattr(args, name) is not None}
    return RayOptions(address=args.address, **given)


def _run_distill(args: argparse.Namespace) -> DistilledVectors | ResultList:
    from itertools import islice

    from ..contextual.distill import distill
    from ..core.corpus import iter_sentences
    from ..core.errors import InputError
    from ..core.results import ResultList
    from ..similarity.benchmarks import benchmark_words
    from ..similarity.evaluate import evaluate_pairs

    if args.out is None:
        only_with(args, ["--overwrite"], "with --out")
    ray = ray_options(args)
    words = list(args.words) + benchmark_words(args.benchmark)
    if not words:
        raise InputError("No words to distil.", "Give --words W1 W2 … or --benchmark wordsim353 men …")
    if args.max_texts is not None and args.max_texts < 1:
        raise InputError(f"--max-texts must be at least 1, got {args.max_texts}.", "Example: --max-texts 10000.")
    texts = iter_sentences(args.corpus)
    model = load(args)
    result = distill(
        model,
        words,
        texts if args.max_texts is None else islice(texts, args.max_texts),
        layers=args.layers,
        combine=args.combine,
        max_contexts=args.max_contexts,
        out=args.out,
        overwrite=args.overwrite,
        options=run_options(args),
        progress=show_progress(args),
        engine=args.engine,
        ray=ray,
    )
    where = "the corpus" if args.max_texts is None else f"the corpus's first {args.max_texts} texts"
    scores = [evaluate_pairs(model, name, vectors=result.as_mapping(), vectors_from=where) for name in args.benchmark]
    return ResultList((result, *scores)) if scores else result


# What writes an extract, refused with --verify (which reads only the extract's files); each is refused when given, its
# default included. --json and --offline apply to every command.
EXTRACT_VERIFY_ALONE = [
    "--out", "--model", "--resume", "--level", "--layers", "--combine", "--pool", "--format", "--shard-texts",
    "--device", "--precision", "--bf16", "--batch-tokens", "--engine", "--address", "--actors", "--cpus-per-actor",
    "--gpus-per-actor", "--no-progress",
]  # fmt: skip


def _run_extract(args: argparse.Namespace) -> ExtractResult | IntegrityReport:
    from ..contextual.extract import ExtractOptions, extract
    from ..core.errors import InputError

    if args.verify:
        from ..contextual.shards import verify_extract
        from ..core.integrity import damage_error

        only_with(args, EXTRACT_VERIFY_ALONE, "to writing an extract, not with --verify")
        report = verify_extract(args.corpus)
        if not report.whole:
            raise damage_error(report)
        return report
    if args.out is None:
        raise InputError("bertlens extract needs --out: a new folder for the shards.", "Give --out DIR.")
    if args.level == "token":
        only_with(args, ["--pool"], "with --level word (a token row has no pieces to pool)")
    ray = ray_options(args)
    options = ExtractOptions(
        level=args.level,
        layers=tuple(args.layers),
        combine=args.combine,
        pool=value_of(args, WORD_POOL_OPTION),
        format=args.format,
        shard_texts=args.shard_texts,
    )
    return extract(
        load(args),
        args.corpus,
        args.out,
        options=options,
        run=run_options(args),
        resume=args.resume,
        progress=show_progress(args),
        engine=args.engine,
        ray=ray,
    )
