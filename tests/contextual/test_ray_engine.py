"""The Ray engine: on a local two-worker Ray cluster, `index`, `extract` and `distill` give the local engine's rows,
bit for bit (the same function runs on the same batches with the same CPU kernels, in actors instead of here: the
local runs use the actors' one torch thread, since a different thread count may split a matrix product's sums
differently, which moved a few of these rows by ~1 ulp, 4.8e-7 at values near 4, with 2 threads); a missing Ray or an
unreachable cluster is a clear error, and nothing is written.

One Ray start for the module (2 CPUs: two one-CPU model actors); each Ray run starts its actors (torch imported, the
tiny model loaded), which is what makes this file slow-marked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bertlens import load_model
from bertlens.contextual.distill import distill
from bertlens.contextual.extract import ExtractOptions, extract, read_shards
from bertlens.core.errors import InputError
from bertlens.occurrences.build import IndexOptions, index_corpus
from bertlens.occurrences.ray_engine import RayOptions, threads
from bertlens.occurrences.store import open_index

pytestmark = pytest.mark.slow
WORDS = "the cat sat on a mat and the dog ran in the night to a red house by the old tree".split()  # noqa: SIM905


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory):
    """A tiny model saved in a folder (actors load it from there), a two-file corpus, a local 2-CPU Ray cluster."""
    from tiny import make_tiny

    ray = pytest.importorskip("ray")
    root = tmp_path_factory.mktemp("ray-engine")
    model = load_model(str(make_tiny("bert", root / "tiny")))
    corpus = root / "corpus"
    corpus.mkdir()
    rng = np.random.default_rng(0)
    for name, count in (("a.txt", 23), ("b.txt", 18)):  # batches of 8 texts: some full, a short one per file
        lines = [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 30)))) for _ in range(count)]
        (corpus / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(threads(RayOptions()))  # the local engine runs the actors' kernels: as many threads
    yield model, corpus, root
    torch.set_num_threads(before)
    ray.shutdown()


def test_a_cli_ray_index_gives_the_local_engines_rows_and_forks_nothing_after_lancedb_loads(setup, tmp_path):
    """`bertlens index --engine ray` in its own process, which starts its own local cluster (two actors): its rows are
    the local engine's, bit for bit; Ray's processes start (by fork) before LanceDB is loaded, so LanceDB never warns
    about a fork; the cluster is gone after."""
    model, corpus, root = setup
    index_corpus(model, corpus, root / "local-index", options=IndexOptions(layers=(1, -1), batch_texts=8))
    out = tmp_path / "ray-index"
    args = ["index", str(corpus), "--out", str(out), "--model", str(model.source.path), "--engine", "ray"]
    args += ["--actors", "2", "--layers", "1", "-1", "--batch-texts", "8", "--no-progress", "--json"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-m", "bertlens", *args], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "fork" not in done.stderr.lower(), done.stderr[-3000:]
    assert json.loads(done.stdout)["texts"] == 41
    local, remote = open_index(root / "local-index"), open_index(out)
    for table in ("texts", "occurrences"):
        a = getattr(local, table).to_arrow().sort_by([("text_id", "ascending")]).to_pydict()
        b = getattr(remote, table).to_arrow().sort_by([("text_id", "ascending")]).to_pydict()
        if table == "occurrences":
            order_a = np.lexsort((a["position"], a["text_id"]))
            order_b = np.lexsort((b["position"], b["text_id"]))
            a = {k: [v[i] for i in order_a] for k, v in a.items()}
            b = {k: [v[i] for i in order_b] for k, v in b.items()}
        assert a.keys() == b.keys()
        for column in a:
            if column.startswith("layer_"):  # vectors: bit-equal (same kernels, same batches)
                assert np.array_equal(np.asarray(a[column]), np.asarray(b[column])), column
            else:  # ids, positions, offsets, words, keys, files, lines, texts
                assert a[column] == b[column], column
    assert local.rows == remote.rows > 0 and local.text_count == remote.text_count == 41


def test_extract_and_distill_are_the_local_engines(setup):
    model, corpus, root = setup
    ray = RayOptions(actors=2)
    options = ExtractOptions(layers=(1, 2), shard_texts=8)
    local = extract(model, corpus, root / "local-extract", options=options)
    remote = extract(model, corpus, root / "ray-extract", options=options, engine="ray", ray=ray)
    assert (local.rows, local.shards) == (remote.rows, remote.shards) and local.shards == 6
    for a, b in zip(read_shards(local.out), read_shards(remote.out), strict=True):
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and a[2] == b[2]
        assert np.array_equal(a[3], b[3])  # vectors, bit for bit

    texts = [line for file in sorted(corpus.iterdir()) for line in file.read_text().splitlines()] * 8  # 328 texts
    words = ["cat", "night", "tree", "absent"]
    here = distill(model, words, texts, layers=(1, 2), max_contexts=30)
    there = distill(model, words, texts, layers=(1, 2), max_contexts=30, engine="ray", ray=ray)
    assert here.contexts == there.contexts and here.missing == there.missing == ("absent",)
    assert np.array_equal(here.vectors, there.vectors)  # contexts added in the same order: the same float64 sums


def test_unreachable_address_is_an_error_naming_it_and_nothing_is_written(setup):
    model, corpus, root = setup
    with pytest.raises(InputError, match="127.0.0.1:1") as err:  # port 1: nothing listens
        extract(model, corpus, root / "never", engine="ray", ray=RayOptions(address="127.0.0.1:1"))
    assert "leave address out" in err.value.hint
    assert not (root / "never").exists()
    with pytest.raises(InputError, match="not a number"):
        index_corpus(model, corpus, root / "never", engine="ray", ray=RayOptions(address="head:port"))
    with pytest.raises(InputError, match="127.0.0.1:1"):
        index_corpus(model, corpus, root / "never", engine="ray", ray=RayOptions(address="127.0.0.1:1"))
    assert not (root / "never").exists()


def test_a_pool_the_cluster_cannot_hold_is_refused(setup):
    model, corpus, root = setup
    with pytest.raises(InputError, match="need 3 CPUs; the cluster has 2"):
        extract(model, corpus, root / "never-too", engine="ray", ray=RayOptions(actors=3))
    with pytest.raises(InputError, match="GPU"):
        extract(model, corpus, root / "never-too", engine="ray", ray=RayOptions(gpus_per_actor=1))
    for bad in ({"actors": 0}, {"cpus_per_actor": -1}, {"cpus_per_actor": 0}):
        with pytest.raises(InputError):
            RayOptions(**bad)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="Unknown engine"):
        extract(model, corpus, root / "never-too", engine="spark")
    assert not (root / "never-too").exists()


def test_without_ray_the_cli_says_how_to_install_it(setup, tmp_path):
    """A child process where `import ray` fails (an import blocker, as if Ray were not installed)."""
    model, corpus, _ = setup
    out = tmp_path / "out"
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from bertlens.cli import main\n"
        f"sys.exit(main(['extract', {str(corpus)!r}, '--out', {str(out)!r}, '--engine', 'ray',"
        f" '--model', {str(model.source.path)!r}]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2, done.stderr
    assert 'pip install "bertlens[ray]"' in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()
