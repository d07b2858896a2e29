"""Watch the input embeddings form: what the matrix looks like at every checkpoint, and a report over training.

At each checkpoint the watcher records, for the input matrix (`word_embeddings`) as it is at that step:

- the nearest tokens of every probe word (`similarity.neighbors_many`, cosine, specials and [unused] rows left out);
- the word-similarity benchmarks' Spearman correlation (`evaluate.evaluate_pairs`, each word's pieces mean-pooled);
- the anisotropy baseline: the mean cosine of random pairs of rows (how high "high" is);
- the distribution of row norms (percentiles and a histogram);
- the probe words' (pooled) rows themselves, for the trajectory plot.

`watch_report` turns these records (plus the training log and an optional word2vec baseline) into `report.json` and
a self-contained `report.html`: plots are matplotlib SVG inlined in the page, nothing is fetched from anywhere. The
probe words' rows from every checkpoint are projected together onto one shared 2-D plane (PCA of all of them at unit
length), so their movement between checkpoints is comparable.

`word2vec_baseline` trains gensim's word2vec (skip-gram) on the same corpus for a given wall-clock budget (by default
the run's own training time), with the same benchmarks, so MLM-trained input rows stand beside a classic method.
"""

from __future__ import annotations

import html
import io
import json
import math
import os
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.corpus import corpus_path
from ..core.errors import InputError
from ..core.outputs import make_folder, output_path, replace_text, write_error
from ..core.results import Result, table
from .config import PretrainConfig

WATCH_FILE = "watch.jsonl"
WORD2VEC_FILE = "word2vec.json"
_PERCENTILES = (0, 5, 25, 50, 75, 95, 100)
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")


def matrix_snapshot(model: Any, probes: Sequence[str], benchmarks: Sequence[str], k: int = 8) -> dict[str, Any]:
    """What the input matrix of a bertlens `Model` looks like now (see the module docstring); JSON-ready."""
    from ..embeddings.static import word_vector
    from ..similarity.evaluate import evaluate_pairs
    from ..similarity.index import Adjustment, TokenFilter, open_index
    from ..similarity.nearest import neighbors_many

    index = open_index(model)
    allowed = index.allowed(TokenFilter())
    rows = index.raw.rows  # (vocab, E)
    norms = np.linalg.norm(rows[allowed].astype(np.float64), axis=1)  # (allowed,)
    counts, edges = np.histogram(norms, bins=30)
    found_probes: dict[str, list[float]] = {}
    neighbours: dict[str, list[tuple[str, float]]] = {}
    usable = [p for p in probes if p.strip()]
    if usable:
        batch = neighbors_many(model, usable, k, index=index)
        for probe, result in zip(usable, batch.results, strict=True):
            neighbours[probe] = [(n.token, round(n.score, 4)) for n in result.neighbors]
            found_probes[probe] = word_vector(model, probe).vector.astype(float).tolist()
    scores: dict[str, dict[str, Any]] = {}
    for name in benchmarks:
        evaluation = evaluate_pairs(model, name)
        scores[name] = {
            "spearman": evaluation.spearman,
            "pairs_used": evaluation.pairs_used,
            "pairs_total": evaluation.pairs_total,
            "pairs_unknown": evaluation.pairs_unknown,
        }
    return {
        "baseline": index.baseline(Adjustment(), TokenFilter()),
        "norms": {f"p{p}": float(v) for p, v in zip(_PERCENTILES, np.percentile(norms, _PERCENTILES), strict=True)}
        | {"mean": float(norms.mean())},
        "norm_histogram": {"edges": edges.tolist(), "counts": counts.tolist()},
        "benchmarks": scores,
        "neighbors": neighbours,
        "probes": found_probes,
    }


