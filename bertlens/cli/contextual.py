"""Commands on contextual vectors: layers, context, distill, extract."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..core.options import (
    ALL_OPTION,
    COMBINE_OPTION,
    CONTEXT_MAX_TEXTS_OPTION,
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
    Engine,
    Level,
    SentencePool,
    ShardFormat,
    WordPool,
)
from ..core.results import ResultList
from .common import Call, command, text_argument
from .params import Many, argument, option, progress_flag, run_flags

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

F = TypeVar("F", bound=Callable[..., Any])
CORPUS_HELP = "a text file or folder (plain text or WikiExtractor <doc> files)"


@command("layers", "contextual vectors of a text's tokens or words, every layer")
@argument(
    "texts",
    "one or more texts ('-' reads standard input); long texts run in overlapping windows",
    nargs=-1,
    required=True,
    metavar="TEXT...",
)
@option(WORD_VECTORS_OPTION)
@click.option(
    "--sentence", type=click.Choice(SENTENCE_POOLS), help="one vector for the whole text: CLS, or mean/max of tokens"
)
@option(
    LAYERS_OPTION,
    metavar="LAYER...",
    help="layers for --words/--sentence; for tokens with --vectors, the layers shown (there: all by default)",
)
@option(COMBINE_OPTION, help="with --words or --sentence: how --layers combine")
@option(WORD_POOL_OPTION, help=f"with --words: {WORD_POOL_OPTION.help}")
@click.option(
    "--vectors",
    "dims",
    type=int,
    is_flag=False,
    flag_value=SHOWN_NUMBERS,
    metavar="[DIMS]",
    help=f"show the vectors, not only their norms: the first DIMS numbers of each (--vectors alone: {SHOWN_NUMBERS}); "
    "--json gives every vector in full",
)
@option(
    OUT_OPTION.but(short=None),
    metavar="FILE",
    help="write the vectors to FILE.npy (one text) or FILE.npz (one per text)",
)
@option(OVERWRITE_OPTION, help="with --out: replace the file if it exists")
@run_flags()
def layers(
    call: Call,
    texts: tuple[str, ...],
    words: bool,
    sentence: SentencePool | None,
    layers: tuple[int, ...],
    combine: Combine,
    pool: WordPool,
    dims: int | None,
    out: str | None,
    overwrite: bool,
    **run: object,  # the run flags: call.run_options()
) -> Result:
    from ..contextual.states import hidden_states
    from ..contextual.vectors import preview, word_vectors_many
    from ..core.errors import InputError

    if sentence and words:
        raise InputError("--words and --sentence cannot be used together.", "Choose one vector per word or per text.")
    if not words:
        call.applies_only(["pool"], "with --words")
    if not words and not sentence:
        call.applies_only(["combine"], "with --words or --sentence (tokens get every layer)")
        if dims is None:
            call.applies_only(["layers"], "with --words, --sentence or --vectors (tokens get every layer)")
    if texts.count("-") > 1:
        raise InputError("Standard input ('-') can be read only once.", "Give '-' once, and the other texts inline.")
    model, read = call.model(), [text_argument(text) for text in texts]
    vectors: SentenceVectors | WordVectors | tuple[WordVectors, ...] | TokenStates | HiddenStates
    shown: list[int] | None = None  # tokens: every layer, unless --layers names those shown
    if sentence:
        from ..contextual.vectors import sentence_vectors

        vectors = sentence_vectors(
            model, read, method=sentence, layers=list(layers), combine=combine, options=call.run_options()
        )
    elif words:
        many = word_vectors_many(
            model, read, layers=list(layers), combine=combine, pool=pool, options=call.run_options()
        )
        vectors = many[0] if len(many) == 1 else many
    else:
        states = hidden_states(model, read, options=call.run_options())
        vectors = states[0] if len(states) == 1 else states
        shown = list(layers) if call.given("layers") else None
    result: Result = ResultList(vectors) if isinstance(vectors, tuple) else vectors  # several texts' word vectors
    if dims is not None:
        result = preview(vectors, dims, layers=shown)
    if out is None:
        call.applies_only(["overwrite"], "with --out")
        return result
    from ..contextual.vectors import save_vectors

    return ResultList((result, save_vectors(vectors, out, overwrite=overwrite)))


@command("context", "how context moves a word: its vectors across sentences, per layer")
@option(WORD_OPTION)
@option(SENTENCES_OPTION, required=False, metavar="[SENTENCE]...")
@option(
    CORPUS_OPTION,
    help="instead of sentences: Ethayarajh's measures for WORD over a text file or folder ('all' words: --all)",
)
@option(ALL_OPTION, help="with --corpus: measure every word seen in two texts")
@option(CONTEXT_MAX_TEXTS_OPTION, help="with --corpus: sentences read")
@option(MAX_CONTEXTS_OPTION, help=f"with --corpus: {MAX_CONTEXTS_OPTION.help}")
@option(WORD_POOL_OPTION, help=f"with SENTENCEs: {WORD_POOL_OPTION.help}")
@run_flags()
@progress_flag()
def context(
    call: Call,
    word: str,
    sentences: tuple[str, ...],
    corpus: str | None,
    all: bool,
    max_texts: int,
    max_contexts: int,
    pool: WordPool,
    **run: object,  # the run flags and --no-progress: call.run_options(), call.progress
) -> ContextComparison | Contextuality:
    from ..contextual.context import compare_contexts
    from ..core.errors import InputError

    if corpus is None:
        call.applies_only(["all", "max_texts", "max_contexts"], "with --corpus")
        return compare_contexts(call.model(), word, list(sentences), pool=pool, options=call.run_options())
    from itertools import islice

    from ..contextual.contextuality import measure_contextuality
    from ..core.corpus import iter_sentences

    call.applies_only(["pool"], "with SENTENCEs (contextuality averages a word's pieces)")
    if sentences:
        raise InputError("Give either SENTENCEs or --corpus, not both.", "Drop the SENTENCEs to measure a corpus.")
    if max_texts < 2:
        raise InputError(f"--max-texts must be at least 2, got {max_texts}.", "Example: --max-texts 2000.")
    options = call.run_options()
    texts = list(islice(iter_sentences(corpus), max_texts))
    return measure_contextuality(
        call.model(),
        texts,
        words=None if all else [word],
        max_contexts=max_contexts,
        options=options,
        progress=call.progress,
    )


def engine_flags(function: F) -> F:
    """--engine and the Ray engine's flags (see `bertlens.occurrences.ray_engine`); `ray_options` reads them."""
    for declared in reversed(ENGINE_OPTIONS):
        function = option(declared)(function)
    return function


