"""Models by hub id, fetched by the real `huggingface_hub` client from a hub served on 127.0.0.1 (tests/hub_server.py):
fetched once into the standard cache and read from there after, only the files bertlens reads, revisions, offline
mode, and every way a fetch fails (no such model or revision, a gated model, no network, a server killed mid-file, a
hub that cuts every file half-way, a full disk), each a clear error with nothing incomplete left in the cache under a
real name."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hub_server import LocalHub, Repo, folder_files, git_blob_id, sha256

from bertlens import FetchError, Lens, MissingWeightsError, ModelNotFoundError, load_model, tokenize
from bertlens.cli import main

TINY = "someone/tiny-bert"
MAIN = hashlib.sha1(b"main").hexdigest()
V1 = hashlib.sha1(b"v1").hexdigest()
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


@pytest.fixture(scope="module")
def repos(tiny_dirs: dict[str, Path]) -> dict[str, Repo]:
    """The hub's models: the tiny BERT (with files bertlens must not fetch), its tag v1, a gated copy, a pickle-only
    model."""
    folder = tiny_dirs["bert"]
    unread = {"pytorch_model.bin": b"never fetched", "README.md": b"# tiny", "onnx/model.onnx": b"x"}
    main_files = folder_files(folder, unread)
    config = json.loads((folder / "config.json").read_text())
    v1_files = {**main_files, "config.json": json.dumps({**config, "release": "v1"}).encode()}
    pickled = {k: v for k, v in main_files.items() if not k.endswith(".safetensors")}
    return {
        TINY: Repo({"main": (MAIN, main_files), "v1": (V1, v1_files)}),
        "someone/gated": Repo({"main": (MAIN, main_files)}, gated=True),
        "pickled": Repo({"main": (MAIN, pickled)}),
    }


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub reads HF_HUB_OFFLINE once, at import, and conftest sets it for every test so that nothing can
    reach the real hub; these tests talk to their own hub on 127.0.0.1, so the switch is lifted for them."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


@pytest.fixture
def hub(repos: dict[str, Repo], online: None) -> object:
    server = LocalHub(repos).start()
    yield server
    server.stop()


def snapshot(home: Path, repo_id: str, commit: str) -> Path:
    return home / "hub" / ("models--" + repo_id.replace("/", "--")) / "snapshots" / commit


def assert_nothing_partial(home: Path) -> None:
    """Every file the cache holds under a real name is complete: each blob's content has the digest it is named by."""
    files = [p for p in (home / "hub").rglob("*") if p.is_file() and not p.is_symlink()]
    assert not [p for p in files if p.name.endswith(".incomplete")]
    for blob in (p for p in files if p.parent.name == "blobs"):
        data = blob.read_bytes()
        assert blob.name in (sha256(data), git_blob_id(data)), blob


def test_a_hub_id_is_fetched_once_with_only_what_bertlens_reads_then_read_from_the_cache(hub, tmp_path, tiny_models):
    env = hub.env(tmp_path)
    model = load_model(TINY, env=env)
    assert model.source.kind == "hf-cache" and model.source.spec == TINY
    assert model.source.path == snapshot(tmp_path, TINY, MAIN)
    assert sorted(p.name for p in model.source.path.iterdir()) == ["config.json", "model.safetensors", "tokenizer.json"]
    asked = [path for _, path in hub.requests]
    assert not [p for p in asked if p.endswith((".bin", ".md", ".onnx"))]  # never asked for, not even their size
    assert tokenize(model, "the cat").pieces == ["[CLS]", "the", "cat", "[SEP]"]
    local = tiny_models["bert"].embedding_weights.word_embeddings
    np.testing.assert_array_equal(model.embedding_weights.word_embeddings, local)
    assert_nothing_partial(tmp_path)

    hub.requests.clear()
    again = load_model(TINY, env=env)
    assert again.source.path == model.source.path
    assert hub.requests == []  # the second time: the cache only, not one request


@pytest.fixture
def hub_bars_enabled():
    """huggingface_hub's bars as a fresh process has them: other test modules (tests/oracle.py) switch them off for
    the whole process through transformers, which would hide what bertlens asks for."""
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    was_disabled = are_progress_bars_disabled()
    enable_progress_bars()
    yield
    if was_disabled:
        disable_progress_bars()


def test_progress_shows_on_standard_error_only_when_asked(hub, tmp_path, capfd, hub_bars_enabled):
    load_model(TINY, env=hub.env(tmp_path))
    assert capfd.readouterr().err == ""
    load_model(f"{TINY}@v1", env=hub.env(tmp_path), progress=True)
    assert "Fetching" in capfd.readouterr().err