class Watcher:
    """Appends one record per checkpoint to `training/watch.jsonl` during pre-training."""

    def __init__(self, config: PretrainConfig, tokenizer: Any, file: Path) -> None:
        self.config = config
        self.tokenizer = tokenizer  # tokenizers.Tokenizer
        self.file = file

    def record(self, model: Any, *, step: int, tokens: int, loss: float | None, perplexity: float | None) -> None:
        """Snapshot the input matrix of the (training) torch model; its train/eval mode is left as it was."""
        from ..core.model import load_model

        was_training = model.training
        try:
            snapshot = matrix_snapshot(
                load_model(model, tokenizer=self.tokenizer), self.config.probe_words, self.config.watch_benchmarks
            )
        finally:
            model.train(was_training)
        record = {"step": step, "tokens": tokens, "loss": loss, "perplexity": perplexity, **snapshot}
        with self.file.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")


# --- word2vec baseline ----------------------------------------------------------------------------------------------


def _words(corpus: Path, lowercase: bool, max_texts: int | None) -> Iterator[list[str]]:
    from ..core.corpus import iter_texts, sentences

    for count, text in enumerate(iter_texts(corpus)):
        if max_texts is not None and count >= max_texts:
            return
        for sentence in sentences(text.text):
            words = _WORD.findall(sentence.lower() if lowercase else sentence)
            if words:
                yield words


@dataclass(frozen=True, repr=False)
class Word2VecBaseline(Result):
    """gensim word2vec trained on the same corpus for a wall-clock budget, scored on the same benchmarks."""

    corpus: str
    seconds_budget: float
    seconds: float  # wall-clock time used, vocabulary building included
    words_trained: int  # running words fed to training (epochs over the corpus included)
    vocabulary: int
    vector_size: int
    threads: int
    benchmarks: dict[str, dict[str, Any]]  # name -> spearman, pairs_used, pairs_total

    def __repr__(self) -> str:
        return f"Word2VecBaseline({self.words_trained} words in {self.seconds:.0f} s)"

    def to_table(self) -> str:
        rows = [(n, s["spearman"], s["pairs_used"], s["pairs_total"]) for n, s in self.benchmarks.items()]
        head = (
            f"word2vec (skip-gram, {self.vector_size} dims, {self.threads} threads) on {self.corpus}: "
            f"{self.words_trained} words in {self.seconds:.0f} s, {self.vocabulary} words kept"
        )
        return "\n".join([head, table(["benchmark", "spearman", "pairs used", "pairs"], rows)])


