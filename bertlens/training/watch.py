"""Watch the input embeddings form: what the matrix looks like at every checkpoint, and a report over training.

At each checkpoint the watcher records, for the input matrix (`word_embeddings`) as it is at that step:

- the nearest tokens of every probe word (`similarity.neighbors_many`, cosine, specials and [unused] rows left out);
- the word-similarity benchmarks' Spearman correlation (`evaluate.evaluate_pairs`, each word's pieces mean-pooled);
- the anisotropy baseline: the mean cosine of random pairs of rows (how high "high" is);
- the distribution of row norms (percentiles and a histogram);
- the probe words' (pooled) rows themselves, for the trajectory plot;
- the category purity of the learning groups' words (`purity.py`) and those words' rows;
- how much the rows reflect token frequency (`plateau.py`: the probe words' nearest tokens among the text's most
  frequent, the norms' correlation with frequency).

`watch_report` turns these records (plus the training log and an optional word2vec baseline, `baseline.py`) into
`report.json` and a self-contained `report.html` (`watch_html.py`, figures in `report_figures.py`). The probe words'
rows, and the group words' rows, from every checkpoint are projected together onto one shared 2-D plane each
(`projection.py`: PCA of all of them at unit length), so their movement between checkpoints is comparable; the
frequency plateau is named where it holds (`plateau.find_plateau`). A run that stopped before the end of its schedule
says so first, with the command that continues it (`early_stop.read_stop`).
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.outputs import make_folder, output_path, replace_text, write_error
from ..core.paths import OUTPUT, user_path
from ..core.results import Result, plain, table
from .baseline import WORD2VEC_FILE, shared_scores
from .config import PretrainConfig
from .drift import run_drift
from .drift_report import drift_section, drift_text
from .early_stop import EarlyStop, read_stop
from .plateau import find_plateau, frequency_snapshot
from .projection import group_projection, shared_projection
from .purity import learning_groups, matrix_purity
from .watch_html import HOW_ROWS_LEARN, report_html

WATCH_FILE = "watch.jsonl"
_PERCENTILES = (0, 5, 25, 50, 75, 95, 100)


def matrix_snapshot(
    model: Any, probes: Sequence[str], benchmarks: Sequence[str], k: int = 8, counts: np.ndarray | None = None
) -> dict[str, Any]:
    """What the input matrix of a bertlens `Model` looks like now (see the module docstring); JSON-ready.

    `counts` (vocab,) are the token ids' occurrences in the training text, where known."""
    from ..embeddings.static import word_vector
    from ..embeddings.token_classes import TokenFilter
    from ..similarity.evaluate import evaluate_pairs
    from ..similarity.index import Adjustment, open_index
    from ..similarity.nearest import neighbors_many

    index = open_index(model)
    allowed = index.allowed(TokenFilter())
    rows = index.raw.rows  # (vocab, E)
    norms = np.linalg.norm(rows[allowed].astype(np.float64), axis=1)  # (allowed,)
    histogram, edges = np.histogram(norms, bins=30)
    found_probes: dict[str, list[float]] = {}
    neighbours: dict[str, list[tuple[str, float]]] = {}
    neighbour_ids: list[int] = []
    usable = [p for p in probes if p.strip()]
    if usable:
        batch = neighbors_many(model, usable, k, index=index)
        for probe, result in zip(usable, batch.results, strict=True):
            neighbours[probe] = [(n.token, round(n.score, 4)) for n in result.neighbors]
            neighbour_ids += [n.id for n in result.neighbors]
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
    groups = learning_groups()
    purity = matrix_purity(rows, model.vocabulary, groups)
    return {
        "category_purity": None if purity is None else purity.to_dict(),
        "group_rows": _group_rows(rows, model.vocabulary, groups),
        "baseline": index.baseline(Adjustment(), TokenFilter()),
        "norms": {f"p{p}": float(v) for p, v in zip(_PERCENTILES, np.percentile(norms, _PERCENTILES), strict=True)}
        | {"mean": float(norms.mean())},
        "norm_histogram": {"edges": edges.tolist(), "counts": histogram.tolist()},
        "frequency": frequency_snapshot(rows, allowed, counts, neighbour_ids, model.vocabulary, usable),
        "benchmarks": scores,
        "neighbors": neighbours,
        "probes": found_probes,
    }


