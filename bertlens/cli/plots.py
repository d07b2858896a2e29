"""`bertlens plot KIND …`: compute one result (projection, trajectory, …) and draw it to PNG, SVG or HTML."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ..core.options import (
    CONTEXT_MAX_TEXTS_OPTION,
    CORPUS_OPTION,
    COUNT_OPTION,
    LABEL_OPTION,
    LAYER_OPTION,
    LEVEL_OPTION,
    MAX_CONTEXTS_OPTION,
    NO_CHECK_OPTION,
    PAIR_OPTION,
    PLOT_MAX_TEXTS_OPTION,
    SENTENCES_OPTION,
    TRAJECTORY_SENTENCES_OPTION,
    WORD_LIST_OPTION,
    WORD_OPTION,
    WORD_POOL_OPTION,
    Dims,
    Level,
    ProjectionMethod,
    ProjectionMetric,
    WordPool,
)
from .common import SHARED, Call, command, text_argument
from .drawing import check_out, draw_flags, finish, point_flags, projection_flags, projection_settings
from .params import argument, option, run_flags, shared_flags

if TYPE_CHECKING:
    from ..plots.render import PlotResult


class Kinds(click.Group):
    """The plot kinds, listed in the order they were added, each with its whole line of help."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Kinds"):
            formatter.write_dl([(name, self.commands[name].short_help or "") for name in self.commands])


@click.group(
    "plot",
    cls=Kinds,
    short_help="pictures: projections of tokens or contextual vectors, a word's trajectory, positions, the embedding "
    "layer, per-layer curves (PNG, SVG, HTML)",
    help="Compute a result and draw it. Without --out only the data is printed (--json: as JSON).",
    subcommand_metavar="KIND [ARGS]...",
)
@shared_flags
def plot(**shared: Any) -> None:
    """`bertlens plot --model M KIND`: the shared options given before the kind apply to it, as those given before
    `plot` (`Call.shared` reads the root's), unless the kind gives its own."""
    root = click.get_current_context().find_root()
    for name in SHARED:
        if shared[name]:
            root.params[name] = shared[name]


@command(
    "tokens",
    "rows of the input matrix for tokens, words (pieces averaged) or ids; the first --count whole words (coloured by "
    "theme); or, given neither, 168 common words in 12 groups (numbers, months, colours, …)",
)
@argument(
    "tokens",
    "tokens or words, e.g. king queen man woman (none: 168 common words in 12 groups, coloured by group)",
    nargs=-1,
    required=False,
    metavar="[TOKEN]...",
)
@option(
    COUNT_OPTION,
    help="instead of TOKENs: the first COUNT whole-word tokens of the vocabulary, coloured by theme (clusters named by "
    "their central words)",
)
@click.option("--ids", is_flag=True, help="the TOKENs are token ids")
@option(LABEL_OPTION)
@draw_flags
@projection_flags
@point_flags
def tokens(
    call: Call,
    tokens: tuple[str, ...],
    count: int | None,
    ids: bool,
    label: str | None,
    method: ProjectionMethod,
    dims: Dims,
    seed: int,
    perplexity: float | None,
    neighbors: int | None,
    metric: ProjectionMetric,
    **drawing: Any,
) -> PlotResult:
    from ..core.errors import InputError
    from ..views.tokens import project_tokens

    check_out(call)
    settings = projection_settings(call, method, perplexity, neighbors, metric)
    chosen: list[str | int] | None = None
    if not tokens:
        call.applies_only(["--ids"], "with TOKENs")
    if tokens:
        if count is not None:
            raise InputError("Give TOKENs or --count, not both.", "Example: bertlens plot tokens king queen man woman")
        chosen = list(tokens)
        if ids:
            try:
                chosen = [int(t) for t in tokens]
            except ValueError:
                raise InputError(
                    "--ids expects integer token ids.", "Example: bertlens plot tokens --ids 3899 4937 2"
                ) from None
    elif count is None:  # the teaching default: common words in groups a reader knows, every one labelled
        from dataclasses import replace

        from ..views.groups import project_word_groups

        call.applies_only(["--label"], "with TOKENs or --count")
        data = project_word_groups(call.model(), None, method, dims, seed, settings=settings, progress=call.progress)
        return finish(call, "tokens", replace(data, featured=tuple(range(len(data)))))
    data = project_tokens(
        call.model(), chosen, count, method, dims, seed, label, settings=settings, progress=call.progress
    )
    return finish(call, "tokens", data)


