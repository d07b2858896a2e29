"""JSON answers: plain data (a result's `to_dict()`, or an error) to bytes and to a response."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.responses import Response


def dumps(body: object) -> bytes:
    """JSON bytes; NaN and infinities (not JSON) become null."""
    try:
        text = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError:
        body = _finite(body)
        text = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate echoed from a request (a \udcff escape in its JSON): kept escaped
        return json.dumps(body, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def _finite(value: object) -> object:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def JSON(body: object, status_code: int = 200) -> Response:
    """A JSON response from plain data (a result's `to_dict()`, or an error)."""
    from starlette.responses import Response

    return Response(dumps(body), status_code=status_code, media_type="application/json")