def word2vec_baseline(
    corpus: str | os.PathLike[str],
    seconds: float,
    *,
    benchmarks: Sequence[str] = PretrainConfig.watch_benchmarks,
    vector_size: int = 128,
    threads: int = 1,
    lowercase: bool = True,
    max_texts: int | None = None,
    min_count: int = 5,
    seed: int = 0,
) -> Word2VecBaseline:
    """Train skip-gram word2vec on `corpus` until `seconds` of wall-clock time are spent; score it.

    The vocabulary pass counts against the budget. Training then goes through the corpus in chunks of sentences,
    epoch after epoch, with the learning rate falling linearly with the time spent (0.025 to 0.0001).
    """
    try:
        from gensim.models import Word2Vec
    except ImportError:
        raise InputError("The word2vec baseline needs gensim.", "pip install gensim") from None
    finite = isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and math.isfinite(seconds)
    if not finite or seconds <= 0:
        raise InputError(f"The word2vec budget must be a positive number of seconds, got {seconds!r}.", "Example: 300.")
    for name, value in (("vector_size", vector_size), ("threads", threads), ("min_count", min_count)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1 << 16:
            raise InputError(f"{name} must be a whole number from 1 to 65,536, got {value!r}.", "Example: 1.")
    if max_texts is not None and (isinstance(max_texts, bool) or not isinstance(max_texts, int) or max_texts < 1):
        raise InputError(f"max_texts must be a whole number of at least 1, got {max_texts!r}.", "Example: 10000.")
    source = corpus_path(corpus)
    start = time.perf_counter()
    model = Word2Vec(vector_size=vector_size, window=5, min_count=min_count, sg=1, workers=threads, seed=seed)
    model.build_vocab(_words(source, lowercase, max_texts))
    if not model.wv.key_to_index:
        raise InputError(f"No word of {source} occurs {min_count} times.", "Give a larger corpus.")
    fed = 0
    done = False
    while not done:
        chunk: list[list[str]] = []
        for words in _words(source, lowercase, max_texts):
            chunk.append(words)
            if len(chunk) == 20000:
                done = _train_chunk(model, chunk, start, seconds)
                fed += sum(len(c) for c in chunk)
                chunk = []
                if done:
                    break
        if chunk and not done:
            done = _train_chunk(model, chunk, start, seconds)
            fed += sum(len(c) for c in chunk)
    vectors = model.wv
    scores = _score_vectors({w: vectors[w] for w in vectors.index_to_key}, benchmarks)
    return Word2VecBaseline(
        corpus=str(source),
        seconds_budget=seconds,
        seconds=time.perf_counter() - start,
        words_trained=fed,
        vocabulary=len(vectors.index_to_key),
        vector_size=vector_size,
        threads=threads,
        benchmarks=scores,
    )


def _train_chunk(model: Any, chunk: list[list[str]], start: float, budget: float) -> bool:
    """Train on one chunk with the learning rate of the time spent; True when the budget is used up."""
    spent = (time.perf_counter() - start) / budget
    alpha = max(0.025 * (1 - spent), 0.0001)
    model.train(chunk, total_examples=len(chunk), epochs=1, start_alpha=alpha, end_alpha=alpha)
    return time.perf_counter() - start >= budget


def _score_vectors(vectors: dict[str, np.ndarray], benchmarks: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Spearman of given word vectors on word-pair benchmarks (pairs with a missing word are skipped and counted)."""
    from ..similarity.evaluate import _locate, _parse_pairs, _read, spearman

    out: dict[str, dict[str, Any]] = {}
    for name in benchmarks:
        label, path = _locate(name, "similarity")
        pairs = _parse_pairs(_read(path, label), label)
        human, model = [], []
        for pair in pairs:
            a = vectors.get(pair.word1, vectors.get(pair.word1.casefold()))
            b = vectors.get(pair.word2, vectors.get(pair.word2.casefold()))
            if a is None or b is None:
                continue
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            human.append(pair.score)
            model.append(float(a64 @ b64 / (np.linalg.norm(a64) * np.linalg.norm(b64) or 1.0)))
        value = spearman(np.array(human), np.array(model)) if len(human) >= 2 else float("nan")
        out[name] = {"spearman": value, "pairs_used": len(human), "pairs_total": len(pairs)}
    return out


def save_word2vec_baseline(result: Word2VecBaseline, run: str | os.PathLike[str]) -> Path:
    """Keep the baseline beside a run (training/word2vec.json), where the report finds it."""
    file = Path(run).expanduser() / "training" / WORD2VEC_FILE
    try:
        make_folder(file.parent)
        replace_text(file, json.dumps(result.to_dict(), indent=2) + "\n")
    except OSError as exc:
        raise write_error(file.parent, exc, "the word2vec baseline") from None
    return file


# --- the report -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class WatchReport(Result):
    """The embeddings over training: one row per checkpoint, and where the report files are."""

    run: str
    html: str
    json: str
    checkpoints: tuple[dict[str, Any], ...]  # step, tokens, loss, perplexity, baseline, median norm, spearman per set
    word2vec: dict[str, Any] | None
    probes_last: dict[str, list[str]]  # each probe word's nearest tokens at the last checkpoint

    def __repr__(self) -> str:
        return f"WatchReport({len(self.checkpoints)} checkpoints, {self.html})"

    def to_table(self) -> str:
        names = sorted({n for c in self.checkpoints for n in c["spearman"]})
        head = ["step", "tokens", "loss", "val ppl", "baseline", "median norm", *names]
        rows = [
            (
                c["step"],
                c["tokens"],
                c["loss"],
                c["perplexity"],
                c["baseline"],
                c["median_norm"],
                *(c["spearman"].get(n) for n in names),
            )
            for c in self.checkpoints
        ]
        if self.word2vec:
            w2v = self.word2vec["benchmarks"]
            words = self.word2vec["words_trained"]
            rows.append(
                (
                    f"word2vec ({self.word2vec['seconds']:.0f} s)",
                    words,
                    None,
                    None,
                    None,
                    None,
                    *(w2v.get(n, {}).get("spearman") for n in names),
                )
            )
        lines = [table(head, rows), "", "Nearest tokens at the last checkpoint:"]
        lines += [f"  {p}: {' '.join(ns)}" for p, ns in self.probes_last.items()]
        lines += ["", f"Report: {self.html}", f"Data:   {self.json}"]
        return "\n".join(lines)


def _read_text(file: Path) -> str | None:
    """A run file's text (None if there is none), or an InputError naming the file and what to do."""
    try:
        if not file.exists():
            return None
        return file.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(
            f"Cannot read {file}: {exc.strerror or exc}.",
            "Make the run folder and its files readable for this user (chmod -R a+rX RUN), or run as their owner.",
        ) from None
    except UnicodeDecodeError:
        raise InputError(f"{file} is not UTF-8 text.", "Give a run folder written by bertlens pretrain.") from None


def _parse(file: Path, text: str, lines: bool) -> Any:
    try:
        return [json.loads(line) for line in text.splitlines() if line.strip()] if lines else json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{file} is damaged (line {exc.lineno}: {exc.msg}).", "Give a run folder written by bertlens pretrain."
        ) from None


def _read_jsonl(file: Path) -> list[dict[str, Any]]:
    """The records of a run's JSON-lines file ([] if there is none)."""
    text = _read_text(file)
    return [] if text is None else _parse(file, text, lines=True)


def _read_json(file: Path) -> dict[str, Any] | None:
    """A run's JSON file (None if there is none)."""
    text = _read_text(file)
    return None if text is None else _parse(file, text, lines=False)


def shared_projection(records: list[dict[str, Any]]) -> dict[str, list[tuple[int, float, float]]]:
    """Every probe's (step, x, y) in one 2-D PCA plane fitted to all probes' unit rows at all checkpoints."""
    points = [(r["step"], word, np.asarray(v, dtype=np.float64)) for r in records for word, v in r["probes"].items()]
    if len(points) < 2:
        return {}
    stacked = np.stack([v / (np.linalg.norm(v) or 1.0) for _, _, v in points])  # (points, E)
    centred = stacked - stacked.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)  # vt: (E', E), rows by decreasing variance
    xy = centred @ vt[:2].T  # (points, 2)
    if xy.shape[1] < 2:
        xy = np.pad(xy, ((0, 0), (0, 2 - xy.shape[1])))
    out: dict[str, list[tuple[int, float, float]]] = {}
    for (step, word, _), (x, y) in zip(points, xy, strict=True):
        out.setdefault(word, []).append((int(step), float(x), float(y)))
    return out


