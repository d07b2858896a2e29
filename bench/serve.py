"""The web explorer's speed: neighbours API latency under 20 concurrent clients, and the first page load.

`bertlens serve` runs in its own process (as a user runs it, neighbour table built at startup), on a free loopback
port. Then, side by side:

* neighbours API: 20 clients on keep-alive connections send POST /api/neighbors as fast as they get answers, bounded
  by a request count and a time limit (whichever comes first), after a warm-up. Two mixes: token queries (answered
  from the neighbour table) and centred queries (a scan of the adjusted matrix). Reported: median, p90, p99, max
  latency and requests per second. Beside it, the same queries as in-process library calls (`neighbors_many` with
  the same kind of index): the floor that HTTP, JSON and the thread pool add to.
* first page load on loopback: plain HTTP (a fresh connection fetching the page and its three assets, plotly.min.js
  included), and headless Chromium with an empty cache (navigation timing's loadEventEnd; then the time until the
  page has fetched its models, drawn the first view, and loaded plotly.js, which it fetches after the load event).

    python bench/serve.py                       # defaults: 20 clients, at most 6,000 requests or 20 s per mix
    python bench/serve.py --requests 20000 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bertlens.web.browser import CHROMIUM, launch


def start_server(cache_dir: str | None) -> tuple[subprocess.Popen, str]:
    """`bertlens serve --port 0` in a child process; returns it and its URL once it listens."""
    command = [sys.executable, "-m", "bertlens", "serve", "--port", "0"]
    if cache_dir:
        command += ["--cache-dir", cache_dir]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()  # "bertlens: serving … at http://127.0.0.1:PORT/ …", printed once loaded
    match = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
    if not match:
        process.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    url = match.group(1)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the socket is bound before loading; wait until it answers
        try:
            status, _ = get(url + "api/models")
            if status == 200:
                return process, url
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the server did not answer")


def get(url: str) -> tuple[int, bytes]:
    host, port = re.match(r"http://([^:/]+):(\d+)", url).groups()  # type: ignore[union-attr]
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.request("GET", url.split(f":{port}", 1)[1] or "/")
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response.status, body


async def _client(host: str, port: int, bodies: list[bytes], counter, total: int, deadline: float, out: list) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while True:
            i = next(counter)
            if i >= total or time.perf_counter() > deadline:
                return
            body = bodies[i % len(bodies)]
            head = (
                f"POST /api/neighbors HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode()
            start = time.perf_counter()
            writer.write(head + body)
            response = await reader.readuntil(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length: *(\d+)", response).group(1))  # type: ignore[union-attr]
            payload = await reader.readexactly(length)
            out.append(time.perf_counter() - start)
            if not response.startswith(b"HTTP/1.1 200"):
                raise SystemExit(f"request failed: {response[:40]!r} {payload[:200]!r}")
    finally:
        writer.close()
        await writer.wait_closed()  # closed before the next run opens its own (the server admits 32 connections)


def load_test(url: str, bodies: list[bytes], clients: int, total: int, seconds: float) -> dict[str, float]:
    """`clients` keep-alive connections sending `total` requests at most, for `seconds` at most."""
    host, port = re.match(r"http://([^:/]+):(\d+)", url).groups()  # type: ignore[union-attr]

    async def run(count: int, limit: float) -> tuple[list[float], float]:
        counter = itertools.count()
        latencies: list[float] = []
        start = time.perf_counter()
        deadline = start + limit
        await asyncio.gather(
            *(_client(host, int(port), bodies, counter, count, deadline, latencies) for _ in range(clients))
        )
        return latencies, time.perf_counter() - start

    asyncio.run(run(min(500, total), seconds))  # warm-up: connections, thread pool, caches
    latencies, elapsed = asyncio.run(run(total, seconds))
    return summary(latencies, elapsed)


def summary(latencies: list[float], elapsed: float) -> dict[str, float]:
    ordered = sorted(latencies)

    def quantile(q: float) -> float:
        return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {
        "requests": len(ordered),
        "median_ms": 1000 * statistics.median(ordered),
        "p90_ms": quantile(0.90),
        "p99_ms": quantile(0.99),
        "max_ms": 1000 * ordered[-1],
        "per_second": len(ordered) / elapsed,
    }


def library_latency(queries: list[dict], repeat: int, cache_dir: str | None) -> dict[str, float]:
    """The same queries as in-process library calls, one at a time: what the API adds to."""
    from bertlens import load_model
    from bertlens.similarity.index import Adjustment, open_index
    from bertlens.similarity.nearest import neighbors_many

    model = load_model()
    index = open_index(model, cache_dir, precompute=True)
    times = []
    start_all = time.perf_counter()
    for i in range(repeat):
        query = queries[i % len(queries)]
        adjustment = Adjustment(center=query.get("center", False))
        start = time.perf_counter()
        neighbors_many(model, query["queries"], query.get("k", 10), adjustment=adjustment, index=index).to_dict()
        times.append(time.perf_counter() - start)
    return summary(times, time.perf_counter() - start_all)


def page_load_http(url: str, repeat: int) -> float:
    """Median seconds to fetch the page and its assets over a fresh connection, one after another."""
    paths = ["/", "/static/style.css", "/static/plotly.min.js", "/static/app.js", "/api/models"]
    host, port = re.match(r"http://([^:/]+):(\d+)", url).groups()  # type: ignore[union-attr]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        for path in paths:
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
            assert response.status == 200, path
        connection.close()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def page_load_chromium(url: str, repeat: int) -> dict[str, float] | None:
    """Median navigation-timing loadEventEnd, and time until the first view is drawn, each in a cold browser context."""
    if not os.path.exists(CHROMIUM):
        return None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    loads, ready, first_view, plotly = [], [], [], []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        for _ in range(repeat):
            context = browser.new_context()  # empty cache every time
            page = context.new_page()
            page.goto(url + "#tokens", wait_until="load")
            page.wait_for_selector("body[data-ready]")
            page.wait_for_selector("#tokens-result .chip")
            page.wait_for_function("performance.getEntriesByName('bertlens:plotly').length > 0")
            timing = page.evaluate(
                """() => {
                    const nav = performance.getEntriesByType("navigation")[0];
                    const mark = (name) => performance.getEntriesByName(name)[0]?.startTime ?? null;
                    return {
                        load: nav.loadEventEnd, ready: mark("bertlens:ready"), view: mark("bertlens:view"),
                        plotly: mark("bertlens:plotly"),
                    };
                }"""
            )
            plotly.append(timing["plotly"] / 1000)
            loads.append(timing["load"] / 1000)
            if timing["ready"] is not None:
                ready.append(timing["ready"] / 1000)
            if timing["view"] is not None:
                first_view.append(timing["view"] / 1000)
            context.close()
        browser.close()
    return {
        "load_s": statistics.median(loads),
        "ready_s": statistics.median(ready) if ready else float("nan"),
        "first_view_s": statistics.median(first_view) if first_view else float("nan"),
        "plotly_s": statistics.median(plotly),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=6000, help="most requests per mix")
    parser.add_argument("--seconds", type=float, default=20, help="most seconds per mix")
    parser.add_argument("--page-loads", type=int, default=5)
    parser.add_argument("--cache-dir", help="the similarity cache (default: bertlens' own)")
    args = parser.parse_args()

    from bertlens import load_model

    vocabulary = load_model().vocabulary
    words = [
        token
        for token in (vocabulary.id_to_token(i) for i in range(2000, 30000, 97))
        if token and token.isalpha() and not token.startswith("##")
    ][:200]
    mixes = {
        "token queries (neighbour table)": [{"queries": [w], "k": 10} for w in words],
        "centred queries (scan)": [{"queries": [w], "k": 10, "center": True} for w in words],
    }

    started = time.perf_counter()
    process, url = start_server(args.cache_dir)
    print(f"server up at {url} in {time.perf_counter() - started:.1f} s (models loaded, neighbour table ready)")
    try:
        rows = []
        for name, queries in mixes.items():
            bodies = [json.dumps(q).encode() for q in queries]
            api = load_test(url, bodies, args.clients, args.requests, args.seconds)
            library = library_latency(queries, min(args.requests, 2000), args.cache_dir)
            rows.append((name, api, library))
        http_load = page_load_http(url, args.page_loads)
        chromium = page_load_chromium(url, args.page_loads)
    finally:
        process.terminate()
        process.wait(timeout=10)

    print(f"\nneighbours API, {args.clients} concurrent clients on loopback (keep-alive), k = 10:\n")
    print("| queries | what | requests | median ms | p90 ms | p99 ms | max ms | requests/s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, api, library in rows:
        pairs = ((f"HTTP API, {args.clients} clients", api), ("library call, in-process, one at a time", library))
        for what, r in pairs:
            print(
                f"| {name} | {what} | {r['requests']:,} | {r['median_ms']:.2f} | {r['p90_ms']:.2f} | "
                f"{r['p99_ms']:.2f} | {r['max_ms']:.2f} | {r['per_second']:,.0f} |"
            )
    print("\nfirst page load on loopback (page + style.css + plotly.min.js + app.js + /api/models):\n")
    print(f"- plain HTTP, one fresh connection, median of {args.page_loads}: {1000 * http_load:.0f} ms")
    if chromium is None:
        print("- Chromium: skipped (no /usr/bin/chromium or no playwright)")
    else:
        print(
            f"- headless Chromium, empty cache, median of {args.page_loads}: load event {1000 * chromium['load_s']:.0f}"
            f" ms; models fetched {1000 * chromium['ready_s']:.0f} ms; first view drawn "
            f"{1000 * chromium['first_view_s']:.0f} ms; plotly.js loaded (fetched after the load event) "
            f"{1000 * chromium['plotly_s']:.0f} ms"
        )
    size = Path(__file__).resolve().parents[1] / "bertlens" / "web" / "static"
    print(f"\n(page assets in bertlens/web/static: {sum(f.stat().st_size for f in size.iterdir()) / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
