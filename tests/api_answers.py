"""What the web API's tests compare: a library result as the API sends it, an answer, a refusal."""

from __future__ import annotations

import json
from typing import Any


def same(result: Any) -> Any:
    """A library result as the API sends it: through JSON."""
    return json.loads(json.dumps(result.to_dict()))


def ok(response: Any) -> Any:
    """The JSON of a 200 answer (the test fails, showing the body, on any other status)."""
    assert response.status_code == 200, response.text
    return response.json()


def refused(response: Any, status: int, *words: str) -> dict[str, Any]:
    """The JSON error body of a refusal with `status`: error, message and a hint, the `words` among them."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"error", "message", "hint"} and body["hint"]
    text = body["message"] + " " + body["hint"]
    assert all(w in text for w in words), body
    return body
