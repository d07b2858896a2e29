"""A small Hugging Face Hub on 127.0.0.1, for the tests of fetching: it speaks the endpoints `huggingface_hub` itself
calls, so the real client (pointed at it with HF_ENDPOINT) runs unchanged against it.

- `GET /api/models/{repo}/revision/{revision}`: the model's info (`sha`: the commit the revision names, `siblings`);
- `GET /api/models/{repo}/tree/{commit}`: its files (size, git blob id, and `lfs` for the weights);
- `HEAD`/`GET /{repo}/resolve/{commit}/{file}`: a file, with `X-Repo-Commit` and `ETag`; LFS files (safetensors,
  pickles) answer with a redirect to a CDN host (`localhost`, another name for the same server), with
  `X-Linked-Etag` (their sha256) and `X-Linked-Size`, as the hub's CDN redirect does;
- errors as the hub gives them: `X-Error-Code` RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo (401 without
  the token).

Every request is recorded (`requests`). `drop_mid_file` makes the server die halfway through the next LFS file it
sends: it closes the connection and stops listening, as a killed server does. `cut_every_file` makes it cut every LFS
file it sends half-way (whatever Range was asked for: each try starts over) and go on answering.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".bin", ".h5", ".onnx")


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Repo:
    """A model repository: revision name (branch or tag) -> (commit, files)."""

    revisions: dict[str, tuple[str, dict[str, bytes]]]
    gated: bool = False

    def at(self, revision: str) -> tuple[str, dict[str, bytes]] | None:
        if revision in self.revisions:
            return self.revisions[revision]
        return next((found for found in self.revisions.values() if found[0] == revision), None)


def folder_files(folder: Path, extra: dict[str, bytes] | None = None) -> dict[str, bytes]:
    """A model folder's files as a repository holds them, with `extra` files (path in the repository -> content)."""
    return {**{p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}, **(extra or {})}


