"""Request bodies read within bounds: `BodyLimit`, the ASGI middleware that refuses a body too large (413) or too slow
to arrive (408) before anything parses it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .responses import dumps

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyLimit:
    """ASGI middleware: a request body larger than `max_bytes` gets a 413 JSON error before anything parses it."""

    def __init__(self, app: ASGIApp, max_bytes: int, seconds: float = 15.0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.seconds = seconds  # the whole body must arrive within this (408 after)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send, int(declared))
            return
        import anyio

        chunks, size, more = [], 0, True
        with anyio.move_on_after(self.seconds) as timer:
            while more:  # read the whole (bounded) body, then replay it to the app
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_bytes:
                    await self._refuse(send, size)
                    return
                chunks.append(chunk)
                more = message.get("more_body", False)
        if timer.cancelled_caught:
            await self._respond(
                send,
                408,
                "RequestTimeout",
                f"The request body did not arrive within {self.seconds:g} s ({size:,} bytes came).",
                "Send the whole request at once.",
            )
            return
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send, size: int) -> None:
        message = f"The request body has at least {size:,} bytes; this server reads at most {self.max_bytes:,}."
        await self._respond(send, 413, "RequestTooLargeError", message, "Send a shorter text.")

    @staticmethod
    async def _respond(send: Send, status: int, error: str, message: str, hint: str) -> None:
        body = dumps({"error": error, "message": message, "hint": hint})
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if status == 408:
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
