"""The README tour's commands with `--json`, each answer saved, so that two versions of bertlens can be compared byte
for byte (a refactoring must not change what any command says):

    python bench/readme_json.py --out before/      # on one version
    python bench/readme_json.py --out after/       # on the other
    python bench/readme_json.py --compare before/ after/

Each command runs as the README writes it, with `--json`, in a work folder of its own under `--out` (the tour's
blocks in order: later commands read what earlier ones wrote). Its standard output is saved as `NN.json`, its exit
status and command line in `commands.tsv`. Fields that name a moment or a duration are the only ones expected to differ
(`--compare` lists every difference and says which).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOUR = "## A 30-second tour (default model)"
TIMING = re.compile(r"(seconds|elapsed|time|_s$|_ms$|per_second|tokens_per|duration)", re.I)


def tour_commands(readme: Path) -> list[str]:
    """The `bertlens …` lines of the README's tour section's shell blocks, comments dropped."""
    text = readme.read_text(encoding="utf-8")
    section = text[text.index(TOUR) :]
    section = section[: section.index("\n## ", len(TOUR))]
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["bertlens"] and "serve" not in words:  # a server answers requests, not --json
                commands.append(shlex.join(words))
    return commands


def run(out: Path) -> int:
    work = out / "work"
    work.mkdir(parents=True, exist_ok=False)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    lines = []
    for n, command in enumerate(tour_commands(ROOT / "README.md")):
        argv = [*shlex.split(command), "--json"]
        done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, check=False)
        (out / f"{n:02d}.json").write_text(done.stdout, encoding="utf-8")
        lines.append(f"{n:02d}\t{done.returncode}\t{command}")
        print(f"{n:02d} exit {done.returncode}: {command}", file=sys.stderr)
    (out / "commands.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


def differences(a: object, b: object, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        found = []
        for key in sorted(set(a) | set(b)):
            found += differences(a.get(key, "<missing>"), b.get(key, "<missing>"), f"{where}.{key}")
        return found
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [where or "."]


def compare(a: Path, b: Path) -> int:
    status = 0
    if (a / "commands.tsv").read_text() != (b / "commands.tsv").read_text():
        print("the commands or their exit statuses differ")
        status = 1
    for file in sorted(a.glob("*.json")):
        left, right = file.read_text(encoding="utf-8"), (b / file.name).read_text(encoding="utf-8")
        if left == right:
            continue
        try:
            paths = differences(json.loads(left), json.loads(right))
        except json.JSONDecodeError:
            paths = ["(not JSON)"]
        timing = all(TIMING.search(p.rsplit(".", 1)[-1]) for p in paths)
        print(f"{file.name}: {'timing only' if timing else 'DIFFERS'}: {', '.join(paths[:8])}")
        status |= 0 if timing else 1
    print("identical" if status == 0 else "different")
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="a new folder for the answers")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"), help="two folders --out wrote")
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("give --out DIR or --compare A B")
    return run(args.out)


if __name__ == "__main__":
    sys.exit(main())
