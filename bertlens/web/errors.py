"""The web app's own errors and how every error becomes an HTTP status and a JSON body.

Library errors (`BertlensError`) are 400s, but for a damaged index the server opened (`DamagedError`: a 500, the fault
is the server's, not the request's); the server adds an unknown model (404), a request beyond its limits (413) and a
client that has gone (499). FastAPI's own refusals (404, 405, a body that is not JSON or does not fit its
request model) are rewritten into the same `{"error", "message", "hint"}` shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.errors import BertlensError, DamagedError, InputError


class UnknownModelError(InputError):
    """A request named a model the server was not started with."""


class RequestTooLargeError(InputError):
    """A request (or a text in it) is larger than the server's limits."""


class ClientGoneError(BertlensError):
    """The client closed its connection before its request's work began: the work is not started."""


def status_of(exc: BertlensError) -> int:
    """The HTTP status for a library or request error: 404 unknown model, 413 too large, 499 client gone, 500 a
    damaged index, else 400."""
    if isinstance(exc, DamagedError):
        return 500
    if isinstance(exc, UnknownModelError):
        return 404
    if isinstance(exc, RequestTooLargeError):
        return 413
    if isinstance(exc, ClientGoneError):
        return 499  # nobody reads it: the client has gone (nginx's "client closed request")
    return 400


def http_error(status: int, path: str, detail: str, method: str = "", allow: str = "") -> dict[str, str]:
    """The JSON body of FastAPI's own refusals: nothing at this path (404), not this method (405), others."""
    if status == 404:
        return {
            "error": "NotFound",
            "message": f"Nothing at {path}.",
            "hint": "The page is at /, the API under /api/ (documented at /docs).",
        }
    if status == 405:
        return {
            "error": "MethodNotAllowed",
            "message": f"{path} does not answer the method {method}.".replace(" .", "."),
            "hint": f"Use {allow} (the Allow header lists it); /docs shows each endpoint's method."
            if allow
            else "See /docs for each endpoint's method.",
        }
    return {"error": f"HTTP{status}", "message": detail, "hint": "See /docs."}


def describe_validation(errors: Sequence[Any]) -> tuple[int, dict[str, str]]:
    """A 400 for a body that is not JSON, else a 422 naming each bad field and what it should be."""
    for error in errors:
        if error.get("type") == "json_invalid":
            where = error.get("ctx", {}).get("error", "")
            return 400, {
                "error": "MalformedJSON",
                "message": f"The request body is not valid JSON ({where}).".replace(" ()", ""),
                "hint": 'Send a JSON object, e.g. {"text": "hello"}, with Content-Type: application/json.',
            }
    parts = []
    for error in errors[:5]:
        location = [str(p) for p in error.get("loc", ()) if p not in ("body", "query")]
        name = ".".join(location) or "body"
        message = str(error.get("msg", "invalid"))
        if error.get("type") == "extra_forbidden":
            message = "is not a field of this request"
        elif error.get("type") == "missing":
            message = "is required"
        parts.append(f"{name}: {message}")
    return 422, {
        "error": "InvalidRequest",
        "message": "The request does not fit this endpoint: " + "; ".join(parts) + ".",
        "hint": "/docs shows each endpoint's fields and their types.",
    }


def internal_error(exc: Exception) -> dict[str, str]:
    """The JSON body of an unexpected error (a bug): the server keeps running."""
    return {
        "error": "InternalError",
        "message": f"Unexpected error (please report it): {type(exc).__name__}: {exc}",
        "hint": "The server keeps running; try other input.",
    }
