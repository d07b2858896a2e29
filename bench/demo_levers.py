"""What each lever of the demo recipe does: the demo run (`bertlens pretrain sample --preset demo`) once as it is and
once per lever with that one flag changed, each scored by its watch at the last checkpoint: category purity of the
learning groups, WordSim-353 and MEN (pairs scored of the set's), the masked-LM loss, tokens/s and wall time.

Every run trains the same number of steps on the shipped sample corpus (a vocabulary trained on it, as the demo does),
so purity compares at equal steps; tokens/s compares speed (the time a lever costs or saves), on a quiet machine only.

    python bench/demo_levers.py                         # the whole table, about 4 minutes a row on 2 cores
    python bench/demo_levers.py --only demo untied      # some rows
    python bench/demo_levers.py --steps 500 --threads 1  # a quicker, rougher table
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# name -> (the flags changed from the demo, what the demo does instead)
LEVERS: dict[str, tuple[list[str], str]] = {
    "demo": ([], "the demo recipe as shipped"),
    "lr 3e-3": (["--lr", "3e-3", "--warmup-steps", "300"], "a lower learning rate (demo: 4e-3, 500 warm-up steps)"),
    "lr 2e-3": (["--lr", "2e-3", "--warmup-steps", "300"], "half the learning rate"),
    "lr 5e-4": (["--lr", "5e-4"], "the other presets' learning rate"),
    "1,500 steps": (["--max-steps", "1500"], "the same schedule squeezed into 1,500 steps (demo: 3,500)"),
    "mlm 0.15": (["--mlm-probability", "0.15"], "BERT's 15% of tokens predicted (demo: 50%)"),
    "no whole words": (["--no-whole-word-masking"], "pieces chosen one by one (demo: whole words)"),
    "dropout 0.1": (["--dropout", "0.1", "--attention-dropout", "0.1"], "BERT's dropout (demo: none)"),
    "untied": (["--untied"], "the MLM decoder with rows of its own (demo: tied to the input rows)"),
    "vocab 30522": (["--vocab-size", "30522"], "BERT's vocabulary size (demo: 8,000 pieces for a small corpus)"),
}


def run(name: str, flags: list[str], folder: Path, steps: int | None, threads: int | None) -> dict[str, object]:
    out = folder / name.replace(" ", "-")
    command = [sys.executable, "-m", "bertlens", "pretrain", "sample", "--preset", "demo", "--out", str(out)]
    command += ["--no-progress", "--json"]
    if steps is not None:
        command += ["--max-steps", str(steps), "--checkpoint-every", str(max(1, steps // 4))]
        command += ["--warmup-steps", str(max(1, steps // 10))]
    if threads is not None and "--threads" not in flags:
        command += ["--threads", str(threads)]
    command += flags
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{name}: {' '.join(command)} failed:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    records = [json.loads(line) for line in (out / "training" / "watch.jsonl").read_text().splitlines()]
    first, last = records[0], records[-1]
    scores = last["benchmarks"]
    return {
        "name": name,
        "flags": " ".join(flags),
        "purity_first": first["category_purity"]["purity"],
        "purity": last["category_purity"]["purity"],
        "chance": first["category_purity"]["chance"],
        "wordsim353": scores["wordsim353"]["spearman"],
        "wordsim353_pairs": f"{scores['wordsim353']['pairs_used']}/{scores['wordsim353']['pairs_total']}",
        "men": scores["men"]["spearman"],
        "men_pairs": f"{scores['men']['pairs_used']}/{scores['men']['pairs_total']}",
        "loss": result["loss"],
        "steps": result["step"],
        "tokens_per_second": result["tokens_per_second"],
        "train_seconds": result["train_seconds"],
        "wall_seconds": wall,
        "precision": result["precision"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=list(LEVERS), help="run only these rows")
    parser.add_argument("--steps", type=int, help="train every row this many steps (default: the demo's)")
    parser.add_argument("--threads", type=int, help="torch threads for every row but '1 thread'")
    parser.add_argument("--json", metavar="PATH", help="also write the rows here")
    args = parser.parse_args()
    print(f"# load average before: {os.getloadavg()}, python {sys.version.split()[0]}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bertlens-levers-") as folder:
        for name in args.only or list(LEVERS):
            flags, _ = LEVERS[name]
            rows.append(run(name, flags, Path(folder), args.steps, args.threads))
            row = rows[-1]
            print(f"# {name}: purity {row['purity']:.3f}, {row['tokens_per_second']:.0f} tokens/s", flush=True)
    print(f"# load average after: {os.getloadavg()}")
    print("| lever | flags | purity (step 0 -> last) | WordSim-353 (pairs) | MEN (pairs) | loss | tokens/s | seconds |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(
            f"| {row['name']} ({LEVERS[str(row['name'])][1]}) | `{row['flags'] or '-'}` | "
            f"{row['purity_first']:.2f} -> **{row['purity']:.2f}** | "
            f"{row['wordsim353']:.3f} ({row['wordsim353_pairs']}) "
            f"| {row['men']:.3f} ({row['men_pairs']}) | {row['loss']:.2f} | {row['tokens_per_second']:,.0f} "
            f"| {row['train_seconds']:.0f} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