def _group_rows(rows: np.ndarray, vocabulary: Any, groups: dict[str, tuple[str, ...]]) -> dict[str, list[Any]]:
    """The rows of the group words the vocabulary holds as one piece: words, their groups, rows (words, E)."""
    words: list[str] = []
    names: list[str] = []
    vectors: list[list[float]] = []
    for name, members in groups.items():
        for word in members:
            token_id = vocabulary.token_to_id(word)
            if token_id is not None and 0 <= token_id < rows.shape[0]:
                words.append(word)
                names.append(name)
                vectors.append([round(float(v), 5) for v in rows[token_id]])
    return {"words": words, "groups": names, "rows": vectors}


class Watcher:
    """Appends one record per checkpoint to `training/watch.jsonl` during pre-training."""

    def __init__(self, config: PretrainConfig, tokenizer: Any, file: Path, counts: np.ndarray | None = None) -> None:
        self.config = config
        self.tokenizer = tokenizer  # tokenizers.Tokenizer
        self.file = file
        self.counts = counts  # (vocab,) occurrences of each token id in the training text

    def record(self, model: Any, *, step: int, tokens: int, loss: float | None, perplexity: float | None) -> None:
        """Snapshot the input matrix of the (training) torch model; its train/eval mode is left as it was."""
        from ..core.model import load_model

        was_training = model.training
        try:
            snapshot = matrix_snapshot(
                load_model(model, tokenizer=self.tokenizer),
                self.config.probe_words,
                self.config.watch_benchmarks,
                counts=self.counts,
            )
        finally:
            model.train(was_training)
        record = {"step": step, "tokens": tokens, "loss": loss, "perplexity": perplexity, **snapshot}
        with self.file.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")


@dataclass(frozen=True, repr=False)
class WatchReport(Result):
    """The embeddings over training: one row per checkpoint, and where the report files are.

    >>> report = watch_report("tiny-bert/")  # doctest: +SKIP
    >>> len(report.checkpoints), report.html  # doctest: +SKIP
    """

    run: str
    html: str
    json: str
    checkpoints: tuple[dict[str, Any], ...]  # step, tokens, loss, perplexity, baseline, median norm, spearman and
    # pairs scored (of the benchmark's) per set
    word2vec: dict[str, Any] | None  # the baseline (its per-pair cosines left out: report.json keeps them)
    shared: dict[str, dict[str, Any]] | None  # both on the pairs both cover, per set (see baseline.shared_scores)
    probes_last: dict[str, list[str]]  # each probe word's nearest tokens at the last checkpoint
    plateau: dict[str, Any] | None  # the frequency plateau: its checkpoints, where the rows left it, named (None: an
    # older run without frequency records)
    how_rows_learn: str  # how the rows of the input matrix receive gradients
    drift: dict[str, Any] | None = None  # a continued run's `drift.embedding_drift` (None: a run from scratch)
    stopped_early: EarlyStop | None = None  # the run stopped before max_steps (see early_stop.py)

    def __repr__(self) -> str:
        return f"WatchReport({len(self.checkpoints)} checkpoints, {self.html})"

    def to_table(self) -> str:
        names = sorted({n for c in self.checkpoints for n in c["spearman"]})
        head = ["step", "tokens", "loss", "val ppl", "baseline", "median norm", "purity", "frequent"]
        head += [h for n in names for h in (n, f"{n} pairs")]
        rows = [
            (
                c["step"],
                c["tokens"],
                c["loss"],
                c["perplexity"],
                c["baseline"],
                c["median_norm"],
                c.get("category_purity"),
                c.get("frequent_share"),
                *(v for n in names for v in (c["spearman"].get(n), _coverage(c["pairs"].get(n)))),
            )
            for c in self.checkpoints
        ]
        if self.word2vec:
            w2v = self.word2vec["benchmarks"]
            cells = [(w2v[n]["spearman"], _coverage(w2v[n])) if n in w2v else (None, None) for n in names]
            words = self.word2vec["words_trained"]
            seconds = f"word2vec ({self.word2vec['seconds']:.0f} s)"
            purity = (self.word2vec.get("category_purity") or {}).get("purity")
            rows.append((seconds, words, None, None, None, None, purity, None, *(v for cell in cells for v in cell)))
        lines = [*([*self.stopped_early.lines(), ""] if self.stopped_early else []), table(head, rows)]
        key = (
            f"purity: category purity of the learning groups' words (chance at step 0: {_chance(self.checkpoints)}); "
            "frequent: share of the probe words' nearest tokens among the text's most frequent."
        )
        lines += ["", *textwrap.wrap(key, 116)]
        if self.plateau:
            lines += textwrap.wrap(self.plateau["text"], 116)
        if self.shared:
            lines += ["", "On the pairs both cover (the run at its last checkpoint, and word2vec):"]
            shared = [
                (n, f"{s['pairs_shared']} of {s['pairs_total']}", s["bertlens"], s["word2vec"])
                for n, s in self.shared.items()
            ]
            lines.append(table(["benchmark", "pairs", "bertlens run", "word2vec"], shared))
        lines += ["", "Nearest tokens at the last checkpoint:"]
        lines += [f"  {p}: {' '.join(ns)}" for p, ns in self.probes_last.items()]
        lines += ["", *textwrap.wrap(self.how_rows_learn, 116)]
        if self.drift:
            lines += ["", drift_text(self.drift)]
        lines += ["", f"Report: {self.html}", f"Data:   {self.json}"]
        return "\n".join(lines)


