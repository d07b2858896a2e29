"""The JSON API: one endpoint per library function, answering that result's `to_dict()` (what `--json` prints).

Cheap endpoints are plain (sync) functions, which FastAPI runs in its thread pool. Expensive ones (a forward pass, a
matrix scan, a projection) run through `off_loop`: on a worker thread, so the server keeps answering meanwhile, once
one of a bounded number of slots is free (`ServerLimits.model_workers`, `search_workers`, `projection_workers`), and
never for a client that has already gone.

Request bodies are validated strictly: a JSON `true` is not the integer 1, `1` is not `true`, `"5"` is not 5.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from ..core.errors import InputError
from ..core.tokens import check_text
from .app import JSON, ClientGoneError, Registry, RequestTooLargeError, ServedModel, ServerLimits

ModelChoice = str | int | None
MODEL_FIELD = Field(None, description="a model's name or index from GET /api/models (default: the first)")
Pool = Literal["mean", "first", "last", "sum"]
WordPool = Literal["mean", "first", "last", "first+last", "max"]
Method = Literal["pca", "tsne", "umap"]


BREAD = ["I like eating bread", "The banana bread was horrible"]


def strict(**example: Any) -> ConfigDict:
    """Unknown fields are refused, types are not coerced (`true` is no integer); `example` is shown on /docs."""
    return ConfigDict(extra="forbid", strict=True, json_schema_extra={"examples": [example]})


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class TokensRequest(Strict):
    """`bertlens tokens TEXT [--pair PAIR] [--no-special]`"""

    model_config = strict(text="I am Sinan")

    model: ModelChoice = MODEL_FIELD
    text: str = Field(description="the text to tokenize")
    pair: str | None = Field(None, description="a second text, for a text pair (segment 1)")
    add_special_tokens: bool = Field(True, description="add [CLS], [SEP] and the like, as the model receives them")


class ExplainRequest(Strict):
    """`bertlens explain TEXT [--pair PAIR] [--no-check]`"""

    model_config = strict(text="hello, world!")

    model: ModelChoice = MODEL_FIELD
    text: str = Field(description="a short text (the model's maximum length at most)")
    pair: str | None = Field(None, description="a second text, for a text pair (segment 1)")
    check: bool = Field(True, description="run the model and compare with its hidden_states[0]")


class NeighborsRequest(Strict):
    """`bertlens neighbors QUERY… [options]`: the same options, by the same names."""

    model_config = strict(queries=["dog"], k=5, words_only=True)

    model: ModelChoice = MODEL_FIELD
    queries: list[str] = Field([], description="tokens or words (or token ids with `id`); one result each")
    id: bool = Field(False, description="the queries are token ids")
    positive: list[str] = Field([], description="terms to add (king woman), instead of queries")
    negative: list[str] = Field([], description="terms to subtract (man)")
    k: int = Field(10, description="how many neighbours")
    metric: Literal["cosine", "dot", "euclidean"] = "cosine"
    center: bool = Field(False, description="subtract the mean row first (anisotropy correction)")
    remove_top: int = Field(0, description="also remove the top D principal directions")
    pool: Pool = Field("mean", description="how a word's pieces are pooled")
    words_only: bool = Field(False, description="only whole words: no pieces, numbers, punctuation")
    no_pieces: bool = Field(False, description="drop ## continuation pieces")
    no_numbers: bool = Field(False, description="drop tokens made of digits")
    no_punctuation: bool = Field(False, description="drop punctuation and symbol tokens")
    specials: bool = Field(False, description="keep special tokens ([CLS], [SEP], …)")
    unused: bool = Field(False, description="keep [unused…] rows")


class ContextRequest(Strict):
    """`bertlens context WORD SENTENCE SENTENCE…`"""

    model_config = strict(word="bread", sentences=BREAD)

    model: ModelChoice = MODEL_FIELD
    word: str = Field(description="the word to follow, e.g. bread")
    sentences: list[str] = Field(description="two or more sentences that contain it")
    pool: WordPool = Field("mean", description="how a word's pieces are pooled")


class TrajectoryRequest(Strict):
    """The word's vector at every layer in each sentence, all layers projected together into one space."""

    model_config = strict(word="bread", sentences=BREAD)

    model: ModelChoice = MODEL_FIELD
    word: str = Field(description="the word to follow, e.g. bread")
    sentences: list[str] = Field(description="two or more sentences that contain it")
    method: Method = "pca"
    dims: Literal[2, 3] = 2
    seed: int = 0


