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

With `--corpus`, the Corpus view's API instead: `bertlens serve --index DIR` on an occurrence index of `--rows` word
occurrences (default 400,000) of the default model, and 20 clients sending a mixed load: search from an example
sentence (a forward pass), search from an occurrence of the index (none), any-word search, and senses (k-means on up
to 500 occurrences), in the proportions of `--mix`. Reported per kind: requests, errors (any answer but 200),
median, p99 and max latency; and search's own warm median as in-process library calls (`search_occurrences` on the
open index, one at a time, after a warm-up), from a sentence and from an occurrence. The index is built once from the
bundled sample corpus (WikiText-2 validation), then WikiText-2 test and enwiki-2015 from ../shared/data as far as
needed, texts taken in order until their words reach `--rows`; it is kept in `--index-dir` (default: a folder named
after the size in the system's temporary folder) and reused by later runs.

    python bench/serve.py --corpus                              # 400,000 rows, 20 clients, 60 s
    python bench/serve.py --corpus --rows 20000 --seconds 10    # a quick end-to-end check
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import itertools
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/browser.py: the Chromium finder
from browser import chromium, launch


def start_server(cache_dir: str | None, extra: tuple[str, ...] = ()) -> tuple[subprocess.Popen, str]:
    """`bertlens serve --port 0 EXTRA` in a child process; returns it and its URL once it listens."""
    command = [sys.executable, "-m", "bertlens", "serve", "--port", "0", *extra]
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
    if chromium() is None:
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


# --- the Corpus view under a mixed load (--corpus) ------------------------------------------------------------------

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "corpus"
MIX = "search=4,occurrence=3,any=1,senses=2"  # kind=weight: the share of each kind of request in the load
KINDS = {
    "search": "search from a sentence (forward pass)",
    "occurrence": "search from an occurrence",
    "any": "any-word search from a sentence",
    "senses": "senses (k auto, up to 500 occurrences)",
}


def corpus_sources() -> list[Path | str]:
    """Where the index's texts come from, in order: the bundled sample, then the shared WikiText-2 test split and
    enwiki-2015 where they are present."""
    found: list[Path | str] = ["sample"]
    found += [p for p in (SHARED / "wikitext-2-raw" / "wiki.test.raw", SHARED / "enwiki-2015") if p.exists()]
    return found


def build_corpus_index(rows: int, folder: Path) -> Path:
    """An index of at least `rows` word occurrences in `folder`/index (the texts in `folder`/corpus.txt): reused when
    complete, resumed when interrupted, else built."""
    from bertlens import load_model
    from bertlens.core.corpus import iter_texts
    from bertlens.core.errors import InputError
    from bertlens.core.tokens import text_words
    from bertlens.occurrences.build import index_corpus
    from bertlens.occurrences.store import open_index

    index = folder / "index"
    try:
        opened = open_index(index)
        print(f"index: {index} ({opened.rows:,} rows of {opened.text_count:,} texts), reused")
        return index
    except InputError:
        pass
    model = load_model()
    corpus = folder / "corpus.txt"
    resume = (index / "bertlens-index.json").exists() and corpus.exists()
    if not resume:
        folder.mkdir(parents=True, exist_ok=True)
        words, texts = 0, []
        for source in corpus_sources():
            for text in iter_texts(source):
                texts.append(text.text)
                words += len(text_words(model, [text.text])[0])
                if words >= rows:
                    break
            if words >= rows:
                break
        if words < rows:
            raise SystemExit(f"the corpora hold {words:,} words, fewer than --rows {rows:,}")
        corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
        print(f"corpus: {len(texts):,} texts, {words:,} words -> {corpus}")
    started = time.perf_counter()
    built = index_corpus(model, corpus, index, resume=resume, progress=True)
    print(f"index: {built.out} ({built.rows:,} rows) built in {time.perf_counter() - started:.0f} s")
    return index


def literal(text: str) -> str:
    """`text` inside an example sentence: its backslashes and brackets escaped (marked.py)."""
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def corpus_requests(index: Path, count: int, seed: int) -> dict[str, list[bytes]]:
    """Request bodies of each kind, from occurrences of the index picked at random (seeded): their sentence with the
    word marked, their (text id, position), and frequent words for senses."""
    from bertlens.occurrences.marked import snippet
    from bertlens.occurrences.store import open_index

    opened = open_index(index)
    rng = random.Random(seed)
    table = opened.occurrences.search().select(["text_id", "position", "start", "end", "word", "key"]).limit(None)
    data = table.to_arrow().to_pydict()
    frequency: dict[str, int] = defaultdict(int)
    for key in data["key"]:
        frequency[key] += 1
    rows = [i for i in range(len(data["key"])) if data["word"][i].isalpha() and frequency[data["key"][i]] >= 3]
    picked = rng.sample(rows, min(count, len(rows)))
    texts = opened.texts_of([data["text_id"][i] for i in picked])
    sentences = []
    for i in picked:
        text = texts[data["text_id"][i]][2]
        piece, start, end = snippet(text, data["start"][i], data["end"][i])
        sentences.append(f"{literal(piece[:start])}[{literal(piece[start:end])}]{literal(piece[end:])}")
    frequent = sorted((k for k, n in frequency.items() if n >= 30 and k.isalpha()), key=lambda k: -frequency[k])
    words = rng.sample(frequent[:2000], min(count, len(frequent[:2000])))
    return {
        "search": [json.dumps({"example": s, "k": 10}).encode() for s in sentences],
        "occurrence": [
            json.dumps({"occurrence": [data["text_id"][i], data["position"][i]], "k": 10}).encode() for i in picked
        ],
        "any": [json.dumps({"example": s, "k": 10, "any_word": True}).encode() for s in sentences],
        "senses": [json.dumps({"word": w}).encode() for w in words],
    }


def mixed_load(
    url: str, requests: dict[str, list[bytes]], mix: dict[str, int], clients: int, total: int, seconds: float
) -> tuple[dict[str, list[float]], dict[str, int], float]:
    """`clients` keep-alive connections, each sending requests of the kinds in `mix` (shuffled, seeded) back to back,
    `total` at most or for `seconds` at most: each kind's latencies, its errors (not 200), and the time taken."""
    host, port = re.match(r"http://([^:/]+):(\d+)", url).groups()  # type: ignore[union-attr]
    plan = [kind for kind, weight in mix.items() for _ in range(weight)]
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)

    async def client(number: int, counter: Any, deadline: float) -> None:
        rng = random.Random(number)
        order = plan * 4
        rng.shuffle(order)
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            for step in itertools.count():
                i = next(counter)
                if i >= total or time.perf_counter() > deadline:
                    return
                kind = order[step % len(order)]
                bodies = requests[kind]
                body = bodies[rng.randrange(len(bodies))]
                path = "/api/senses" if kind == "senses" else "/api/search"
                head = (
                    f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n"
                ).encode()
                start = time.perf_counter()
                writer.write(head + body)
                response = await reader.readuntil(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length: *(\d+)", response).group(1))  # type: ignore[union-attr]
                await reader.readexactly(length)
                latencies[kind].append(time.perf_counter() - start)
                if not response.startswith(b"HTTP/1.1 200"):
                    errors[kind] += 1
        finally:
            writer.close()
            await writer.wait_closed()

    async def run() -> float:
        start = time.perf_counter()
        counter = itertools.count()
        await asyncio.gather(*(client(n, counter, start + seconds) for n in range(clients)))
        return time.perf_counter() - start

    elapsed = asyncio.run(run())
    return latencies, errors, elapsed


def search_warm_median(index: Path, requests: dict[str, list[bytes]], repeat: int, warmup: int) -> dict[str, float]:
    """search_occurrences' own median (ms), warm, one call at a time, from a sentence and from an occurrence."""
    from bertlens import load_model
    from bertlens.occurrences.search import SearchOptions, search_occurrences
    from bertlens.occurrences.store import open_index

    model = load_model()
    opened = open_index(index, model=model)
    medians = {}
    for kind in ("search", "occurrence"):
        bodies = [json.loads(b) for b in requests[kind]]
        times = []
        for i in range(warmup + repeat):
            body = bodies[i % len(bodies)]
            occurrence = tuple(body["occurrence"]) if "occurrence" in body else None
            options = SearchOptions(k=body["k"], occurrence=occurrence)
            start = time.perf_counter()
            search_occurrences(model, opened, body.get("example"), options=options)
            if i >= warmup:
                times.append(time.perf_counter() - start)
        medians[kind] = 1000 * statistics.median(times)
    return medians


def corpus_main(args: argparse.Namespace) -> int:
    mix = {kind: int(weight) for kind, weight in (part.split("=") for part in args.mix.split(","))}
    unknown = set(mix) - set(KINDS)
    if unknown or not mix or min(mix.values()) < 0 or not sum(mix.values()):
        raise SystemExit(f"--mix takes KIND=WEIGHT,… with kinds {', '.join(KINDS)}; got {args.mix!r}")
    mix = {kind: weight for kind, weight in mix.items() if weight}
    folder = Path(args.index_dir) if args.index_dir else Path(tempfile.gettempdir()) / f"bertlens-serve-{args.rows}"
    index = build_corpus_index(args.rows, folder)
    requests = corpus_requests(index, 500, seed=0)
    warm = search_warm_median(index, requests, repeat=args.search_repeat, warmup=20)
    started = time.perf_counter()
    process, url = start_server(None, ("--index", str(index), "--no-precompute"))
    print(f"server up at {url} in {time.perf_counter() - started:.1f} s (model and index opened)")
    try:
        mixed_load(url, requests, mix, args.clients, min(200, args.requests), args.seconds)  # warm-up
        latencies, errors, elapsed = mixed_load(url, requests, mix, args.clients, args.requests, args.seconds)
    finally:
        process.terminate()
        process.wait(timeout=10)
    from bertlens.occurrences.store import open_index

    opened = open_index(index)
    total = sum(len(v) for v in latencies.values())
    print(
        f"\nCorpus API, {args.clients} concurrent clients on loopback (keep-alive), an index of {opened.rows:,} rows "
        f"({opened.text_count:,} texts), mix {args.mix}: {total:,} requests in {elapsed:.1f} s "
        f"({total / elapsed:,.1f}/s), {sum(errors.values())} errors\n"
    )
    print("| request | requests | errors | median ms | p99 ms | max ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind in mix:
        found = sorted(latencies.get(kind, []))
        if not found:
            print(f"| {KINDS[kind]} | 0 | {errors.get(kind, 0)} | | | |")
            continue
        p99 = found[min(len(found) - 1, int(0.99 * len(found)))]
        print(
            f"| {KINDS[kind]} | {len(found):,} | {errors.get(kind, 0)} | {1000 * statistics.median(found):.1f} | "
            f"{1000 * p99:.1f} | {1000 * found[-1]:.1f} |"
        )
    print(
        f"\nsearch_occurrences alone, warm, in-process, one at a time (median of {args.search_repeat}): from a "
        f"sentence {warm['search']:.1f} ms, from an occurrence {warm['occurrence']:.1f} ms"
    )
    return 0 if not sum(errors.values()) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, help="most requests per mix (default 6,000; --corpus: 100,000)")
    parser.add_argument("--seconds", type=float, help="most seconds per mix (default 20; --corpus: 60)")
    parser.add_argument("--page-loads", type=int, default=5)
    parser.add_argument("--cache-dir", help="the similarity cache (default: bertlens' own)")
    parser.add_argument("--corpus", action="store_true", help="the Corpus view's API under a mixed load instead")
    parser.add_argument("--rows", type=int, default=400_000, help="--corpus: the index's word occurrences (at least)")
    parser.add_argument("--index-dir", help="--corpus: where the index is kept and reused (default: the temp folder)")
    parser.add_argument("--mix", default=MIX, help=f"--corpus: kinds of request and their weights (default {MIX})")
    parser.add_argument("--search-repeat", type=int, default=200, help="--corpus: timed library searches per kind")
    args = parser.parse_args()
    if args.corpus:
        args.requests = 100_000 if args.requests is None else args.requests
        args.seconds = 60.0 if args.seconds is None else args.seconds
        return corpus_main(args)
    args.requests = 6000 if args.requests is None else args.requests
    args.seconds = 20.0 if args.seconds is None else args.seconds

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
        print("- Chromium: skipped (no Chromium found or no playwright)")
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