@dataclass
class LocalHub:
    repos: dict[str, Repo]
    token: str = "hf_test_token"
    requests: list[tuple[str, str]] = field(default_factory=list)
    drop_mid_file: bool = False
    cut_every_file: bool = False
    _server: ThreadingHTTPServer | None = None
    _active: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self, home: Path, **more: str) -> dict[str, str]:
        """The environment of a client of this hub, its cache in `home` (HF_HOME)."""
        return {"HF_ENDPOINT": self.url, "HF_HOME": str(home), **more}

    def start(self) -> LocalHub:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # a connection per request: a stopped server answers nothing more

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return None

            def do_HEAD(self) -> None:
                hub._handle(self, head=True)

            def do_GET(self) -> None:
                hub._handle(self, head=False)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # --- requests

    def _handle(self, handler: BaseHTTPRequestHandler, *, head: bool) -> None:
        with self._lock:
            self.requests.append((handler.command, handler.path))
            self._active += 1
        try:
            self._answer(handler, head=head)
        finally:
            with self._lock:
                self._active -= 1

    def _answer(self, handler: BaseHTTPRequestHandler, *, head: bool) -> None:
        path = urlsplit(handler.path).path
        if path.startswith("/api/models/"):
            rest = path[len("/api/models/") :]
            for kind in ("/revision/", "/tree/"):
                if kind in rest:
                    repo_id, _, revision = rest.rpartition(kind)
                    return self._api(handler, unquote(repo_id), unquote(revision), kind.strip("/"))
            return self._error(handler, 404, "RepoNotFound", "Repository not found")
        if path.startswith("/cdn/"):
            return self._cdn(handler, path[len("/cdn/") :], head=head)
        if "/resolve/" in path:
            repo_id, _, rest = path.lstrip("/").partition("/resolve/")
            revision, _, filename = rest.partition("/")
            return self._resolve(handler, unquote(repo_id), unquote(revision), unquote(filename), head=head)
        return self._error(handler, 404, None, "Not found")

    def _api(self, handler: BaseHTTPRequestHandler, repo_id: str, revision: str, kind: str) -> None:
        repo = self.repos.get(repo_id)
        if repo is None:
            return self._error(handler, 404, "RepoNotFound", "Repository not found")
        found = repo.at(revision)
        if found is None:
            return self._error(handler, 404, "RevisionNotFound", "Invalid rev id: " + revision)
        commit, files = found
        if kind == "revision":
            body: Any = {
                "id": repo_id,
                "sha": commit,
                "private": False,
                "gated": "manual" if repo.gated else False,
                "siblings": [{"rfilename": name} for name in files],
            }
        else:
            body = [self._tree_entry(name, data) for name, data in files.items()]
        self._send(handler, 200, json.dumps(body).encode(), {"Content-Type": "application/json"})

    @staticmethod
    def _tree_entry(name: str, data: bytes) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": "file", "path": name, "size": len(data), "oid": git_blob_id(data)}
        if name.endswith(LFS_SUFFIXES):
            entry["lfs"] = {"oid": sha256(data), "size": len(data), "pointerSize": 134}
        return entry

    def _resolve(self, handler: BaseHTTPRequestHandler, repo_id: str, revision: str, name: str, *, head: bool) -> None:
        repo = self.repos.get(repo_id)
        if repo is None:
            return self._error(handler, 404, "RepoNotFound", "Repository not found")
        found = repo.at(revision)
        if found is None:
            return self._error(handler, 404, "RevisionNotFound", "Invalid rev id: " + revision)
        commit, files = found
        if repo.gated and handler.headers.get("authorization") != f"Bearer {self.token}":
            message = f"Access to model {repo_id} is restricted. You must have access to it and be authenticated."
            return self._error(handler, 401, "GatedRepo", message, {"X-Repo-Commit": commit})
        if name not in files:
            return self._error(handler, 404, "EntryNotFound", "Entry not found", {"X-Repo-Commit": commit})
        data = files[name]
        headers = {"X-Repo-Commit": commit, "ETag": f'"{git_blob_id(data)}"'}
        if name.endswith(LFS_SUFFIXES):  # to the CDN, another host name, as the hub redirects LFS files
            headers.update(
                {
                    "Location": f"http://localhost:{self.port}/cdn/{sha256(data)}",
                    "X-Linked-Etag": f'"{sha256(data)}"',
                    "X-Linked-Size": str(len(data)),
                }
            )
            return self._send(handler, 302, b"", headers)
        return self._send(handler, 200, data, headers, head=head)

    def _cdn(self, handler: BaseHTTPRequestHandler, digest: str, *, head: bool) -> None:
        blobs = {sha256(d): d for repo in self.repos.values() for _, fs in repo.revisions.values() for d in fs.values()}
        if digest not in blobs:
            return self._error(handler, 404, None, "No such object")
        data = blobs[digest]
        if head or not (self.drop_mid_file or self.cut_every_file):
            return self._send(handler, 200, data, {"ETag": f'"{digest}"'}, head=head)
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data[: len(data) // 2])
        handler.wfile.flush()
        if self.drop_mid_file:
            self._die()  # else the connection closes (HTTP/1.0) and the next request is answered the same way

    def _die(self) -> None:
        """Stop listening once every other request is answered (as a server killed mid-file answers nothing more)."""
        deadline, quiet_since = time.monotonic() + 3, time.monotonic()
        while time.monotonic() < deadline and time.monotonic() - quiet_since < 0.2:
            with self._lock:
                if self._active > 1:
                    quiet_since = time.monotonic()
            time.sleep(0.02)
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str], *, head: bool = False
    ) -> None:
        handler.send_response(status)
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if not head:
            handler.wfile.write(body)

    def _error(
        self,
        handler: BaseHTTPRequestHandler,
        status: int,
        code: str | None,
        message: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        extra = dict(headers or {})
        if code is not None:
            extra["X-Error-Code"] = code
        extra["X-Error-Message"] = message
        extra["Content-Type"] = "application/json"
        self._send(handler, status, json.dumps({"error": message}).encode(), extra, head=handler.command == "HEAD")