class ProjectionRequest(Strict):
    """Vocabulary rows (`tokens`) or contextual word/token vectors of texts (`contextual`), projected to 2-D or 3-D."""

    model_config = strict(source="tokens", tokens=["king", "queen", "man", "woman", "dog", "cat"])

    model: ModelChoice = MODEL_FIELD
    source: Literal["tokens", "contextual"] = Field("tokens", description="input-matrix rows, or contextual vectors")
    tokens: list[str | int] | None = Field(
        None, description="tokens: these tokens, words (pieces pooled) or ids (numbers); else the first `count` words"
    )
    count: int | None = Field(
        None, description="tokens: the first `count` whole-word tokens of the vocabulary (default: all of them)"
    )
    texts: list[str] = Field([], description="contextual: the texts whose words (or tokens) are projected")
    layer: int = Field(-1, description="contextual: which layer (0 = embedding output, -1 = last)")
    level: Literal["word", "token"] = "word"
    method: Method = "pca"
    dims: Literal[2, 3] = 2
    seed: int = 0
    label: str | None = Field(None, description="a label stored with every point (metadata column 'label')")


def build_router(registry: Registry) -> APIRouter:
    """The /api routes, bound to `registry` (no globals)."""
    limits = registry.limits
    router = APIRouter(prefix="/api")

    @router.get("/models", summary="The models this server was started with (choose one by name or index)")
    def models() -> Any:
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
                    "whole_words": served.whole_words,  # what a token projection by count can take
                }
            )
        return JSON({"models": rows, "limits": _public_limits(limits)})

    @router.get("/info", summary="bertlens info: family, sizes, positions, parameters, source")
    def info_(model: str | None = Query(None, description="a model's name or index (default: the first)")) -> Any:
        from ..embeddings.info import info

        return JSON(info(registry.get(model).model).to_dict())

    @router.post("/tokens", summary="bertlens tokens: text (or pair) -> pieces, ids, offsets, words, segments")
    def tokens(request: TokensRequest) -> Any:
        from ..core.tokens import tokenize

        served = registry.get(request.model)
        text = _text(limits, request.text, "text")
        pair = None if request.pair is None else _text(limits, request.pair, "pair", empty_ok=True)
        return JSON(tokenize(served.model, text, pair, add_special_tokens=request.add_special_tokens).to_dict())

    @router.post("/explain", summary="bertlens explain: the embedding layer's parts for every token, checked")
    async def explain_(request: ExplainRequest, http: Request) -> Any:
        from ..embeddings.layer import explain

        served = registry.get(request.model)
        text = _text(limits, request.text, "text")
        pair = None if request.pair is None else _text(limits, request.pair, "pair", empty_ok=True)

        def run() -> Any:
            return explain(served.model, text, pair, check=request.check).to_dict()

        return JSON(await off_loop(http, run, (lambda: registry.forward(served)) if request.check else None))

    @router.post("/neighbors", summary="bertlens neighbors: the vocabulary's nearest tokens, filtered, adjusted")
    async def neighbors(request: NeighborsRequest, http: Request) -> Any:
        served = registry.get(request.model)
        if from_table(served, request):  # a lookup (~0.1 ms): answered on the event loop, no thread hop
            return JSON(run_neighbors(served, request, limits).to_dict())

        def scan() -> Any:  # a scan of the matrix (ms; the first adjusted space: ~1 s): one at a time, off the loop
            return run_neighbors(served, request, limits).to_dict()

        return JSON(await off_loop(http, scan, lambda: registry.search_slots))

    @router.post("/context", summary="bertlens context: a word's vectors across sentences, compared per layer")
    async def context(request: ContextRequest, http: Request) -> Any:
        from ..contextual.context import compare_contexts

        served = registry.get(request.model)
        word, sentences = _word_and_sentences(limits, request.word, request.sentences)

        def run() -> Any:
            return compare_contexts(served.model, word, sentences, pool=request.pool).to_dict()

        return JSON(await off_loop(http, run, lambda: registry.forward(served)))

    @router.post("/trajectory", summary="A word's path through the layers in each sentence, in one shared projection")
    async def trajectory(request: TrajectoryRequest, http: Request) -> Any:
        from ..views.trajectory import trajectory

        served = registry.get(request.model)
        word, sentences = _word_and_sentences(limits, request.word, request.sentences)

        def run() -> Any:  # at most max_sentences x (layers + 1) points: small even for t-SNE
            chosen = {"method": request.method, "dims": request.dims, "seed": request.seed}
            return trajectory(served.model, word, sentences, **chosen).to_dict()

        return JSON(await off_loop(http, run, lambda: registry.forward(served)))

    @router.post("/projection", summary="Token rows or contextual vectors projected (PCA, t-SNE, UMAP), with metadata")
    async def projection(request: ProjectionRequest, http: Request) -> Any:
        from starlette.concurrency import run_in_threadpool

        from ..views.tokens import project_contextual, project_tokens

        served = registry.get(request.model)
        chosen = {"method": request.method, "dims": request.dims, "seed": request.seed}
        if request.source == "tokens":
            if request.texts:
                raise InputError("`texts` belong to a contextual projection.", 'Set "source": "contextual".')
            count, tokens = request.count, request.tokens
            if tokens is not None:
                _limit(len(tokens), limits.max_points, "tokens")
                tokens = [t if isinstance(t, int) else _text(limits, t, "token") for t in tokens]
            elif count is not None:
                _limit(count, limits.max_points, "points (count)")
            else:
                count = min(served.whole_words, limits.max_points)
            _method_limit(limits, request.method, len(tokens) if tokens is not None else count)

            def tokens_projection() -> Any:
                return project_tokens(served.model, tokens=tokens, count=count, label=request.label, **chosen).to_dict()

            slot = None if request.method == "pca" else (lambda: registry.projection_slots)
            return JSON(await off_loop(http, tokens_projection, slot))
        if request.tokens is not None or request.count is not None:
            raise InputError("`tokens` and `count` belong to a token projection.", 'Set "source": "tokens".')
        if not request.texts:
            raise InputError("No texts to project.", "Give one or more texts; each word becomes a point.")
        _limit(sum(len(t) for t in request.texts), limits.max_projection_chars, "characters of text")
        texts = [
            _text(limits, t, f"text #{i}", longest=limits.max_projection_chars) for i, t in enumerate(request.texts)
        ]
        if request.method != "pca":  # counted by the tokenizer (fast) before the forward pass
            points = await run_in_threadpool(contextual_points, served, texts, request.level)
            _method_limit(limits, request.method, points)

        def contextual_projection() -> Any:
            served.torch_model()  # loaded once, under its lock
            layer, level = request.layer, request.level
            return project_contextual(served.model, texts, layer=layer, level=level, **chosen).to_dict()

        # its own slot, not a forward-pass slot: explain and context never wait behind a long projection
        return JSON(await off_loop(http, contextual_projection, lambda: registry.projection_slots))

    @router.get("/positions", summary="Cosine similarity of every pair of position rows (and the token-type rows)")
    def positions(
        model: str | None = Query(None, description="a model's name or index (default: the first)"),
        limit: int | None = Query(None, description="only the first `limit` positions (default: all of them)"),
    ) -> Any:
        from ..embeddings.positions import position_similarity

        served = registry.get(model)
        if limit is not None:
            _limit(limit, limits.max_positions, "positions")
        return JSON(position_similarity(served.model, limit=limit).to_dict())

    return router


