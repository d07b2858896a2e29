"""The Corpus view's API: the occurrence indexes a server opened at start, and their endpoints.

`bertlens serve --index DIR` opens each index once (`open_served_indexes`), checked complete and undamaged, and pairs
it with the served model that built it (an index of a model the server does not serve is refused, saying which
model built it). Requests choose an index by name or number (`GET /api/indexes`), never by path. `POST /api/search`
calls `search_occurrences` and `POST /api/senses` calls `word_senses`, and each answers that result's `to_dict()`:
exactly what `bertlens search … --json` and `bertlens senses … --json` print. The request bodies are in requests.py,
the limits on k and on the occurrences clustered in limits.py. Imported only by app.py's `create_app` (FastAPI loads
with the app, never with bertlens).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from ..core.errors import InputError
from .errors import UnknownModelError
from .limits import ServerLimits, check_count, checked_text
from .registry import ServedModel
from .requests import SearchRequest, SensesRequest
from .responses import JSON
from .work import ANY_JSON, AppRegistry, off_loop

if TYPE_CHECKING:
    from ..occurrences.search import SearchOptions
    from ..occurrences.store import OccurrenceIndex
    from ..occurrences.versions import LatestVersions, State
    from ..senses.senses import SensesOptions


class UnknownIndexError(UnknownModelError):
    """A request named an index the server was not started with (or the server has none): a 404."""


@dataclass
class ServedIndex:
    """One occurrence index the server opened at start, and the served model that built it."""

    name: str  # how requests choose it
    index: OccurrenceIndex  # shared by every request (see `current`)
    served: ServedModel  # the model whose vectors it holds
    state: State | None = None  # the tables' versions and search structures `index` reads (`occurrences.versions`)
    latest: LatestVersions | None = field(default=None, repr=False)  # handles that follow the tables' latest version
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        from ..occurrences.versions import LatestVersions, opened

        if self.state is None:
            self.state = opened(self.index)
        if self.latest is None:
            self.latest = LatestVersions(self.index)

    def current(self) -> OccurrenceIndex:
        """The index as it is on disk now. A finished `bertlens index DIR --add` moves the tables to a new version
        and LanceDB removes what the older ones used, so the index is opened again when LanceDB reports a version
        other than the one opened; while a build still writes it (not complete), the version opened before keeps
        answering."""
        from ..occurrences.store import open_index
        from ..occurrences.versions import opened

        with self.lock:
            if self.latest is None or self.latest.now() == self.state:
                return self.index
            try:
                self.index = open_index(self.index.path)
            except InputError:  # unfinished (being added to) or damaged: keep the version opened before
                return self.index
            self.state = opened(self.index)
            return self.index

    def describe(self, number: int) -> dict[str, Any]:
        """What the page shows of it: sizes, layers (absolute, 0 = the embedding output), its model."""
        index = self.current()
        manifest = index.manifest
        return {
            "index": number,
            "name": self.name,
            "model": self.served.name,
            "texts": index.text_count,
            "rows": index.rows,
            "layers": list(index.layers),
            "model_layers": int(manifest.get("model_layers", 0)),
            "dims": index.dims,
            "dtype": index.dtype,
            "pool": manifest.get("pool"),
        }


def open_served_indexes(paths: Sequence[str | os.PathLike[str]], models: Sequence[ServedModel]) -> list[ServedIndex]:
    """Open every index in `paths` (complete, undamaged) and find the served model that built it; refuse one whose
    model the server does not serve."""
    from ..occurrences.store import model_identity, open_index

    if not paths:
        return []
    hashes: dict[int, str] = {}  # model identity hashes, computed once per served model
    opened: list[ServedIndex] = []
    seen: dict[str, int] = {}
    for path in paths:
        index = open_index(path)
        theirs = index.manifest["model"]
        owner = None
        for number, served in enumerate(models):
            if number not in hashes:
                hashes[number] = model_identity(served.model)["sha256"]
            if hashes[number] == theirs.get("sha256"):
                owner = served
                break
        if owner is None:
            names = ", ".join(s.name for s in models)
            description = str(theirs.get("description"))
            raise InputError(
                f"The index at {index.path} was built with a model this server does not serve ({description}); it "
                f"serves {names}.",
                f"Serve the model it was built with: `bertlens serve --model {model_argument(description)} --index "
                f"{path}` (adding any other model to serve), or build an index with a served model "
                "(`bertlens index CORPUS --out DIR --model …`).",
            )
        name = Path(index.path).name or str(index.path)
        seen[name] = seen.get(name, 0) + 1
        opened.append(ServedIndex(name if seen[name] == 1 else f"{name}-{seen[name]}", index, owner))
    return opened


def model_argument(description: str) -> str:
    """What `--model` takes for the model an index's manifest describes (`ModelSource.description`)."""
    if description.startswith("default model"):
        return "default"
    cached = " from the local Hugging Face cache"
    return description.split(cached)[0] if cached in description else description  # a hub id, or a folder