def _chance(checkpoints: Sequence[dict[str, Any]]) -> str:
    chance = checkpoints[0].get("purity_chance") if checkpoints else None
    return "-" if chance is None else f"{chance:.3f}"


def _coverage(scores: dict[str, Any] | None) -> str | None:
    """'33 of 353': the pairs a score was computed on, of the benchmark's."""
    return None if scores is None else f"{scores['pairs_used']} of {scores['pairs_total']}"


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


def _parse(file: Path, text: str, lines: bool) -> list[dict[str, Any]]:
    """The JSON objects of a run's file: one a line (`lines`), or the file's one; an InputError when it is damaged."""
    try:
        found = [json.loads(line) for line in text.splitlines() if line.strip()] if lines else [json.loads(text)]
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{file} is damaged (line {exc.lineno}: {exc.msg}).", "Give a run folder written by bertlens pretrain."
        ) from None
    if not all(isinstance(record, dict) for record in found):
        raise InputError(
            f"{file} is damaged (a record is not a JSON object).", "Give a run folder written by bertlens pretrain."
        )
    return found


def _read_jsonl(file: Path) -> list[dict[str, Any]]:
    """The records of a run's JSON-lines file ([] if there is none)."""
    text = _read_text(file)
    return [] if text is None else _parse(file, text, lines=True)


def _read_json(file: Path) -> dict[str, Any] | None:
    """A run's JSON file (None if there is none)."""
    text = _read_text(file)
    return None if text is None else _parse(file, text, lines=False)[0]


def _checkpoint_summary(r: dict[str, Any]) -> dict[str, Any]:
    """One checkpoint's watch record in brief: what `WatchReport.checkpoints` holds per checkpoint."""
    return {
        "step": r["step"],
        "tokens": r["tokens"],
        "loss": r["loss"],
        "perplexity": r["perplexity"],
        "baseline": r["baseline"],
        "median_norm": r["norms"]["p50"],
        "category_purity": (r.get("category_purity") or {}).get("purity"),
        "purity_chance": (r.get("category_purity") or {}).get("chance"),
        "frequent_share": (r.get("frequency") or {}).get("top_share"),
        "norm_frequency_spearman": (r.get("frequency") or {}).get("norm_spearman"),
        "spearman": {n: s["spearman"] for n, s in r["benchmarks"].items()},
        "pairs": {
            n: {"pairs_used": s["pairs_used"], "pairs_total": s["pairs_total"]} for n, s in r["benchmarks"].items()
        },
    }