TABLE_QUERIES = 8  # most token queries answered inline from the neighbour table


async def off_loop(
    http: Request, work: Callable[[], Any], hold: Callable[[], AbstractContextManager[Any]] | None = None
) -> Any:
    """`work()` on a worker thread, inside `hold()` (a slot: the wait for it is on the worker thread too), so the
    event loop keeps answering other requests. Never started for a client that has gone: checked before the wait
    and again once the slot is held (a queue of abandoned requests costs nothing)."""
    from anyio import from_thread
    from starlette.concurrency import run_in_threadpool

    await _client_still_there(http)

    def held() -> Any:
        with (hold or nullcontext)():
            from_thread.run(_client_still_there, http)
            return work()

    return await run_in_threadpool(held)


async def _client_still_there(http: Request) -> None:
    if await http.is_disconnected():
        raise ClientGoneError(
            "The client closed its connection before its request began; nothing was run.",
            "Wait for the answer: requests that need a model or a projection run one (or a few) at a time.",
        )


def contextual_points(served: ServedModel, texts: Sequence[str], level: str) -> int:
    """How many points `project_contextual` makes of `texts`: words (its `_runs`) or non-special tokens."""
    from ..contextual.states import _runs
    from ..core.tokens import tokenize

    tokenized = [tokenize(served.model, text).tokens for text in texts]
    if level == "word":
        return sum(len(_runs(tokens)) for tokens in tokenized)
    return sum(1 for tokens in tokenized for token in tokens if not token.special)