def ray_options(call: Call) -> RayOptions | None:
    """The `RayOptions` of `engine_flags` (None with the local engine, where they are refused)."""
    params = call.ctx.params
    names = ("actors", "cpus_per_actor", "gpus_per_actor")
    if params["engine"] != "ray":
        call.applies_only(["address", *names], "with --engine ray")
        return None
    from ..contextual.engines import RayOptions

    given = {name: params[name] for name in names if params[name] is not None}
    return RayOptions(address=params["address"], **given)


def refuse_beside_verify(call: Call, flags: Sequence[str], needs: str) -> None:
    """Refuse each of `flags` the command line gives beside --verify, --model before the command too."""
    call.applies_only(flags, needs)
    if "--model" in flags and call.model_name is not None:  # given before the command
        raise_applies_only("--model", needs)


def raise_applies_only(flag: str, needs: str) -> None:
    """The error of an option given where it does not apply (as `Call.applies_only` says it)."""
    from ..core.errors import InputError

    raise InputError(f"{flag} applies only {needs}; here it would be ignored.", f"Leave out {flag}.")


@command("distill", "static word vectors averaged from a corpus's contexts (word2vec file)")
@argument("corpus", CORPUS_HELP)
@option(WORD_LIST_OPTION, metavar="WORD...", help="the words to distil")
@click.option("--benchmark", cls=Many, metavar="NAME...", help="distil every word of these benchmarks (and score)")
@option(
    OUT_OPTION.but(short=None),
    metavar="FILE",
    help="the word2vec text file to write (refused if it exists, unless --overwrite)",
)
@option(OVERWRITE_OPTION, help="with --out: replace it if it exists")
@option(LAYERS_OPTION, metavar="LAYER...", help="layers to average")
@option(COMBINE_OPTION)
@option(MAX_CONTEXTS_OPTION)
@option(MAX_TEXTS_OPTION, help="stop after this many sentences of the corpus (default: all)")
@run_flags()
@engine_flags
@progress_flag()
def distill(
    call: Call,
    corpus: str,
    words: tuple[str, ...],
    benchmark: tuple[str, ...],
    out: str | None,
    overwrite: bool,
    layers: tuple[int, ...],
    combine: Combine,
    max_contexts: int,
    max_texts: int | None,
    engine: Engine,
    **run: object,  # the run, Ray and progress flags: call.run_options(), ray_options(call), call.progress
) -> DistilledVectors | ResultList:
    from itertools import islice

    from ..contextual.distill import distill
    from ..core.corpus import iter_sentences
    from ..core.errors import InputError
    from ..similarity.benchmarks import benchmark_words
    from ..similarity.evaluate import evaluate_pairs

    if out is None:
        call.applies_only(["overwrite"], "with --out")
    ray = ray_options(call)
    chosen = list(words) + benchmark_words(list(benchmark))
    if not chosen:
        raise InputError("No words to distil.", "Give --words W1 W2 … or --benchmark wordsim353 men …")
    if max_texts is not None and max_texts < 1:
        raise InputError(f"--max-texts must be at least 1, got {max_texts}.", "Example: --max-texts 10000.")
    texts = iter_sentences(corpus)
    model = call.model()
    result = distill(
        model,
        chosen,
        texts if max_texts is None else islice(texts, max_texts),
        layers=list(layers),
        combine=combine,
        max_contexts=max_contexts,
        out=out,
        overwrite=overwrite,
        options=call.run_options(),
        progress=call.progress,
        engine=engine,
        ray=ray,
    )
    where = "the corpus" if max_texts is None else f"the corpus's first {max_texts} texts"
    scores = [evaluate_pairs(model, name, vectors=result.as_mapping(), vectors_from=where) for name in benchmark]
    return ResultList((result, *scores)) if scores else result


