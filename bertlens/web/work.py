"""What every endpoint shares: the app's registry (a FastAPI dependency), and expensive work run off the event loop.

Endpoints are module-level functions on `APIRouter`s (api.py, corpus.py) and take the registry as a parameter,
`registry: AppRegistry`, which FastAPI fills from `request.app.state.registry` (set by `create_app`): one router
serves any number of apps, each with its own models.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request

from .errors import ClientGoneError
from .registry import Registry


async def registry_of(request: Request) -> Registry:
    """The registry of the app answering `request` (`create_app` sets it). A coroutine, so FastAPI calls it on the
    event loop: a cheap endpoint answered there takes no thread hop for it."""
    registry: Registry = request.app.state.registry
    return registry


AppRegistry = Annotated[Registry, Depends(registry_of)]
# An endpoint's answer in /openapi.json: JSON of any shape (a result's `to_dict()`, documented with the result). The
# endpoints return the `Response` they made (responses.JSON), which FastAPI sends as it is, without this model.
ANY_JSON: Any = Any
Done = TypeVar("Done")  # what the work returns (an endpoint's JSON-ready data)


async def off_loop(
    http: Request, work: Callable[[], Done], hold: Callable[[], AbstractContextManager[object]] | None = None
) -> Done:
    """`work()` on a worker thread, inside `hold()` (a slot: the wait for it is on the worker thread too), so the
    event loop keeps answering other requests. Never started for a client that has gone: checked before the wait
    and again once the slot is held (a queue of abandoned requests costs nothing)."""
    from anyio import from_thread
    from starlette.concurrency import run_in_threadpool

    await client_still_there(http)

    def held() -> Done:
        with (hold or nullcontext)():
            from_thread.run(client_still_there, http)
            return work()

    return await run_in_threadpool(held)


async def client_still_there(http: Request) -> None:
    """Refuse (499) to start work for a client that has closed its connection."""
    if await http.is_disconnected():
        raise ClientGoneError(
            "The client closed its connection before its request began; nothing was run.",
            "Wait for the answer: requests that need a model or a projection run one (or a few) at a time.",
        )
