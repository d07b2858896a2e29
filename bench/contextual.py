"""Contextual-vector throughput: bertlens against every peer and the machine's limit, side by side in one run.

Install the peers first: sentence-transformers' ONNX and OpenVINO backends cannot install into the project's venv
(optimum-onnx <= 0.1.0 needs transformers < 4.58 while sentence-transformers 6 needs >= 5; optimum-intel 2.2 needs
transformers < 5.6 against the project's 5.23), so each gets a venv of its own beside the repository, with the
project's torch 2.13.0 CPU wheel and pinned versions that installed and ran (bench/peers.py VENVS):

    python bench/peers.py --install [--peers-dir DIR]  # DIR/venv-peers: sentence-transformers[openvino] 6.2.0,
                                                       # DIR/venv-peers-onnx: sentence-transformers[onnx] 5.7.0
                                                       # (DIR: the folder holding the repository unless given)

Then, from the repository root with the project's venv active (a missing venv: its rows say "not installed"):

    python bench/contextual.py --sentences 1000 --json contextual.json [--peers-dir DIR]

The same WikiText-2 validation sentences (../shared/data) go through, on this CPU:

* the peers (bench/peers.py), each configuration in a worker process of its venv: the plain transformers loop and
  sentence-transformers (`token_embeddings`, batches of 32) with backend torch (float32, bfloat16), onnx (its
  default export, its O3 optimised export, its dynamic int8 export for avx512_vnni) and openvino (f32, bf16);
* bertlens: `hidden_states` (every layer, every token) and word-pooled vectors of every layer
  (`word_vectors_many(..., layers=0..L, combine="concat")`), float32, bfloat16 and dtype="auto";
* the limit (bench/gemm_limit.py): the GEMMs of one forward pass at the model's shapes, float32 and bfloat16, the
  fastest of two kernels and two layouts (query, key, value apart or as one product).

One untimed warm round runs every configuration once (and keeps its outputs for the fidelity table); then `--repeats`
rounds time every configuration once each, round-robin, so drift hits all alike; the table shows medians, the best
round in brackets (contention only slows). Tokens/s counts the sentences' tokens with special tokens (bertlens'
tokenizer), the same count for every row. The temporary folder (model copies, exports) goes unless --keep-work.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bertlens.core.options import BATCH_TOKENS  # light: no torch

WIKITEXT = (
    Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "corpus" / "wikitext-2-raw" / "wiki.valid.raw"
)
HERE = Path(__file__).resolve().parent
WORKERS = {  # venv (a folder name of peers.VENVS) -> peer configurations it runs ("main": the venv running this script)
    "main": ["transformers", "st-torch-f32", "st-torch-bf16"],
    "venv-peers-onnx": ["st-onnx", "st-onnx-O3", "st-onnx-int8"],
    "venv-peers": ["st-openvino-f32", "st-openvino-bf16"],
}
NOT_RUN = {
    "st-openvino-int8 (export_static_quantized_openvino_model)": "needs a calibration data set from the Hub "
    "(datasets.load_dataset); nothing can be fetched here",
}
BERTLENS = {  # name -> (function, dtype)
    "bertlens hidden_states f32": ("states", "float32"),
    "bertlens hidden_states bf16": ("states", "bfloat16"),
    "bertlens words f32": ("words", "float32"),
    "bertlens words bf16": ("words", "bfloat16"),
    "bertlens words auto": ("words", "auto"),
}
SPEED_TARGETS = {  # the targets this bench checks on throughput (figure >= bound; pooling: <= bound)
    "words f32 >= 1.4x the fastest f32 peer": 1.4,
    "words bf16 >= 2.8x sentence-transformers f32 torch": 2.8,
    "words bf16 ahead of the fastest peer (any precision)": 1.0,
    "words f32 >= 80% of the f32 limit": 0.80,
    "words bf16 >= 50% of the bf16 limit": 0.50,
    "word pooling <= 5% over raw states (f32)": 0.05,
}


def load_sentences(count: int, path: Path = WIKITEXT) -> list[str]:
    """The first `count` sentences (over three words) of WikiText-2 validation (or `path`), headings left out."""
    found: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("="):
            continue
        found += [s for s in re.split(r"(?<=[.!?]) (?=[A-Z])", line) if len(s.split()) > 3]
        if len(found) >= count:
            break
    return found[:count]


def machine() -> dict[str, Any]:
    import torch

    info = Path("/proc/cpuinfo").read_text(encoding="utf-8") if Path("/proc/cpuinfo").exists() else ""
    name = re.search(r"^model name\s*:\s*(.*)$", info, re.M)
    flags = set((re.search(r"^flags\s*:\s*(.*)$", info, re.M) or re.match("()", "")).group(1).split())
    return {
        "cpu": name.group(1) if name else "unknown",
        "isa": {f: f in flags for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16")},
        "torch_threads": torch.get_num_threads(),
        "aten_capability": torch.backends.cpu.get_cpu_capability(),
        "cpus": len(re.findall(r"^processor\s*:", info, re.M)),
    }


def loadavg() -> float | None:
    """The 1-minute load average (Linux), to show whether other work shared the machine."""
    found = Path("/proc/loadavg")
    return float(found.read_text().split()[0]) if found.exists() else None


class Worker:
    """A peers.py --serve process in some venv: setup once, then timed runs on request."""

    def __init__(self, python: str, names: list[str], model: str, sentences: Path, work: Path) -> None:
        self.python, self.names, self.errors, self.notes, self.versions = python, names, {}, {}, {}
        self.log = work / f"peers-{len(list(work.glob('peers-*.log')))}.log"
        self.process = subprocess.Popen(
            [python, str(HERE / "peers.py"), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log.open("w"),
            text=True,
            cwd=HERE,
        )
        reply = self.ask(
            {
                "op": "setup",
                "model": model,
                "sentences": str(sentences),
                "names": names,
                "workdir": str(work / Path(python).parent.parent.name),
            }
        )
        self.errors = reply.get("errors", {}) if "error" not in reply else dict.fromkeys(names, reply["error"])
        self.notes, self.versions = reply.get("notes", {}), reply.get("versions", {})

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin and self.process.stdout
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        except BrokenPipeError:  # the worker has exited: its log says why
            line = ""
        if line:
            return json.loads(line)
        last = [t for t in self.log.read_text(encoding="utf-8", errors="replace").splitlines() if t.strip()][-1:]
        return {"error": f"worker exited: {last[0][:200] if last else 'no message'}"}

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin
            self.process.stdin.write(json.dumps({"op": "quit"}) + "\n")
            self.process.stdin.flush()
            self.process.wait(timeout=60)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of two (rows, D) arrays."""
    return (a * b).sum(-1) / np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-30)