def watch_report(
    run: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *, overwrite: bool = False
) -> WatchReport:
    """Write report.json and report.html for the pre-training run in folder `run` (into `out`, default the run).

    In the run folder the report is the run's own and is replaced; elsewhere existing report files are kept unless
    `overwrite`.
    """
    folder = output_path(run, "run")
    records = _read_jsonl(folder / "training" / WATCH_FILE)
    if not records:
        raise InputError(
            f"{folder} holds no watch records (training/{WATCH_FILE}).",
            "Pre-train with watching on (the default); records are written at every checkpoint.",
        )
    log = _read_jsonl(folder / "training" / "log.jsonl")
    w2v_file = folder / "training" / WORD2VEC_FILE
    word2vec = _read_json(w2v_file)
    projection = shared_projection(records)
    summary = tuple(
        {
            "step": r["step"],
            "tokens": r["tokens"],
            "loss": r["loss"],
            "perplexity": r["perplexity"],
            "baseline": r["baseline"],
            "median_norm": r["norms"]["p50"],
            "spearman": {n: s["spearman"] for n, s in r["benchmarks"].items()},
        }
        for r in records
    )
    target = output_path(out, "report") if out is not None else folder
    json_file, html_file = target / "report.json", target / "report.html"
    if target.resolve() != folder.resolve() and not overwrite:
        existing = [str(f) for f in (json_file, html_file) if f.exists() or f.is_symlink()]
        if existing:
            raise InputError(f"Would overwrite {', '.join(existing)}.", "Choose another folder, or pass --overwrite.")
    data = {
        "run": str(folder),
        "checkpoints": [{k: v for k, v in r.items() if k != "probes"} for r in records],
        "projection": projection,
        "log": log,
        "word2vec": word2vec,
    }
    try:
        make_folder(target)
        replace_text(json_file, json.dumps(data, ensure_ascii=False) + "\n")
        replace_text(html_file, _html(folder, records, log, projection, word2vec))
    except OSError as exc:
        raise write_error(target, exc, "the report") from None
    last = records[-1]["neighbors"]
    return WatchReport(
        run=str(folder),
        html=str(html_file),
        json=str(json_file),
        checkpoints=summary,
        word2vec=word2vec,
        probes_last={p: [t for t, _ in ns] for p, ns in last.items()},
    )