@command("contextual", "every word's (or token's) contextual vector at one layer, over texts or a corpus")
@argument(
    "texts", "texts ('-' reads one text per line of standard input)", nargs=-1, required=False, metavar="[TEXT]..."
)
@option(CORPUS_OPTION, help="instead of TEXTs: a text file or folder (one text per line)")
@option(PLOT_MAX_TEXTS_OPTION, help="with --corpus: texts read")
@option(LAYER_OPTION)
@option(LEVEL_OPTION)
@click.option("--special", is_flag=True, help="with --level token: keep [CLS], [SEP] and the like")
@draw_flags
@projection_flags
@point_flags
@run_flags()
def contextual(
    call: Call,
    texts: tuple[str, ...],
    corpus: str | None,
    max_texts: int,
    layer: int,
    level: Level,
    special: bool,
    method: ProjectionMethod,
    dims: Dims,
    seed: int,
    perplexity: float | None,
    neighbors: int | None,
    metric: ProjectionMetric,
    **drawing: Any,
) -> PlotResult:
    from ..core.errors import InputError
    from ..views.tokens import project_contextual

    check_out(call)
    settings = projection_settings(call, method, perplexity, neighbors, metric)
    if level != "token":
        call.applies_only(["--special"], "with --level token")
    if corpus is not None:
        if texts:
            raise InputError("Give either TEXTs or --corpus, not both.", "Drop the TEXTs to plot the corpus.")
        if max_texts < 1:
            raise InputError(f"--max-texts must be positive, got {max_texts}.", "Example: --max-texts 1000.")
        from itertools import islice

        from ..core.corpus import iter_sentences

        chosen = list(islice(iter_sentences(corpus), max_texts))
    elif texts == ("-",):
        call.applies_only(["--max-texts"], "with --corpus")
        chosen = [line for line in text_argument("-").splitlines() if line.strip()]
    else:
        call.applies_only(["--max-texts"], "with --corpus")
        chosen = list(texts)
    if not chosen:
        raise InputError("No texts to plot.", "Give TEXTs, '-' for standard input, or --corpus PATH.")
    data = project_contextual(
        call.model(),
        chosen,
        layer,
        level,
        method,
        dims,
        seed,
        special=special,
        options=call.run_options(),
        settings=settings,
        progress=call.progress,
    )
    return finish(call, "contextual", data)


@command("trajectory", "a word's vector at every layer in each sentence, one projection fitted over all layers")
@option(WORD_OPTION)
@option(TRAJECTORY_SENTENCES_OPTION)
@draw_flags
@projection_flags
@run_flags()
def trajectory(
    call: Call,
    word: str,
    sentences: tuple[str, ...],
    method: ProjectionMethod,
    dims: Dims,
    seed: int,
    perplexity: float | None,
    neighbors: int | None,
    metric: ProjectionMetric,
    **drawing: Any,
) -> PlotResult:
    from ..views.trajectory import trajectory

    check_out(call)
    settings = projection_settings(call, method, perplexity, neighbors, metric)
    data = trajectory(
        call.model(),
        word,
        list(sentences),
        method,
        dims,
        seed,
        call.run_options(),
        settings=settings,
        progress=call.progress,
    )
    return finish(call, "trajectory", data)


@command("positions", "cosine of every pair of position rows; token-type rows compared")
@click.option("--limit", type=int, help="only the first LIMIT position rows (default: all)")
@draw_flags
def positions(call: Call, limit: int | None, **drawing: Any) -> PlotResult:
    from ..embeddings.positions import position_similarity

    check_out(call)
    return finish(call, "positions", position_similarity(call.model(), limit))


@command("embedding-layer", "a short text's word, token-type and position rows, their sum and the LayerNorm output")
@argument("text", "the text ('-' reads standard input)")
@option(PAIR_OPTION)
@option(NO_CHECK_OPTION)
@draw_flags
def embedding_layer(call: Call, text: str, pair: str | None, no_check: bool, **drawing: Any) -> PlotResult:
    from ..embeddings.layer import explain

    check_out(call)
    data = explain(call.model(), text_argument(text), pair, check=not no_check)
    return finish(call, "embedding-layer", data)


@command("context", "a word across sentences: its vectors' cosine per layer")
@option(WORD_OPTION)
@option(SENTENCES_OPTION)
@option(WORD_POOL_OPTION)
@draw_flags
@run_flags()
def context(call: Call, word: str, sentences: tuple[str, ...], pool: WordPool, **drawing: Any) -> PlotResult:
    from ..contextual.context import compare_contexts

    check_out(call)
    data = compare_contexts(call.model(), word, list(sentences), pool=pool, options=call.run_options())
    return finish(call, "context", data)


@command(
    "contextuality",
    "Ethayarajh's measures per layer over a corpus: self-similarity, intra-sentence, anisotropy baseline",
)
@argument("corpus", "a text file or folder (plain text or WikiExtractor <doc> files)")
@option(WORD_LIST_OPTION, help="measure only these words (default: every word)")
@option(CONTEXT_MAX_TEXTS_OPTION, help="texts read")
@option(MAX_CONTEXTS_OPTION)
@draw_flags
@run_flags()
def contextuality(
    call: Call, corpus: str, words: tuple[str, ...], max_texts: int, max_contexts: int, **drawing: Any
) -> PlotResult:
    from itertools import islice

    from ..contextual.contextuality import measure_contextuality
    from ..core.corpus import iter_sentences
    from ..core.errors import InputError

    check_out(call)
    if max_texts < 2:
        raise InputError(f"--max-texts must be at least 2, got {max_texts}.", "Example: --max-texts 2000.")
    texts = list(islice(iter_sentences(corpus), max_texts))
    data = measure_contextuality(
        call.model(), texts, words=list(words) or None, max_contexts=max_contexts, options=call.run_options()
    )
    return finish(call, "contextuality", data)


for kind in (tokens, contextual, trajectory, positions, embedding_layer, context, contextuality):
    plot.add_command(kind)