def _method_limit(limits: ServerLimits, method: str, points: int) -> None:
    """t-SNE and UMAP take minutes on tens of thousands of points: the server takes fewer (the CLI has no cap)."""
    most = {"tsne": limits.max_tsne_points, "umap": limits.max_umap_points}.get(method)
    if most is not None and points > most:
        name = {"tsne": "t-SNE", "umap": "UMAP"}[method]
        raise RequestTooLargeError(
            f"The request asks for a {name} of {points:,} points; this server runs {name} on at most {most:,}.",
            f"Ask for fewer points, use PCA (up to {limits.max_points:,} points), or run it without a limit from "
            "the command line (bertlens plot tokens … / plot contextual …) or the library.",
        )


def from_table(served: ServedModel, request: NeighborsRequest) -> bool:
    """Whether the library will answer `request` from the precomputed neighbour table (as `neighbors_many` decides:
    cosine, raw space, no specials or unused rows, token queries, k within the table). Where a stricter filter leaves
    fewer than k in the table the library scans instead: still correct, just not a lookup."""
    table = served.index.table
    if table is None or request.k > table.width or request.metric != "cosine" or request.center:
        return False
    if request.remove_top or request.specials or request.unused or request.id or request.positive or request.negative:
        return False
    vocabulary = served.model.vocabulary
    queries = request.queries
    return 0 < len(queries) <= TABLE_QUERIES and all(
        vocabulary.token_to_id(check_text(q, "query")) is not None for q in queries
    )


def run_neighbors(served: ServedModel, request: NeighborsRequest, limits: ServerLimits) -> Any:
    """What `bertlens neighbors` runs, with the server's index (opened once, neighbour table included)."""
    from ..similarity.index import Adjustment, TokenFilter
    from ..similarity.nearest import neighbors_many, parse_queries

    queries = [_text(limits, q, "query") for q in request.queries]
    terms = [_text(limits, t, "term") for t in [*request.positive, *request.negative]]
    _limit(len(queries) + len(terms), limits.max_queries, "queries")
    _limit(request.k, limits.max_k, "neighbours (k)")
    parsed = parse_queries(queries, request.positive, request.negative, ids=request.id)
    adjustment = Adjustment(center=request.center, remove_top=request.remove_top)
    filters = TokenFilter.from_flags(
        words_only=request.words_only,
        no_pieces=request.no_pieces,
        no_numbers=request.no_numbers,
        no_punctuation=request.no_punctuation,
        specials=request.specials,
        unused=request.unused,
    )
    return neighbors_many(
        served.model,
        parsed,
        request.k,
        metric=request.metric,
        filters=filters,
        adjustment=adjustment,
        pool=request.pool,
        index=served.index,
    )


def _text(limits: ServerLimits, value: str, what: str, *, empty_ok: bool = False, longest: int | None = None) -> str:
    """A text from a request, refused (413) when longer than the server takes, and (unless `empty_ok`) when empty."""
    longest = limits.max_text_chars if longest is None else longest
    check_text(value, what)  # a JSON string may hold lone surrogates (\udcff escapes): a 400, not a 500
    if len(value) > longest:
        raise RequestTooLargeError(
            f"The {what} has {len(value):,} characters; this server takes at most {longest:,}.",
            "Send a shorter text (bertlens serve is for looking at examples; use the library for whole corpora).",
        )
    if not empty_ok and not value.strip():
        raise InputError(f"The {what} is empty.", "Type some text.")
    return value


def _limit(count: int, most: int, what: str) -> None:
    if count > most:
        raise RequestTooLargeError(
            f"The request asks for {count:,} {what}; this server allows at most {most:,}.",
            f"Ask for at most {most:,} (the limits are listed by GET /api/models).",
        )


def _word_and_sentences(limits: ServerLimits, word: str, sentences: list[str]) -> tuple[str, list[str]]:
    _limit(len(sentences), limits.max_sentences, "sentences")
    return _text(limits, word, "word"), [_text(limits, s, f"sentence #{i}") for i, s in enumerate(sentences)]


def _public_limits(limits: ServerLimits) -> dict[str, int]:
    names = ("max_text_chars", "max_body_bytes", "max_sentences", "max_queries", "max_k", "max_points")
    names += ("max_tsne_points", "max_umap_points")
    return {name: getattr(limits, name) for name in names}