def watch_report(
    run: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *, overwrite: bool = False
) -> WatchReport:
    """Write report.json and report.html for the pre-training run in folder `run` (into `out`, default the run).

    In the run folder the report is the run's own and is replaced; elsewhere existing report files are kept unless
    `overwrite`.

    >>> report = watch_report("tiny-bert/")  # doctest: +SKIP
    >>> report.html  # report.html beside the run: open it in a browser  # doctest: +SKIP
    """
    folder = user_path(run, "run", OUTPUT)
    target = output_path(out, "report", run=True) if out is not None else output_path(run, "run", run=True)
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
    groups = group_projection(records)
    found = find_plateau(records)
    plateau = None if found is None else found.to_dict()
    shared = shared_scores(folder, word2vec, records[-1]["step"]) if word2vec else None
    drift = run_drift(folder)
    stopped = read_stop(folder, records[-1]["step"])
    summary = tuple(_checkpoint_summary(r) for r in records)
    json_file, html_file = target / "report.json", target / "report.html"
    if target.resolve() != folder.resolve() and not overwrite:
        existing = [str(f) for f in (json_file, html_file) if f.exists() or f.is_symlink()]
        if existing:
            raise InputError(
                f"Would overwrite {', '.join(existing)}.",
                "Choose another folder, or pass {overwrite}.",
                arguments={"overwrite": True},
            )
    data = {
        "run": str(folder),
        "checkpoints": [{k: v for k, v in r.items() if k not in ("probes", "group_rows")} for r in records],
        "projection": projection,
        "group_projection": groups,
        "plateau": plateau,
        "log": log,
        "word2vec": word2vec,
        "shared": shared,
        "how_rows_learn": HOW_ROWS_LEARN,
        "drift": drift,
        "stopped_early": plain(stopped),
    }
    try:
        make_folder(target)
        replace_text(json_file, json.dumps(data, ensure_ascii=False) + "\n")
        extra = [drift_section(drift)] if drift else []
        page = report_html(
            folder,
            records,
            log,
            projection,
            word2vec,
            shared,
            groups=groups,
            plateau=plateau,
            extra_sections=extra,
            stopped=stopped,
        )
        replace_text(html_file, page)
    except OSError as exc:
        raise write_error(target, exc, "the report") from None
    last = records[-1]["neighbors"]
    return WatchReport(
        run=str(folder),
        html=str(html_file),
        json=str(json_file),
        checkpoints=summary,
        word2vec=_without_pairs(word2vec),
        shared=shared,
        probes_last={p: [t for t, _ in ns] for p, ns in last.items()},
        plateau=plateau,
        how_rows_learn=HOW_ROWS_LEARN,
        drift=drift,
        stopped_early=stopped,
    )


def _without_pairs(word2vec: dict[str, Any] | None) -> dict[str, Any] | None:
    """The baseline without its per-pair lines and cosines (report.json keeps them)."""
    if word2vec is None:
        return None
    sets = {n: {k: v for k, v in s.items() if k not in ("lines", "cosines")} for n, s in word2vec["benchmarks"].items()}
    return word2vec | {"benchmarks": sets}


def training_seconds(run: str | os.PathLike[str]) -> float:
    """Wall-clock training time of a run, summed over its invocations (from training/log.jsonl)."""
    log = _read_jsonl(Path(run).expanduser() / "training" / "log.jsonl")
    total, last = 0.0, 0.0
    for record in log:
        if record["elapsed"] < last:  # a resumed invocation starts its clock again
            total += last
        last = record["elapsed"]
    return total + last