def test_a_revision_is_a_branch_a_tag_or_a_commit(hub, tmp_path):
    env = hub.env(tmp_path)
    tagged = load_model(f"{TINY}@v1", env=env)
    assert tagged.raw_config["release"] == "v1"
    assert tagged.source.path == snapshot(tmp_path, TINY, V1)
    by_commit = load_model(f"{TINY}@{MAIN}", env=env)
    assert "release" not in by_commit.raw_config and by_commit.source.path == snapshot(tmp_path, TINY, MAIN)
    hub.requests.clear()
    assert load_model(f"{TINY}@v1", env=env, offline=True).source.path == tagged.source.path  # refs/v1 kept
    assert hub.requests == []
    with pytest.raises(ModelNotFoundError, match="has no revision 'v9'") as err:
        load_model(f"{TINY}@v9", env=env)
    assert not isinstance(err.value, FetchError) and TINY in err.value.hint


def test_offline_reads_the_cache_and_never_fetches(hub, tmp_path):
    env = hub.env(tmp_path)
    with pytest.raises(ModelNotFoundError) as err:
        load_model(TINY, env=env, offline=True)
    assert TINY in err.value.message and "offline=True" in err.value.message
    for variable in OFFLINE_VARIABLES:
        with pytest.raises(ModelNotFoundError, match=f"{variable}=1") as err:
            load_model(TINY, env={**env, variable: "1"})
        assert "not in the local Hugging Face cache" in err.value.message and TINY in err.value.message
    assert hub.requests == []

    load_model(TINY, env=env)
    hub.requests.clear()
    assert load_model(TINY, env=env, offline=True).source.kind == "hf-cache"
    assert load_model(TINY, env={**env, "HF_HUB_OFFLINE": "1"}).source.kind == "hf-cache"
    assert hub.requests == []


def test_no_such_model_and_a_gated_model_without_its_token(hub, tmp_path):
    env = hub.env(tmp_path)
    with pytest.raises(ModelNotFoundError, match="No model 'someone/missing'") as err:
        load_model("someone/missing", env=env)
    assert "HF_TOKEN" in err.value.hint  # it may be private
    with pytest.raises(FetchError, match="someone/gated is a gated model") as err:
        load_model("someone/gated", env=env)
    assert "HF_TOKEN" in err.value.hint
    assert not snapshot(tmp_path, "someone/gated", MAIN).joinpath("model.safetensors").exists()
    granted = load_model("someone/gated", env={**env, "HF_TOKEN": hub.token})
    assert granted.source.path == snapshot(tmp_path, "someone/gated", MAIN)