def mean_batch(lengths: list[int], batch_tokens: int = BATCH_TOKENS) -> int:
    """Mean real tokens per batch under bertlens' rule for BERT-style models (ragged batches): sorted by length, at
    most batch_tokens real tokens a batch."""
    batches, used = 0, 0
    for n in sorted(lengths):
        if used and used + n > batch_tokens:
            batches, used = batches + 1, 0
        used += n
    return round(sum(lengths) / (batches + (used > 0)))


def met(value: float | None, bound: float, name: str = "") -> bool:
    return value is not None and (value <= bound if "<=" in name and "pooling" in name else value >= bound)


def speeds(
    rate: dict[str, float],
    gflops: dict[str, float],
    precision: dict[str, str],
    peers: set[str],
    flops_per_token: int,
    m_values: list[int],
) -> dict[str, Any]:
    """Ratios, % of the limit and the speed targets for one set of rates (tokens/s per configuration)."""
    limit = {d: {m: gflops[f"{d}@{m}"] * 1e9 / flops_per_token for m in m_values} for d in ("float32", "bfloat16")}
    peer_rates = {n: rate[n] for n in peers if n in rate}
    fastest_f32 = max((n for n in peer_rates if precision[n] == "float32"), key=peer_rates.__getitem__, default=None)
    fastest_any = max(peer_rates, key=peer_rates.__getitem__, default=None)

    def ratio(name: str, base: str | None) -> float | None:
        return rate[name] / rate[base] if base in rate and name in rate else None

    def of_limit(name: str) -> float | None:
        dt = precision[name]
        return rate[name] / limit[dt][m_values[0]] if name in rate and dt in limit else None

    rows = {
        n: {
            "tokens_per_s": rate[n],
            "x_st_torch_f32": ratio(n, "st-torch-f32"),
            "x_fastest_f32_peer": ratio(n, fastest_f32),
            "x_fastest_peer": ratio(n, fastest_any),
            "of_limit": of_limit(n),
        }
        for n in rate
    }
    overheads = {  # word pooling's cost over the raw states: seconds(words) / seconds(states) - 1
        d: rate[f"bertlens hidden_states {d}"] / rate[f"bertlens words {d}"] - 1
        for d in ("f32", "bf16")
        if f"bertlens words {d}" in rate and f"bertlens hidden_states {d}" in rate
    }
    words32, words16 = "bertlens words f32", "bertlens words bf16"
    figures = [
        ratio(words32, fastest_f32),
        ratio(words16, "st-torch-f32"),
        ratio(words16, fastest_any),
        rows[words32]["of_limit"] if words32 in rows else None,
        rows[words16]["of_limit"] if words16 in rows else None,
        overheads.get("f32"),
    ]
    return {
        "limit": limit,
        "gflops": gflops,
        "fastest_f32_peer": fastest_f32,
        "fastest_peer": fastest_any,
        "rows": rows,
        "pooling_overhead": overheads,
        "targets": dict(zip(SPEED_TARGETS, figures, strict=True)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds (median reported)")
    parser.add_argument("--json", help="write every figure to this JSON file")
    parser.add_argument("--skip", nargs="*", default=[], help="configurations to leave out (names as in the table)")
    parser.add_argument("--limit-repeats", type=int, default=3, help="best of N per GEMM timing, in each round")
    parser.add_argument("--keep-work", action="store_true", help="keep the temporary folder (exports, outputs)")
    parser.add_argument("--peers-dir", type=Path, help="where bench/peers.py --install made the peers' venvs")
    args = parser.parse_args()

    import gemm_limit
    import peers as peers_module

    from bertlens import load_model
    from bertlens.contextual import RunOptions, hidden_states, word_vectors_many
    from bertlens.core.precision import choose_precision

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    load_before = loadavg()
    sentences = load_sentences(args.sentences)
    model = load_model()
    lengths = [len(model.vocabulary.tokenizer.encode(s).ids) for s in sentences]
    tokens = sum(lengths)
    shapes = gemm_limit.shapes_of(model)
    m_values = sorted({BATCH_TOKENS, mean_batch(lengths)}, reverse=True)
    every_layer = list(range(model.config.num_hidden_layers + 1))
    work = Path(tempfile.mkdtemp(prefix="bertlens-bench-"))
    (work / "sentences.json").write_text(json.dumps(sentences), encoding="utf-8")

    # Peers: one worker per venv, set up (exports included) before anything is timed.
    import peers as peer_venvs

    venvs = peer_venvs.venv_paths(args.peers_dir or peer_venvs.DEFAULT_PEERS_DIR)
    workers, unavailable, started = {}, dict(NOT_RUN), []
    for venv, names in WORKERS.items():
        names = [n for n in names if n not in args.skip]
        if not names:
            continue
        exe = sys.executable if venv == "main" else str(venvs[venv] / "bin" / "python")
        if not Path(exe).exists():
            unavailable |= {n: f"not installed: {exe} missing (see this script's docstring)" for n in names}
            continue
        say(f"setting up {', '.join(names)} in {exe} ...")
        worker = Worker(exe, names, str(model.source.path), work / "sentences.json", work)
        started.append(worker)
        unavailable |= worker.errors
        for name in names:
            if name not in worker.errors:
                workers[name] = worker

    def run_bertlens(name: str) -> Any:
        kind, dtype = BERTLENS[name]
        options = RunOptions(dtype=dtype)  # type: ignore[arg-type]
        if kind == "states":
            return hidden_states(model, sentences, options=options)
        return word_vectors_many(model, sentences, layers=every_layer, combine="concat", options=options)

    names = [n for n in workers] + [n for n in BERTLENS if n not in args.skip]
    kept: dict[str, Any] = {}
    say("warm round (outputs kept for fidelity) ...")
    for name in names:
        if name in workers:
            keep = work / f"{name}.npz"
            reply = workers[name].ask({"op": "run", "name": name, "keep": str(keep)})
            if "error" in reply:
                unavailable[name] = reply["error"]
                continue
            with np.load(keep) as saved:
                kept[name] = [saved[f"arr_{i}"] for i in range(len(saved.files))]
        else:
            result = run_bertlens(name)
            if BERTLENS[name][0] == "words":
                kept[name] = result
    names = [n for n in names if n not in unavailable]

    seconds: dict[str, list[float]] = {n: [] for n in names}
    rounds: list[dict[str, float]] = []  # per round: "dtype@M" -> GFLOP/s of the faster kernel
    for r in range(args.repeats):
        say(f"round {r + 1} of {args.repeats} ...")
        for name in names:
            if name in workers:
                reply = workers[name].ask({"op": "run", "name": name})
                seconds[name].append(reply.get("seconds", float("nan")))
            else:
                start = time.perf_counter()
                run_bertlens(name)
                seconds[name].append(time.perf_counter() - start)
        limit_round = gemm_limit.measure(shapes, m_values, args.limit_repeats, square_size=0)
        rounds.append({f"{d}@{m}": limit_round.best(d, m).gflops for d in gemm_limit.DTYPES for m in m_values})
        rounds[-1] |= {f"{t.dtype}/{t.kernel}/{t.layout}@{t.tokens}": t.gflops for t in limit_round.timings}
    for worker in started:
        worker.close()
    if not args.keep_work:
        shutil.rmtree(work, ignore_errors=True)  # the model copies, the exports and the kept outputs
    square = gemm_limit.measure(shapes, [], args.limit_repeats).square_2048

    # Figures: medians over the rounds (the table), and best-of (the fastest round: contention only slows).
    auto = choose_precision(model, "auto", "cpu")
    precision = {n: peers_module.PRECISION[n] for n in workers if n in seconds}
    precision |= {n: (auto.dtype if BERTLENS[n][1] == "auto" else BERTLENS[n][1]) for n in BERTLENS if n in seconds}
    speed = {
        how: speeds(
            {n: tokens / pick(s) for n, s in seconds.items()},
            {key: 1 / pick([1 / r[key] for r in rounds]) for key in rounds[0]},
            precision,
            set(workers),
            shapes.flops_per_token,
            m_values,
        )
        for how, pick in (("median", statistics.median), ("best", min))
    }
    rows = [
        {
            "name": name,
            "precision": precision[name],
            "seconds_each": seconds[name],
            **{f"{k}_best" if how == "best" else k: v for how in speed for k, v in speed[how]["rows"][name].items()},
            "what": peers_module.CONFIGS.get(name, "")
            + (f"; {workers[name].notes[name]}" if name in workers and name in workers[name].notes else ""),
        }
        for name in names
    ]

    # Fidelity: peers' last layer against sentence-transformers' float32 torch; bertlens' words per layer.
    fidelity: dict[str, Any] = {}
    reference = kept.get("st-torch-f32")
    for name in workers:
        if name in kept and name != "st-torch-f32" and reference is not None:
            # Sentences over sentence-transformers' max_seq_length (256) are cut there, not by the plain loop:
            # only texts with the same token count on both sides are compared.
            pairs = [(a, b) for a, b in zip(kept[name], reference, strict=True) if a.shape == b.shape]
            fidelity[name] = {
                "min_cosine_last_layer": float(min(cosines(a, b).min() for a, b in pairs)) if pairs else None,
                "texts_compared": len(pairs),
                "texts": len(reference),
            }
    base = kept.get("bertlens words f32")
    layers = len(every_layer)
    for name in ("bertlens words bf16", "bertlens words auto"):
        if name in kept and base is not None:
            per_layer = [1.0] * layers
            for a, b in zip(kept[name], base, strict=True):
                va = a.vectors.reshape(len(a.words), layers, -1)  # (words, layers, H)
                vb = b.vectors.reshape(len(b.words), layers, -1)
                if len(a.words):
                    found = cosines(va, vb).min(0)  # (layers,)
                    per_layer = [min(x, float(y)) for x, y in zip(per_layer, found, strict=True)]
            spans = all(
                [(w.start, w.end) for w in a.words] == [(w.start, w.end) for w in b.words]
                for a, b in zip(kept[name], base, strict=True)
            )
            fidelity[name] = {
                "min_cosine_per_layer": per_layer,
                "same_word_boundaries": spans,
                "precision": precision.get(name, ""),
            }

    reduced = [f for n, f in fidelity.items() if n.startswith("bertlens") and f["precision"] != "float32"]
    lowest = min((min(f["min_cosine_per_layer"]) for f in reduced), default=None)
    same = float(all(f["same_word_boundaries"] for f in reduced)) if reduced else None
    targets = {
        name: {
            "value": speed["median"]["targets"][name],
            "best": speed["best"]["targets"][name],
            "bound": bound,
            "met": met(speed["median"]["targets"][name], bound, name),
            "met_best": met(speed["best"]["targets"][name], bound, name),
        }
        for name, bound in SPEED_TARGETS.items()
    }
    for name, value in (
        ("cosine >= 0.999 every layer, bertlens reduced modes", lowest),
        ("identical word boundaries", same),
    ):
        bound = 0.999 if "cosine" in name else 1.0
        targets[name] = {
            "value": value,
            "best": value,
            "bound": bound,
            "met": met(value, bound),
            "met_best": met(value, bound),
        }

    report = {
        "machine": machine(),
        "load_average": {"start": load_before, "end": loadavg()},  # 1-minute; other work on the machine shows here
        "bertlens_commit": subprocess.run(
            ["git", "describe", "--always", "--dirty"], capture_output=True, text=True, cwd=HERE
        ).stdout.strip(),
        "sentences": len(sentences),
        "tokens": tokens,
        "repeats": args.repeats,
        "versions": {
            "main": peers_module.versions(),
            **{w.python: w.versions for w in set(workers.values()) if w.python != sys.executable},
        },
        "why_separate_venvs": {v: why for v, (why, _) in peers_module.VENVS.items()},
        "unavailable": unavailable,
        "openvino_default": next(
            (w.notes["openvino-default"] for w in workers.values() if "openvino-default" in w.notes), None
        ),
        "auto": {"dtype": auto.dtype, "reason": auto.reason},
        "limit": {
            "shapes": vars(shapes),
            "flops_per_token": shapes.flops_per_token,
            "m": m_values,
            "rounds": rounds,
            "square_2048_gflops": square,
        },
        "median": speed["median"],
        "best": speed["best"],
        "rows": rows,
        "fidelity": fidelity,
        "targets": targets,
    }
    print(render(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    return 0


def render(report: dict[str, Any]) -> str:
    """The markdown report: machine, limit, the throughput table (median and best round), fidelity, targets."""
    mach, lim, med, best = report["machine"], report["limit"], report["median"], report["best"]
    isa = " ".join(f for f, on in mach["isa"].items() if on)
    isa += " (no " + " ".join(f for f, on in mach["isa"].items() if not on) + ")"
    m0 = lim["m"][0]

    def x(v: float | None) -> str:
        return f"{v:.2f}x" if v is not None else ""

    def pct(v: float | None) -> str:
        return f"{v:.0%}" if v is not None else ""

    out = [
        f"CPU: {mach['cpu']}, {mach['cpus']} CPUs; ISA: {isa}; ATen capability {mach['aten_capability']}; "
        f"torch threads {mach['torch_threads']}; 1-minute load average at start {report['load_average']['start']} "
        f"(above ~0.5: other work on the machine, figures disturbed), at end {report['load_average']['end']} (the "
        "bench's own threads included)",
        f"{report['sentences']} WikiText-2 validation sentences, {report['tokens']:,} tokens with special tokens; "
        f"median of {report['repeats']} interleaved rounds after a warm round (best round in brackets); "
        f"bertlens {report['bertlens_commit']}",
        f"limit: the GEMMs of one forward pass ({lim['flops_per_token'] / 1e6:.1f} MFLOP/token, attention matmuls "
        "left out), the fastest of F.linear and oneDNN prepacked, query/key/value apart or fused; tokens/s "
        + "; ".join(
            f"at M={m}{'' if m == BATCH_TOKENS else ' (the mean batch)'}: float32 {med['limit']['float32'][m]:,.0f}, "
            f"bfloat16 {med['limit']['bfloat16'][m]:,.0f}"
            for m in lim["m"]
        ),
        "word pooling over the raw states: "
        + ", ".join(f"{d} {v:+.1%} ({best['pooling_overhead'][d]:+.1%})" for d, v in med["pooling_overhead"].items()),
        "",
        "| configuration | precision | tokens/s | x ST f32 torch | x fastest f32 peer | x fastest peer | % of limit |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    st = med["rows"].get("st-torch-f32", {}).get("tokens_per_s")
    for d in ("float32", "bfloat16"):
        key, rate = f"{d}@{m0}", med["limit"][d][m0]
        out.append(
            f"| **limit**: GEMMs at M={m0}, {med['gflops'][key]:,.0f} ({best['gflops'][key]:,.0f}) GFLOP/s | {d} |"
            f" {rate:,.0f} ({best['limit'][d][m0]:,.0f}) | {x(rate / st if st else None)} |  |  | 100% |"
        )
    for row in report["rows"]:
        b = "**" if row["name"].startswith("bertlens words") else ""
        cells = [f"{b}{row['tokens_per_s']:,.0f}{b} ({row['tokens_per_s_best']:,.0f})"]
        cells += [
            f"{x(row[k])} ({x(row[k + '_best'])})" for k in ("x_st_torch_f32", "x_fastest_f32_peer", "x_fastest_peer")
        ]
        cells += [f"{pct(row['of_limit'])} ({pct(row['of_limit_best'])})" if row["of_limit"] is not None else ""]
        out.append(f"| {b}{row['name']}{b} | {row['precision']} | " + " | ".join(cells) + " |")
    for name, why in report["unavailable"].items():
        out.append(f"| {name} | not run: {why} |  |  |  |  |  |")
    out += [
        "",
        f"Fastest float32 peer: {med['fastest_f32_peer']} ({best['fastest_f32_peer']}); fastest peer: "
        f"{med['fastest_peer']} ({best['fastest_peer']}). "
        f"auto picked {report['auto']['dtype']} ({report['auto']['reason']}).",
    ]
    if report["openvino_default"]:
        out.append(report["openvino_default"] + ".")
    keys = (
        "torch",
        "transformers",
        "sentence-transformers",
        "optimum-onnx",
        "onnxruntime",
        "optimum-intel",
        "openvino",
    )
    for venv, found in report["versions"].items():
        why = report["why_separate_venvs"].get(Path(venv).parent.parent.name, "")  # venv: its python
        shown = ", ".join(f"{k} {found[k]}" for k in keys if k in found)
        out.append(
            f"- versions ({'this venv' if venv == 'main' else Path(venv).parent.parent}): {shown}"
            + (f" ({why})" if why else "")
        )
    for row in report["rows"]:
        if row["what"]:
            out.append(f"- {row['name']}: {row['what']}")
    out += [
        "",
        "Fidelity against float32 (peers: last layer vs sentence-transformers torch float32, every token; "
        "bertlens: every word of every layer vs bertlens float32):",
        "",
    ]
    for name, f in report["fidelity"].items():
        if "min_cosine_per_layer" in f:
            per = ", ".join(f"L{i} {c:.5f}" for i, c in enumerate(f["min_cosine_per_layer"]))
            out.append(
                f"- {name} ({f['precision']}): min cosine {per}; word boundaries "
                f"{'identical' if f['same_word_boundaries'] else 'DIFFER'}"
            )
        else:
            c, n = f["min_cosine_last_layer"], f["texts_compared"]
            left = (
                f" ({f['texts'] - n} texts cut at 256 tokens by sentence-transformers left out)"
                if n < f["texts"]
                else ""
            )
            out.append(f"- {name}: min cosine {c:.5f}{left}" if c is not None else f"- {name}: no text comparable")
    out += ["", "| target | median | met | best round | met |", "| --- | ---: | --- | ---: | --- |"]
    for name, t in report["targets"].items():
        shown = []
        for v in (t["value"], t["best"]):
            text = "" if v is None else f"{v:.1%}" if "%" in name else f"{v:.4f}" if "cosine" in name else f"{v:.2f}x"
            shown.append(("yes" if v else "no") if "boundaries" in name and v is not None else text)
        ok = ["met" if t[k] else "NOT met" for k in ("met", "met_best")]
        out.append(f"| {name} | {shown[0]} | {ok[0]} | {shown[1]} | {ok[1]} |")
    out += [
        "",
        "2048 x 2048 x 2048 product, GFLOP/s: "
        + ", ".join(f"{k} {v:,.0f}" for k, v in lim["square_2048_gflops"].items()),
    ]
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
