"""The JSON API: one endpoint per library function, answering that result's `to_dict()` (what `--json` prints).

The endpoints are module-level functions on `router` (FastAPI's own pattern); each takes the app's models as the
`registry: AppRegistry` dependency (work.py), so one router serves every app `create_app` makes. Cheap endpoints are
plain (sync) functions, which FastAPI runs in its thread pool. Expensive ones (a forward pass, a matrix scan, a
projection) run through `off_loop`: on a worker thread, so the server keeps answering meanwhile, once one of a bounded
number of slots is free (`ServerLimits.model_workers`, `search_workers`, `projection_workers`), and never for a client
that has already gone. The request bodies are in requests.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from ..core.errors import NAME, InputError
from ..core.options import Metric, Pool, filter_flags
from ..embeddings.token_classes import TokenFilter
from ..similarity.nearest import NeighborsBatch, answered_from_table, neighbors_many
from ..similarity.query import Query as NeighborQuery
from ..similarity.query import parse_queries
from ..similarity.space import Adjustment
from .limits import (
    ServerLimits,
    check_count,
    check_method_points,
    checked_text,
    public_limits,
    word_and_sentences,
)
from .registry import Registry, ServedModel
from .requests import (
    ContextRequest,
    ExplainRequest,
    NeighborsRequest,
    ProjectionRequest,
    TokensRequest,
    TrajectoryRequest,
)
from .responses import JSON
from .work import ANY_JSON, AppRegistry, off_loop

TABLE_QUERIES = 8  # most token queries answered inline from the neighbour table
NEAREST = 10  # a projection's points each come with their 10 nearest points in the original space (shown on click)
NEAREST_UP_TO = 10_000  # …when there are at most this many points (the search is n x n: ~1 s for 10,000 x 768)
MODEL_CHOICE = "a model's name or index (default: the first)"

router = APIRouter(prefix="/api")


@router.get(
    "/models", response_model=ANY_JSON, summary="The models this server was started with (choose one by name or index)"
)
def models(registry: AppRegistry) -> Response:
    from ..embeddings.info import info

    rows = []
    for i, served in enumerate(registry.models):
        about = info(served.model)
        rows.append(
            {
                "index": i,
                "name": served.name,
                "family": about.family,
                "layers": about.layers,
                "hidden_size": about.hidden_size,
                "vocab_size": about.vocab_size,
                "max_length": about.max_length,
                "neighbor_table": served.index.table is not None,
                "preparation": registry.preparation.of(served.name).to_dict(),  # its state and progress
                "whole_words": served.whole_words,  # what a token projection by count can take
            }
        )
    return JSON({"models": rows, "limits": public_limits(registry.limits)})


@router.get(
    "/status",
    response_model=ANY_JSON,
    summary="What the server is still preparing in the background: each model's similar-token table and its progress",
)
def status(registry: AppRegistry) -> Response:
    return JSON(registry.preparation.to_dict())


@router.get("/info", response_model=ANY_JSON, summary="bertlens info: family, sizes, positions, parameters, source")
def info_(registry: AppRegistry, model: str | None = Query(None, description=MODEL_CHOICE)) -> Response:
    from ..embeddings.info import info

    return JSON(info(registry.get(model).model).to_dict())


@router.post(
    "/tokens",
    response_model=ANY_JSON,
    summary="bertlens tokens: text (or pair) -> pieces, ids, offsets, words, segments",
)
def tokens(request: TokensRequest, registry: AppRegistry) -> Response:
    from ..core.tokens import tokenize

    served, limits = registry.get(request.model), registry.limits
    text = checked_text(limits, request.text, "text")
    pair = None if request.pair is None else checked_text(limits, request.pair, "pair", empty_ok=True)
    return JSON(tokenize(served.model, text, pair, add_special_tokens=request.add_special_tokens).to_dict())


@router.post(
    "/explain",
    response_model=ANY_JSON,
    summary="bertlens explain: the embedding layer's parts for every token, checked",
)
async def explain_(request: ExplainRequest, http: Request, registry: AppRegistry) -> Response:
    from ..embeddings.layer import explain

    served, limits = registry.get(request.model), registry.limits
    text = checked_text(limits, request.text, "text")
    pair = None if request.pair is None else checked_text(limits, request.pair, "pair", empty_ok=True)

    def run() -> dict[str, Any]:
        return explain(served.model, text, pair, check=request.check).to_dict()

    return JSON(await off_loop(http, run, (lambda: registry.forward(served)) if request.check else None))


@router.post(
    "/neighbors",
    response_model=ANY_JSON,
    summary="bertlens neighbors: the vocabulary's nearest tokens, filtered, adjusted",
)
async def neighbors(request: NeighborsRequest, http: Request, registry: AppRegistry) -> Response:
    search = NeighborsSearch.of(registry.get(request.model), request, registry.limits)
    if search.from_table():  # a lookup (~0.1 ms): answered on the event loop, no thread hop
        return JSON(search.run().to_dict())

    def scan() -> dict[
        str, Any
    ]:  # a scan of the matrix (ms; the first adjusted space: ~1 s): one at a time, off the loop
        return search.run().to_dict()

    return JSON(await off_loop(http, scan, lambda: registry.search_slots))


@router.post(
    "/context",
    response_model=ANY_JSON,
    summary="bertlens context: a word's vectors across sentences, compared per layer",
)
async def context(request: ContextRequest, http: Request, registry: AppRegistry) -> Response:
    from ..contextual.context import compare_contexts

    served = registry.get(request.model)
    word, sentences = word_and_sentences(registry.limits, request.word, request.sentences)

    def run() -> dict[str, Any]:
        return compare_contexts(served.model, word, sentences, pool=request.pool).to_dict()

    return JSON(await off_loop(http, run, lambda: registry.forward(served)))


@router.post(
    "/trajectory",
    response_model=ANY_JSON,
    summary="A word's path through the layers in each sentence, in one shared projection",
)
async def trajectory(request: TrajectoryRequest, http: Request, registry: AppRegistry) -> Response:
    from ..views.trajectory import trajectory as word_trajectory

    served = registry.get(request.model)
    word, sentences = word_and_sentences(registry.limits, request.word, request.sentences)

    def run() -> dict[str, Any]:  # at most max_sentences x (layers + 1) points: small even for t-SNE
        method, dims, seed = request.method, request.dims, request.seed
        return word_trajectory(served.model, word, sentences, method=method, dims=dims, seed=seed).to_dict()

    return JSON(await off_loop(http, run, lambda: registry.forward(served)))


@router.post(
    "/projection",
    response_model=ANY_JSON,
    summary="Token rows or contextual vectors projected (PCA, t-SNE, UMAP), with metadata",
)
async def projection(request: ProjectionRequest, http: Request, registry: AppRegistry) -> Response:
    served = registry.get(request.model)
    if request.source != "groups" and request.groups is not None:
        raise InputError(
            "{groups} belong to a projection of word groups.", 'Set "source": "groups".', arguments={"groups": NAME}
        )
    if request.source == "groups":
        return JSON(await groups_projection(request, http, registry, served))
    if request.source == "tokens":
        return JSON(await tokens_projection(request, http, registry, served))
    return JSON(await contextual_projection(request, http, registry, served))


async def groups_projection(
    request: ProjectionRequest, http: Request, registry: Registry, served: ServedModel
) -> dict[str, Any]:
    """The word groups' rows projected (`source: groups`): 168 points at most, small even for t-SNE."""
    from ..views.groups import project_word_groups

    if request.tokens is not None or request.count is not None or request.texts:
        raise InputError(
            "A projection of word groups takes {groups} only.",
            "Leave out tokens, count, texts.",
            arguments={"groups": NAME},
        )
    groups, method, dims, seed = request.groups, request.method, request.dims, request.seed

    def run() -> dict[str, Any]:
        return project_word_groups(served.model, groups, method, dims, seed, nearest=NEAREST).to_dict()

    return await off_loop(http, run, lambda: registry.projection_slots)