def _svg(figure: Any) -> str:
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _html(
    folder: Path,
    records: list[dict[str, Any]],
    log: list[dict[str, Any]],
    projection: dict[str, list[tuple[int, float, float]]],
    word2vec: dict[str, Any] | None,
) -> str:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    steps = [r["step"] for r in records]
    figures: list[tuple[str, str]] = []

    figure, left = plt.subplots(figsize=(7, 3.2))
    if log:
        left.plot([r["step"] for r in log], [r["loss"] for r in log], color="#1f77b4", lw=1, label="training loss")
    left.set_xlabel("step")
    left.set_ylabel("loss (nats)")
    ppl = [(r["step"], r["perplexity"]) for r in records if r["perplexity"] is not None]
    if ppl:
        right = left.twinx()
        right.plot([s for s, _ in ppl], [p for _, p in ppl], "o-", color="#d62728", label="validation perplexity")
        right.set_yscale("log")
        right.set_ylabel("validation perplexity")
        right.legend(loc="upper center", fontsize=8)
    left.legend(loc="upper right", fontsize=8)
    figures.append(("Loss and validation perplexity", _svg(figure)))

    figure, axis = plt.subplots(figsize=(7, 3.2))
    names = list(records[-1]["benchmarks"])
    for i, name in enumerate(names):
        color = f"C{i}"
        axis.plot(
            steps, [r["benchmarks"].get(name, {}).get("spearman") for r in records], "o-", color=color, label=name, ms=3
        )
        if word2vec and name in word2vec["benchmarks"] and word2vec["benchmarks"][name]["spearman"] is not None:
            axis.axhline(word2vec["benchmarks"][name]["spearman"], color=color, ls="--", lw=1)
    axis.set_xlabel("step")
    axis.set_ylabel("Spearman")
    axis.axhline(0, color="grey", lw=0.5)
    axis.legend(fontsize=7, ncol=3)
    note = " (dashed: word2vec, same corpus and wall-clock time)" if word2vec else ""
    figures.append((f"Word similarity of the input matrix{note}", _svg(figure)))

    figure, (one, two) = plt.subplots(1, 2, figsize=(9, 3.2))
    one.plot(steps, [r["baseline"] for r in records], "o-", ms=3)
    one.set_xlabel("step")
    one.set_ylabel("mean cosine of random rows")
    one.set_title("anisotropy baseline", fontsize=9)
    for p, style in (("p5", ":"), ("p25", "--"), ("p50", "-"), ("p75", "--"), ("p95", ":")):
        two.plot(steps, [r["norms"][p] for r in records], style, color="#2ca02c", label=p)
    two.set_xlabel("step")
    two.set_ylabel("row norm")
    two.set_title("norm percentiles (5, 25, 50, 75, 95)", fontsize=9)
    figures.append(("Anisotropy and norms", _svg(figure)))

    if projection:
        figure, axis = plt.subplots(figsize=(7, 6))
        for i, (word, path) in enumerate(projection.items()):
            xs, ys = [p[1] for p in path], [p[2] for p in path]
            color = f"C{i % 10}"
            axis.plot(xs, ys, "-", color=color, lw=0.8, alpha=0.6)
            axis.scatter(xs, ys, s=[6 + 30 * j / max(len(xs) - 1, 1) for j in range(len(xs))], color=color)
            axis.annotate(word, (xs[-1], ys[-1]), fontsize=8, color=color)
        axis.set_title("probe rows, one shared PCA plane (small dot: first checkpoint, large: last)", fontsize=9)
        figures.append(("The probe words' rows moving", _svg(figure)))

    picks = sorted({0, len(records) // 2, len(records) - 1})
    neighbour_rows = []
    for probe in records[-1]["neighbors"]:
        cells = "".join(
            f"<td>{html.escape(' '.join(t for t, _ in records[i]['neighbors'].get(probe, [])))}</td>" for i in picks
        )
        neighbour_rows.append(f"<tr><th>{html.escape(probe)}</th>{cells}</tr>")
    heads = "".join(f"<th>step {records[i]['step']}</th>" for i in picks)
    w2v_text = ""
    if word2vec:
        w2v_text = (
            f"<p>word2vec baseline: skip-gram, {word2vec['vector_size']} dimensions, {word2vec['threads']} thread(s), "
            f"{word2vec['words_trained']:,} words in {word2vec['seconds']:.0f} s on the same corpus.</p>"
        )
    score_rows = "".join(
        f"<tr><td>{r['step']}</td><td>{r['tokens']:,}</td><td>{_fmt(r['perplexity'])}</td><td>{_fmt(r['baseline'])}</td>"
        + "".join(f"<td>{_fmt(r['benchmarks'].get(n, {}).get('spearman'))}</td>" for n in names)
        + "</tr>"
        for r in records
    )
    if word2vec:
        score_rows += (
            "<tr><td>word2vec</td><td></td><td></td><td></td>"
            + "".join(f"<td>{_fmt(word2vec['benchmarks'].get(n, {}).get('spearman'))}</td>" for n in names)
            + "</tr>"
        )
    name_heads = "".join(f"<th>{html.escape(n)}</th>" for n in names)
    sections = "".join(f"<h2>{html.escape(title)}</h2>\n<div class=plot>{svg}</div>\n" for title, svg in figures)
    return f"""<!doctype html>
<html lang=en><head><meta charset=utf-8><title>bertlens: embeddings forming in {html.escape(folder.name)}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;color:#222}}
table{{border-collapse:collapse;font-size:13px}}td,th{{border:1px solid #ccc;padding:3px 6px;text-align:left}}
.plot svg{{max-width:100%;height:auto}}</style></head><body>
<h1>Embeddings forming: {html.escape(str(folder))}</h1>
<p>{len(records)} checkpoints, step {records[0]["step"]} to {records[-1]["step"]}. Everything below is measured on
the input matrix (<code>word_embeddings</code>) at each checkpoint.</p>
{w2v_text}
{sections}
<h2>Scores per checkpoint (Spearman)</h2>
<table><tr><th>step</th><th>tokens</th><th>val ppl</th><th>baseline</th>{name_heads}</tr>
{score_rows}</table>
<h2>Nearest tokens of the probe words</h2>
<table><tr><th>probe</th>{heads}</tr>{"".join(neighbour_rows)}</table>
</body></html>
"""


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def training_seconds(run: str | os.PathLike[str]) -> float:
    """Wall-clock training time of a run, summed over its invocations (from training/log.jsonl)."""
    log = _read_jsonl(Path(run).expanduser() / "training" / "log.jsonl")
    total, last = 0.0, 0.0
    for record in log:
        if record["elapsed"] < last:  # a resumed invocation starts its clock again
            total += last
        last = record["elapsed"]
    return total + last