# What writes an extract, refused with --verify (which reads only the extract's files); each is refused when given, its
# default included. --json and --offline apply to every command.
EXTRACT_VERIFY_ALONE = [
    "--out", "--model", "--resume", "--level", "--layers", "--combine", "--pool", "--format", "--shard-texts",
    "--device", "--precision", "--bf16", "--batch-tokens", "--engine", "--address", "--actors", "--cpus-per-actor",
    "--gpus-per-actor", "--no-progress",
]  # fmt: skip


@command("extract", "contextual vectors of a whole corpus to NumPy or Parquet shards")
@argument("corpus", f"{CORPUS_HELP}; with --verify: the extract")
@option(OUT_OPTION, metavar="DIR", help="a new folder for the shards (or one to --resume)")
@option(RESUME_OPTION, help="continue an interrupted extract in --out")
@option(
    VERIFY_OPTION,
    help="check every byte of the extract (bertlens extract OUT --verify) against its manifest: exit 0 when whole",
)
@option(LEVEL_OPTION, help="a row per word or per token")
@option(LAYERS_OPTION, metavar="LAYER...", help="layers combined per row")
@option(COMBINE_OPTION)
@option(WORD_POOL_OPTION, help=f"with --level word: {WORD_POOL_OPTION.help}")
@option(SHARD_FORMAT_OPTION)
@click.option("--shard-texts", type=int, default=1000, show_default=True, help="texts per shard (bounds memory)")
@run_flags()
@engine_flags
@progress_flag()
def extract(
    call: Call,
    corpus: str,
    out: str | None,
    resume: bool,
    verify: bool,
    level: Level,
    layers: tuple[int, ...],
    combine: Combine,
    pool: WordPool,
    format: ShardFormat,
    shard_texts: int,
    engine: Engine,
    **run: object,  # the run, Ray and progress flags: call.run_options(), ray_options(call), call.progress
) -> ExtractResult | IntegrityReport:
    from ..contextual.extract import ExtractOptions, extract
    from ..core.errors import InputError

    if verify:
        from ..contextual.shards import verify_extract
        from ..core.integrity import damage_error

        refuse_beside_verify(call, EXTRACT_VERIFY_ALONE, "to writing an extract, not with --verify")
        report = verify_extract(corpus)
        if not report.whole:
            raise damage_error(report)
        return report
    if out is None:
        raise InputError("bertlens extract needs --out: a new folder for the shards.", "Give --out DIR.")
    if level == "token":
        call.applies_only(["pool"], "with --level word (a token row has no pieces to pool)")
    ray = ray_options(call)
    options = ExtractOptions(
        level=level, layers=layers, combine=combine, pool=pool, format=format, shard_texts=shard_texts
    )
    return extract(
        call.model(),
        corpus,
        out,
        options=options,
        run=call.run_options(),
        resume=resume,
        progress=call.progress,
        engine=engine,
        ray=ray,
    )