async def tokens_projection(
    request: ProjectionRequest, http: Request, registry: Registry, served: ServedModel
) -> dict[str, Any]:
    """Vocabulary rows projected (`source: tokens`): the tokens asked for, the first `count` whole words, or as many
    whole words as the server allows. PCA runs without a slot (it is quick); t-SNE and UMAP take a projection slot."""
    from ..views.tokens import project_tokens

    limits = registry.limits
    if request.texts:
        raise InputError(
            "{texts} belong to a contextual projection.", 'Set "source": "contextual".', arguments={"texts": NAME}
        )
    count, tokens = request.count, request.tokens
    if tokens is not None:
        check_count(len(tokens), limits.max_points, "tokens")
        tokens = [t if isinstance(t, int) else checked_text(limits, t, "token") for t in tokens]
        points = len(tokens)
    elif count is not None:
        check_count(count, limits.max_points, "points (count)")
        points = count
    else:
        count = points = min(served.whole_words, limits.max_points)
    check_method_points(limits, request.method, points)

    def run() -> dict[str, Any]:
        projected = project_tokens(
            served.model,
            tokens=tokens,
            count=count,
            method=request.method,
            dims=request.dims,
            seed=request.seed,
            label=request.label,
            nearest=NEAREST if points <= NEAREST_UP_TO else 0,
        )
        return projected.to_dict()

    slot = None if request.method == "pca" else (lambda: registry.projection_slots)
    return await off_loop(http, run, slot)


