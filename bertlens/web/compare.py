"""The Compare view's API: two served models' embedding spaces side by side (`bertlens.spaces.diff`).

`POST /api/diff` calls `diff` on two of the models the server was started with (chosen by name or index, never by
path; the corpus, where one is asked, is one bertlens ships) and answers `SpaceDiff.to_dict()`: exactly what
`bertlens diff A B --json` prints. A full-vocabulary comparison takes seconds (the layers' a minute), so it runs off the
event loop in one of the `projection_slots` (long work, as t-SNE: neighbour searches and forward passes never wait
behind it), and the result is kept in the registry's `DiffCache` (diffs.py): asked again, or asked for one of its tokens
(`POST /api/diff/token`: `SpaceDiff.token(token).to_dict()`), it is read, not computed again. The request bodies are
in requests.py, the limits on k, top and occurrences in limits.py. Imported only by app.py's `create_app`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import APIRouter, Request
from starlette.responses import Response

from .diffs import DiffKey
from .errors import UnknownModelError
from .limits import check_count, checked_text
from .registry import Registry, ServedModel
from .requests import DiffRequest, DiffTokenRequest, ModelChoice
from .responses import JSON
from .work import ANY_JSON, AppRegistry, off_loop

if TYPE_CHECKING:
    from ..spaces.diff_results import SpaceDiff

router = APIRouter(prefix="/api")  # /api/diff, /api/diff/token: two of the registry's models compared
DEFAULT = DiffRequest.model_validate({})  # the library's defaults (a token asked before any comparison: this one)


def pair(registry: Registry, model_a: ModelChoice, model_b: ModelChoice) -> tuple[ServedModel, ServedModel]:
    """The two served models a request chose (by name or index; B's default is the second, which a server of one
    model lacks: said so, with how to serve two)."""
    if len(registry.models) < 2 and model_b == 1:
        raise UnknownModelError(
            f"This server serves one model ({registry.models[0].name}): a comparison needs two.",
            "Start it with both: `bertlens serve --model default path/to/other` (a folder, a hub id, a run's "
            "checkpoint); or ask model_b 0 to compare the model with itself.",
        )
    return registry.get(model_a), registry.get(model_b)


@router.post(
    "/diff",
    response_model=ANY_JSON,
    summary="bertlens diff: two served models' embedding spaces compared token by token (and layer by layer)",
)
async def diff_(request: DiffRequest, http: Request, registry: AppRegistry) -> Response:
    served_a, served_b = pair(registry, request.model_a, request.model_b)
    limits = registry.limits
    check_count(request.k, limits.max_diff_k, "nearest tokens per token (k)")
    check_count(request.top, limits.max_diff_top, "tokens that moved most (top)")
    if request.contextual:
        check_count(request.occurrences, limits.max_diff_occurrences, "word occurrences (occurrences)")
    key = key_of(served_a, served_b, request)
    found = registry.diffs.get(key)
    if found is None:
        found = await computed(http, registry, key, served_a, served_b)
    return JSON(found.to_dict())


@router.post(
    "/diff/token",
    response_model=ANY_JSON,
    summary="One token of a comparison: its nearest tokens in A and in B, overlap, residual (SpaceDiff.token)",
)
async def diff_token(request: DiffTokenRequest, http: Request, registry: AppRegistry) -> Response:
    served_a, served_b = pair(registry, request.model_a, request.model_b)
    check_count(request.k, registry.limits.max_diff_k, "nearest tokens per token (k)")
    token = checked_text(registry.limits, request.token, "token")
    found = registry.diffs.latest(served_a.name, served_b.name, request.k)
    if found is None:  # not compared yet (or no longer kept): the comparison with the library's defaults
        key = key_of(served_a, served_b, DiffRequest.model_validate({"k": request.k}))
        found = await computed(http, registry, key, served_a, served_b)
    return JSON(found.token(token).to_dict())  # k neighbours scored in each space: microseconds


def key_of(served_a: ServedModel, served_b: ServedModel, request: DiffRequest) -> DiffKey:
    """What `request` asks of these two models, as the cache keeps it."""
    return DiffKey.of(
        served_a.name,
        served_b.name,
        k=request.k,
        top=request.top,
        corpus=request.corpus,
        contextual=request.contextual,
        layer=request.layer,
        layer_b=request.layer_b,
        occurrences=request.occurrences,
    )


async def computed(
    http: Request, registry: Registry, key: DiffKey, served_a: ServedModel, served_b: ServedModel
) -> SpaceDiff:
    """`diff` as `key` asks, off the event loop in its slot, kept in the registry's cache. Looked up again once the
    slot is held: the same comparison asked twice at once is computed once."""

    def run() -> SpaceDiff:
        from ..spaces.diff import diff

        kept = registry.diffs.get(key)
        if kept is not None:
            return kept
        if key.contextual:  # each torch model loaded once, under its lock
            served_a.torch_model()
            served_b.torch_model()
        result = diff(
            served_a.model,
            served_b.model,
            k=key.k,
            top=key.top,
            corpus=key.corpus,
            contextual=key.contextual,
            layer=key.layer,
            layer_b=key.layer_b,
            occurrences=DEFAULT.occurrences if key.occurrences is None else key.occurrences,
        )
        registry.diffs.put(key, result)
        return result

    # a projection slot (long work), not a matrix-scan slot: neighbour searches never wait behind a comparison
    return await off_loop(http, run, lambda: registry.projection_slots)