def chosen_index(indexes: Sequence[ServedIndex], choice: str | int | None) -> ServedIndex:
    """The index a request chose: None for the first, a name, or a number from GET /api/indexes."""
    if not indexes:
        raise UnknownIndexError(
            "This server has no occurrence index open.",
            "Start it with one: `bertlens serve --index DIR` (an index that `bertlens index CORPUS --out DIR` built, "
            "with a model the server serves: `bertlens serve --model MODEL --index DIR` where it is not the default).",
        )
    if choice is None or choice == "":
        return indexes[0]
    for served in indexes:
        if served.name == choice:
            return served
    if isinstance(choice, int) and not isinstance(choice, bool) and 0 <= choice < len(indexes):
        return indexes[choice]
    names = ", ".join(repr(s.name) for s in indexes)
    raise UnknownIndexError(
        f"No index {choice!r} on this server.",
        f"Choose one of {names} (or its number 0..{len(indexes) - 1}); GET /api/indexes lists them. The server only "
        "opens the indexes it was started with (`bertlens serve --index DIR`).",
    )


router = APIRouter(prefix="/api")  # /api/indexes, /api/search, /api/senses: the registry's indexes


@router.get(
    "/indexes",
    response_model=ANY_JSON,
    summary="The occurrence indexes this server opened (bertlens serve --index DIR)",
)
def indexes(registry: AppRegistry) -> Response:
    served = registry.indexes
    return JSON({"indexes": [s.describe(i) for i, s in enumerate(served)]})


@router.post(
    "/search",
    response_model=ANY_JSON,
    summary="bertlens search: occurrences used most like an example (same word or any word)",
)
async def search(request: SearchRequest, http: Request, registry: AppRegistry) -> Response:
    chosen = chosen_index(registry.indexes, request.index)
    example, options = search_arguments(request, registry.limits)

    def run() -> dict[str, Any]:
        from ..occurrences.search import search_occurrences

        return search_occurrences(chosen.served.model, chosen.current(), example, options=options).to_dict()

    if example is None:  # from an occurrence already in the index: no forward pass
        return JSON(await off_loop(http, run, lambda: registry.search_slots))
    return JSON(await off_loop(http, run, lambda: registry.forward(chosen.served)))


@router.post(
    "/senses",
    response_model=ANY_JSON,
    summary="bertlens senses: a word's occurrences clustered into senses, with a 2-D map",
)
async def senses(request: SensesRequest, http: Request, registry: AppRegistry) -> Response:
    chosen = chosen_index(registry.indexes, request.index)
    word, options = senses_arguments(request, registry.limits)

    def run() -> dict[str, Any]:
        from ..senses.senses import word_senses

        return word_senses(chosen.served.model, word, index=chosen.current(), options=options).to_dict()

    return JSON(await off_loop(http, run, lambda: registry.projection_slots))


def search_arguments(request: SearchRequest, limits: ServerLimits) -> tuple[str | None, SearchOptions]:
    """A search request checked against `limits`: the example sentence (None: from an occurrence) and the library's
    `SearchOptions`."""
    from ..occurrences.search import SearchOptions

    check_count(request.k, limits.max_search_k, "hits (k)")
    example = None if request.example is None else checked_text(limits, request.example, "example sentence")
    word = None if request.word is None else checked_text(limits, request.word, "word")
    occurrence = None if request.occurrence is None else (int(request.occurrence[0]), int(request.occurrence[1]))
    if example is None and occurrence is None:
        raise InputError(
            "Give an example sentence, or an occurrence of the index to search from.",
            'e.g. {"example": "I sat on the river [bank]"}, or {"example": "I sat on the river bank", "word": '
            '"bank"}, or {"occurrence": [text_id, position]} (from a hit).',
        )
    options = SearchOptions(
        word=word,
        layer=request.layer,
        any_word=request.any_word,
        k=request.k,
        exclude_same_text=request.exclude_same_text,
        occurrence=occurrence,
        one_per_text=request.one_per_text,
    )
    return example, options


def senses_arguments(request: SensesRequest, limits: ServerLimits) -> tuple[str, SensesOptions]:
    """A senses request checked against `limits`: the word and the library's `SensesOptions` (the library's defaults
    where the request leaves a field out, so that the answer is what `bertlens senses` prints)."""
    from ..senses.senses import SensesOptions

    word = checked_text(limits, request.word, "word")
    if "max_occurrences" not in request.model_fields_set:  # the default, within the server's limit
        most = min(request.max_occurrences, limits.max_sense_occurrences)
    else:
        check_count(request.max_occurrences, limits.max_sense_occurrences, "occurrences to cluster (max_occurrences)")
        most = request.max_occurrences
    return word, SensesOptions(
        k=request.k,
        layer=request.layer,
        max_occurrences=most,
        typical=request.typical,
        words=request.words,
        seed=request.seed,
    )