async def contextual_projection(
    request: ProjectionRequest, http: Request, registry: Registry, served: ServedModel
) -> dict[str, Any]:
    """Contextual vectors of `texts` at one layer projected (`source: contextual`): each word (or token) a point,
    counted by the tokenizer before any forward pass, so that a request beyond the limits costs nothing."""
    from starlette.concurrency import run_in_threadpool

    from ..views.tokens import project_contextual

    limits = registry.limits
    if request.tokens is not None or request.count is not None:
        raise InputError(
            "{tokens} and {count} belong to a token projection.",
            'Set "source": "tokens".',
            arguments={"tokens": NAME, "count": NAME},
        )
    if not request.texts:
        raise InputError("No texts to project.", "Give one or more texts; each word becomes a point.")
    check_count(sum(len(t) for t in request.texts), limits.max_projection_chars, "characters of text")
    texts = [
        checked_text(limits, t, f"text #{i}", longest=limits.max_projection_chars) for i, t in enumerate(request.texts)
    ]
    points = await run_in_threadpool(contextual_points, served, texts, request.level)  # the tokenizer: fast
    check_method_points(limits, request.method, points)
    nearest = NEAREST if points <= NEAREST_UP_TO else 0

    def run() -> dict[str, Any]:
        served.torch_model()  # loaded once, under its lock
        method, dims, seed = request.method, request.dims, request.seed
        projected = project_contextual(
            served.model, texts, request.layer, request.level, method=method, dims=dims, seed=seed, nearest=nearest
        )
        return projected.to_dict()

    # its own slot, not a forward-pass slot: explain and context never wait behind a long projection
    return await off_loop(http, run, lambda: registry.projection_slots)


@router.get(
    "/positions",
    response_model=ANY_JSON,
    summary="Cosine similarity of every pair of position rows (and the token-type rows)",
)
def positions(
    registry: AppRegistry,
    model: str | None = Query(None, description=MODEL_CHOICE),
    limit: int | None = Query(None, description="only the first `limit` positions (default: all of them)"),
) -> Response:
    from ..embeddings.positions import position_similarity

    served = registry.get(model)
    if limit is not None:
        check_count(limit, registry.limits.max_positions, "positions")
    return JSON(position_similarity(served.model, limit=limit).to_dict())


def contextual_points(served: ServedModel, texts: Sequence[str], level: str) -> int:
    """How many points `project_contextual` makes of `texts`: words (`word_runs`) or non-special tokens."""
    from ..contextual.pooling import word_runs
    from ..core.tokens import tokenize

    tokenized = [tokenize(served.model, text).tokens for text in texts]
    if level == "word":
        return sum(len(word_runs(tokens)) for tokens in tokenized)
    return sum(1 for tokens in tokenized for token in tokens if not token.special)


@dataclass(frozen=True)
class NeighborsSearch:
    """What `bertlens neighbors` runs for one request, checked against the server's limits and parsed: the library's
    arguments, with the server's index (opened once, neighbour table included)."""

    served: ServedModel
    queries: Sequence[NeighborQuery]  # as `parse_queries` gives them
    k: int
    metric: Metric
    filters: TokenFilter
    adjustment: Adjustment
    pool: Pool

    @classmethod
    def of(cls, served: ServedModel, request: NeighborsRequest, limits: ServerLimits) -> NeighborsSearch:
        """`request` checked against `limits` and parsed (a bad or too large request is refused here)."""
        queries = [checked_text(limits, q, "query") for q in request.queries]
        terms = [checked_text(limits, t, "term") for t in [*request.positive, *request.negative]]
        check_count(len(queries) + len(terms), limits.max_queries, "queries")
        check_count(request.k, limits.max_k, "neighbours (k)")
        filters = TokenFilter.from_flags(**filter_flags(request))  # as the CLI's flags of the same names
        return cls(
            served,
            parse_queries(queries, request.positive, request.negative, ids=request.id),
            request.k,
            request.metric,
            filters,
            Adjustment(center=request.center, remove_top=request.remove_top),
            request.pool,
        )

    def from_table(self) -> bool:
        """Whether the library answers every query from the neighbour table (as `neighbors_many` decides it), for
        at most TABLE_QUERIES queries: then the answer is a lookup, cheap enough for the event loop."""
        if not 0 < len(self.queries) <= TABLE_QUERIES:
            return False
        served = self.served
        return answered_from_table(
            served.model,
            served.index,
            self.queries,
            self.k,
            metric=self.metric,
            filters=self.filters,
            adjustment=self.adjustment,
        )

    def run(self) -> NeighborsBatch:
        """The library's answer: what `bertlens neighbors` prints."""
        return neighbors_many(
            self.served.model,
            self.queries,
            self.k,
            metric=self.metric,
            filters=self.filters,
            adjustment=self.adjustment,
            pool=self.pool,
            index=self.served.index,
        )