def test_no_network_names_the_model_and_the_offline_switch(online, tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(FetchError, match=f"Cannot reach .*127.0.0.1:{port}.* to fetch {TINY}") as err:
        load_model(TINY, env={"HF_ENDPOINT": f"http://127.0.0.1:{port}", "HF_HOME": str(tmp_path)})
    assert "HF_HUB_OFFLINE=1" in err.value.hint


@pytest.mark.slow  # ~5 s: huggingface_hub tries to resume a broken file 5 times, a second apart, before it gives up
def test_a_server_killed_mid_file_leaves_nothing_partial_and_the_next_fetch_completes(hub, repos, tmp_path):
    hub.drop_mid_file = True
    with pytest.raises(FetchError, match=f"broke while fetching {TINY}"):
        load_model(TINY, env=hub.env(tmp_path))
    assert_nothing_partial(tmp_path)
    assert not (snapshot(tmp_path, TINY, MAIN) / "model.safetensors").exists()
    with pytest.raises(ModelNotFoundError, match="is incomplete"):
        load_model(TINY, env=hub.env(tmp_path), offline=True)

    restarted = LocalHub(repos).start()
    try:
        model = load_model(TINY, env=restarted.env(tmp_path))
    finally:
        restarted.stop()
    assert model.source.path == snapshot(tmp_path, TINY, MAIN)
    assert_nothing_partial(tmp_path)
    assert [p for _, p in restarted.requests if p.endswith("config.json")] == []  # kept from the first fetch


@pytest.mark.slow  # ~4 s: huggingface_hub waits a second before each try
def test_a_hub_that_cuts_every_file_half_way_is_given_up_after_a_few_tries(hub, tmp_path, monkeypatch):
    """Each try brings bytes (chunks smaller than the file), so huggingface_hub's own count of tries starts again on
    each; the hub sends the file from its start every time, so the fetch would start over for ever."""
    import huggingface_hub.constants

    from bertlens.core.hub import MAX_RESTARTS

    monkeypatch.setattr(huggingface_hub.constants, "DOWNLOAD_CHUNK_SIZE", 1024)  # a real model's file is many chunks
    hub.cut_every_file = True
    with pytest.raises(FetchError) as err:
        load_model(TINY, env=hub.env(tmp_path))
    message, hint = err.value.message, err.value.hint
    assert f"cut off model.safetensors of {TINY} mid-file {MAX_RESTARTS + 1} times" in message
    assert hub.url in message and "stopped fetching" in message
    assert "network" in hint and "later" in hint and "HF_HUB_OFFLINE=1" in hint
    weights = [p for m, p in hub.requests if m == "GET" and p.startswith("/cdn/")]
    assert len(weights) == MAX_RESTARTS + 2  # the first try, then a start over each, the last stopped at once
    assert_nothing_partial(tmp_path)


def test_a_model_with_only_pickled_weights_is_refused_and_the_pickle_never_fetched(hub, tmp_path):
    with pytest.raises(MissingWeightsError, match="only weights are PyTorch pickles") as err:
        load_model("pickled", env=hub.env(tmp_path))
    assert "pickled@refs/pr/1" in err.value.hint
    assert not [p for _, p in hub.requests if "pytorch_model.bin" in p and "/resolve/" in p]


def test_a_local_folder_wins_over_a_hub_id_and_a_path_is_never_looked_up(hub, tmp_path, tiny_dirs, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(tiny_dirs["bert"], tmp_path / TINY)
    env = hub.env(tmp_path / "hf")
    assert load_model(TINY, env=env).source.kind == "directory"
    for path in ("./someone/nothing", "someone/tiny-bert/x", "~/nothing"):
        with pytest.raises(ModelNotFoundError, match="No such directory"):
            load_model(path, env=env)
    assert hub.requests == []


def mounted(folder: Path, options: str) -> Path:
    """A tmpfs mounted at `folder` with `options` (skips where mounting is not allowed: it needs root)."""
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"a tmpfs cannot be mounted here (it needs root): {done.stderr.decode().strip()}")
    return folder


@pytest.fixture
def small_disk(tmp_path: Path) -> object:
    """A 32 KiB file system: room for the config and tokenizer, not for the weights."""
    yield mounted(tmp_path / "small", "size=32k")
    subprocess.run(["umount", str(tmp_path / "small")], check=True)


@pytest.fixture
def read_only_disk(tmp_path: Path) -> object:
    yield mounted(tmp_path / "read-only", "ro,size=32k")
    subprocess.run(["umount", str(tmp_path / "read-only")], check=True)


@pytest.mark.filterwarnings("ignore:Not enough free disk space:UserWarning")  # huggingface_hub's own warning first
def test_a_full_disk_is_said_plainly_and_leaves_nothing_partial(hub, small_disk):
    with pytest.raises(FetchError, match="The disk is full") as err:
        load_model(TINY, env=hub.env(small_disk))
    assert "HF_HUB_CACHE" in err.value.hint
    assert_nothing_partial(small_disk)


def test_a_cache_that_cannot_be_written_is_said_plainly(hub, read_only_disk):
    with pytest.raises(FetchError, match=f"{TINY} cannot be written into the Hugging Face cache") as err:
        load_model(TINY, env=hub.env(read_only_disk))
    assert "HF_HUB_CACHE" in err.value.hint


def test_the_cli_and_serve_fetch_and_offline_forbids_it(hub, tmp_path, monkeypatch, capsys):
    for key, value in hub.env(tmp_path).items():
        monkeypatch.setenv(key, value)
    for variable in OFFLINE_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    assert main(["--offline", "tokens", "the cat", "--model", TINY, "--json"]) == 2
    error = json.loads(capsys.readouterr().out)
    assert error["error"] == "ModelNotFoundError" and TINY in error["message"] and "--offline" in error["message"]
    assert hub.requests == []

    assert main(["tokens", "the cat", "--model", TINY, "--json"]) == 0
    assert [t["piece"] for t in json.loads(capsys.readouterr().out)["tokens"]] == ["[CLS]", "the", "cat", "[SEP]"]
    hub.requests.clear()
    assert main(["serve", "--model", TINY, "--offline", "--get", "/api/models"]) == 0
    assert TINY in capsys.readouterr().out and hub.requests == []

    assert main(["tokens", "x", "--model", "someone/missing"]) == 2
    assert "No model 'someone/missing'" in capsys.readouterr().err
    assert Lens(TINY, offline=True).model.source.path == snapshot(tmp_path, TINY, MAIN)  # Lens reads the same cache


def test_a_fresh_process_fetches_then_works_offline(hub, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_VARIABLES} | hub.env(tmp_path)
    command = [sys.executable, "-m", "bertlens", "tokens", "the cat", "--model", TINY, "--json"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [t["piece"] for t in json.loads(done.stdout)["tokens"]] == ["[CLS]", "the", "cat", "[SEP]"]
    assert done.stderr == ""  # no progress into a pipe
    hub.requests.clear()
    done = subprocess.run(command, env={**env, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert hub.requests == []
