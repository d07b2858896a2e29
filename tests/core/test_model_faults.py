"""Faulty models and model options: each is one clear error with a hint (exit 2, JSON with --json), never a wrong
answer, a traceback or a silent fallback. Configs that disagree with the weights, NaN weights, unreadable files,
cache paths that are files, blank model names, and wrong types from Python."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from bertlens import CorruptModelError, InputError, ModelNotFoundError, info, load_model, token_vector
from bertlens.cli import main
from bertlens.core.sources import resolve
from bertlens.similarity.index import cache_root, open_index


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:
    """Run `bertlens ARGV --json` in-process: (exit code, the JSON printed, stderr)."""
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, json.loads(out), err


def assert_error(capsys, argv: list[str], kind: str, *phrases: str) -> dict:
    """The command exits 2 with a `kind` error whose message holds `phrases`, and a hint."""
    code, data, err = cli(capsys, *argv)
    assert code == 2, data
    assert data["error"] == kind and data["hint"], data
    for phrase in phrases:
        assert phrase in data["message"], (phrase, data["message"])
    assert err.startswith("bertlens: error: ") and "hint: " in err
    return data


def edit_config(path: Path, **changes: object) -> None:
    config = json.loads((path / "config.json").read_text())
    config.update(changes)
    (path / "config.json").write_text(json.dumps(config))


def edit_tensor(path: Path, name: str, change) -> None:
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(path / "model.safetensors"))
    change(tensors[name])
    save_file(tensors, str(path / "model.safetensors"), metadata={"format": "pt"})


# 1. A config that disagrees with the weights is refused at load time, naming the tensor and both shapes.

HIDDEN_CASES = {  # family -> (the width field in config.json, the tensor whose shape gives it away)
    "bert": ("hidden_size", "embeddings.word_embeddings.weight"),
    "roberta": ("hidden_size", "embeddings.word_embeddings.weight"),
    "distilbert": ("dim", "embeddings.word_embeddings.weight"),
    "albert": ("hidden_size", "encoder.embedding_hidden_mapping_in.weight"),  # rows are embedding_size wide
    "electra": ("hidden_size", "embeddings_project.weight"),
    "deberta-v2": ("hidden_size", "embeddings.LayerNorm.weight"),  # its LayerNorm follows the projection
    "modernbert": ("hidden_size", "embeddings.tok_embeddings.weight"),
}


@pytest.mark.parametrize("family", sorted(HIDDEN_CASES))
def test_hidden_size_that_disagrees_with_the_weights_is_refused_as_transformers_does(tiny_copy, family):
    from transformers import AutoModel

    field, tensor = HIDDEN_CASES[family]
    path = tiny_copy(family)
    edit_config(path, **{field: 24})  # the weights are 32 wide
    with pytest.raises(CorruptModelError) as err:
        load_model(str(path))
    assert tensor in err.value.message and "32" in err.value.message and "24" in err.value.message
    assert f"{field} = 32" in err.value.hint
    with pytest.raises(Exception, match="(?i)mismatch"):  # the oracle refuses the same folder
        AutoModel.from_pretrained(str(path))


@pytest.mark.parametrize(
    ("family", "changes", "tensor", "found", "implied", "fix"),
    [
        ("bert", {"hidden_size": 256}, "embeddings.word_embeddings.weight", "(80, 32)", "(80, 256)", "hidden_size"),
        ("albert", {"embedding_size": 8}, "embeddings.word_embeddings.weight", "(80, 16)", "(80, 8)", "embedding_"),
        ("electra", {"embedding_size": 8}, "embeddings.word_embeddings.weight", "(80, 16)", "(80, 8)", "embedding_"),
        ("bert", {"max_position_embeddings": 128}, "position_embeddings", "(64, 32)", "(128, 32)", "max_position"),
        ("bert", {"type_vocab_size": 5}, "token_type_embeddings", "(2, 32)", "(5, 32)", "type_vocab_size = 2"),
    ],
)
def test_each_embedding_tensor_is_checked_against_its_config_fields(
    tiny_copy, family, changes, tensor, found, implied, fix
):
    path = tiny_copy(family)
    edit_config(path, **changes)
    with pytest.raises(CorruptModelError) as err:
        load_model(str(path))
    message = err.value.message
    assert tensor in message and f"shape {found}" in message and f"implies {implied}" in message
    assert fix in err.value.hint and "config.json" in err.value.hint


@pytest.mark.parametrize("family", ["deberta-v2", "roberta", "xlm-roberta", "modernbert"])
def test_a_matching_config_still_loads(tiny_dirs, family):
    assert load_model(str(tiny_dirs[family])).config.hidden_size == 32


def test_every_command_refuses_the_mismatched_model_and_writes_nothing(capsys, tiny_copy, tmp_path):
    path = tiny_copy("bert")
    edit_config(path, hidden_size=256)
    before = sorted(p.name for p in path.iterdir())
    out = tmp_path / "out"
    for argv in (
        ["info"],
        ["vector", "dog"],
        ["neighbors", "dog", "--cache-dir", str(tmp_path / "cache")],
        ["export", "--format", "npy", "--out", str(out)],
        ["extend", "--words", "zebra", "--out", str(out)],
    ):
        data = assert_error(capsys, [*argv, "--model", str(path)], "CorruptModelError", "(80, 32)", "(80, 256)")
        assert "hidden_size = 32" in data["hint"]
    assert not out.exists() and not (tmp_path / "cache").exists()
    assert sorted(p.name for p in path.iterdir()) == before


# 2. NaN or infinite weights: `info` reports them; anything built from the rows refuses.


def test_nan_rows_are_reported_by_info_and_refused_by_vectors_and_neighbors(capsys, tiny_copy, tmp_path):
    path = tiny_copy("bert")

    def damage(matrix: np.ndarray) -> None:
        matrix[22, 3] = np.nan
        matrix[40, 0] = np.inf

    edit_tensor(path, "embeddings.word_embeddings.weight", damage)
    model = load_model(str(path))  # loading reads headers only: the damage shows when the rows are read
    assert {k: v.tolist() for k, v in model.non_finite_rows.items()} == {"embeddings.word_embeddings.weight": [22, 40]}
    with pytest.raises(CorruptModelError) as err:
        token_vector(model, "dog")
    assert "embeddings.word_embeddings.weight" in err.value.message and "2 rows (22, 40)" in err.value.message
    assert "checkpoint" in err.value.hint

    code, data, _ = cli(capsys, "info", "--model", str(path))
    assert code == 0
    assert data["warnings"] == ["embeddings.word_embeddings.weight holds NaN or infinite values in 2 rows (22, 40)"]
    assert info(model).warnings == tuple(data["warnings"])
    for argv in (["vector", "dog"], ["neighbors", "cat", "--cache-dir", str(tmp_path / "cache")]):
        assert_error(capsys, [*argv, "--model", str(path)], "CorruptModelError", "NaN", "2 rows (22, 40)")
    assert not any((tmp_path / "cache").glob("*/unit.npy"))  # no cache was built from NaN rows


def test_a_non_finite_layer_norm_entry_is_named_too(tiny_copy):
    path = tiny_copy("electra")
    edit_tensor(path, "embeddings.LayerNorm.weight", lambda v: v.__setitem__(5, -np.inf))
    model = load_model(str(path))
    assert info(model).warnings == ("embeddings.LayerNorm.weight holds NaN or infinite values in 1 entry (5)",)
    with pytest.raises(CorruptModelError, match=r"LayerNorm.weight holds NaN or infinite values in 1 entry \(5\)"):
        _ = model.embedding_weights


def test_sound_models_have_no_warnings(default_model, tiny_models):
    assert info(default_model).warnings == ()
    assert all(not model.non_finite_rows for model in tiny_models.values())


def test_info_of_a_broken_model_does_not_import_torch(tiny_copy):
    path = tiny_copy("bert")
    edit_tensor(path, "embeddings.word_embeddings.weight", lambda m: m.__setitem__((7, 1), np.nan))
    code = (
        f"import sys, json; from bertlens.cli import main; assert main(['info', '--model', {str(path)!r}]) == 0; "
        "bad = [m for m in ('torch', 'transformers') if m in sys.modules]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


# 3. Files that exist but cannot be read say why, not "No such file or directory".


def test_weights_path_that_is_a_folder(capsys, tiny_copy):
    path = tiny_copy("bert")
    (path / "model.safetensors").unlink()
    (path / "model.safetensors").mkdir()
    data = assert_error(capsys, ["info", "--model", str(path)], "CorruptModelError", "model.safetensors is a folder")
    assert "No such file" not in data["message"]


@pytest.mark.parametrize("name", ["config.json", "tokenizer.json"])
def test_other_model_files_that_are_folders(tiny_copy, name):
    path = tiny_copy("bert")
    (path / name).unlink()
    (path / name).mkdir()
    with pytest.raises(CorruptModelError, match=f"{name} is a folder") as err:
        load_model(str(path))
    assert name in err.value.hint


def test_weights_path_that_is_a_pipe(tiny_copy):
    path = tiny_copy("bert")
    (path / "model.safetensors").unlink()
    os.mkfifo(path / "model.safetensors")
    with pytest.raises(CorruptModelError, match="not a regular file"):  # and it does not block on the pipe
        load_model(str(path))


@pytest.mark.parametrize("keep", [0, 7, 200], ids=["empty", "short-length", "cut-header"])
def test_corrupt_safetensors_header_is_named(capsys, tiny_copy, keep):
    path = tiny_copy("bert")
    weights = path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:keep])
    assert_error(capsys, ["info", "--model", str(path)], "CorruptModelError", "not a complete safetensors file")


def _as_nobody(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run `python -m bertlens ARGV` as user nobody (the test runs as root, who may read anything)."""
    command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m", "bertlens"]
    return subprocess.run([*command, *argv], capture_output=True, text=True, env=env)


@pytest.mark.parametrize("name", ["model.safetensors", "tokenizer.json", "config.json"])
def test_unreadable_file_is_permission_denied(tiny_dirs, name):
    work = Path(tempfile.mkdtemp(prefix="bertlens-perm-"))  # world-searchable, unlike pytest's tmp_path
    try:
        work.chmod(0o755)
        path = Path(shutil.copytree(tiny_dirs["bert"], work / "model"))
        path.chmod(0o755)
        for file in path.iterdir():
            file.chmod(0o644)
        (path / name).chmod(0o000)
        if os.geteuid() != 0:
            with pytest.raises(CorruptModelError) as err:
                load_model(str(path))
            assert err.value.message == f"Permission denied reading {path / name}." and "chmod" in err.value.hint
            return
        env = {**os.environ, "BERTLENS_CACHE": str(work / "cache"), "HOME": str(work)}
        if shutil.which("setpriv") is None or _as_nobody(["--version"], env).returncode != 0:
            pytest.skip("running as root, and cannot run bertlens as another user")
        done = _as_nobody(["info", "--model", str(path), "--json"], env)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        data = json.loads(done.stdout)
        assert data["message"] == f"Permission denied reading {path / name}." and "chmod" in data["hint"]
    finally:
        shutil.rmtree(work)


# 4. The cache folder: a file there is an error; a folder that cannot be written is skipped with a warning.


def test_cache_dir_that_is_a_file(capsys, tmp_path, monkeypatch):
    file = tmp_path / "cache"
    file.write_text("mine")
    data = assert_error(capsys, ["neighbors", "dog", "--cache-dir", str(file)], "InputError", "is a file")
    assert "--cache-dir" in data["hint"]
    assert_error(capsys, ["neighbors", "dog", "--cache-dir", str(file / "sub")], "InputError", "which is a file")
    monkeypatch.setenv("BERTLENS_CACHE", str(file))
    data = assert_error(capsys, ["neighbors", "dog"], "InputError", "from BERTLENS_CACHE", "is a file")
    assert "BERTLENS_CACHE" in data["hint"]
    assert file.read_text() == "mine"


def test_blank_and_empty_cache_settings(capsys, tmp_path, monkeypatch):
    assert_error(capsys, ["neighbors", "dog", "--cache-dir", "  "], "InputError", "blank")
    monkeypatch.setenv("BERTLENS_CACHE", " ")
    assert_error(capsys, ["neighbors", "dog"], "InputError", "BERTLENS_CACHE is blank")
    env = {"BERTLENS_CACHE": "", "XDG_CACHE_HOME": str(tmp_path)}
    assert cache_root(None, env) == tmp_path / "bertlens"  # empty means unset
    with pytest.raises(InputError, match="cache_dir must be a folder path") as err:
        cache_root(5)
    assert err.value.hint


def _unwritable_folder(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir(mode=0o555)
        return folder / "cache"
    folder = Path("/sys/bertlens-test-cache")  # even root may not make folders in sysfs
    try:
        folder.mkdir()
    except OSError:
        return folder
    folder.rmdir()
    pytest.skip("no unwritable folder to try")


def test_unwritable_cache_folder_warns_and_still_answers(default_model, tmp_path, caplog):
    folder = _unwritable_folder(tmp_path)
    with caplog.at_level(logging.WARNING, logger="bertlens.similarity.index"):
        index = open_index(default_model, folder)
    assert index.rows == default_model.matrix_rows
    assert any(
        "cannot write the similarity cache" in r.getMessage() and "--cache-dir" in r.getMessage()
        for r in caplog.records
    )


# 5. Blank model names are errors, an empty BERTLENS_MODEL is unset.


def test_blank_model_names(capsys, monkeypatch):
    assert_error(capsys, ["info", "--model", ""], "InputError", "The model name is empty")
    assert_error(capsys, ["tokens", "hi", "--model", "   "], "InputError", "is blank")
    monkeypatch.setenv("BERTLENS_MODEL", "   ")
    data = assert_error(capsys, ["info"], "InputError", "BERTLENS_MODEL is blank")
    assert "Unset BERTLENS_MODEL" in data["hint"]
    assert resolve(None, {"BERTLENS_MODEL": ""}).kind == "default"  # empty means unset
    for name in ("", " \t", "a\0b"):
        with pytest.raises(InputError) as err:
            load_model(name)
        assert err.value.hint


def test_model_names_the_system_cannot_look_up(capsys):
    long = "x" * 100_000
    data = assert_error(capsys, ["info", "--model", long], "ModelNotFoundError", "100,000 characters")
    assert len(data["message"]) < 500
    with pytest.raises(ModelNotFoundError, match="No such directory"):
        load_model("not a hub id, no such folder")
    with pytest.raises(ModelNotFoundError, match="No such directory"):
        load_model("~no-such-user-bertlens/model")


# 7. Wrong types from Python are bertlens' own InputError.


@pytest.mark.parametrize("value", [5, 3.5, b"model", ["default"], True])
def test_wrong_model_types_are_input_errors(value):
    with pytest.raises(InputError) as err:
        load_model(value)
    assert err.value.hint


def test_wrong_env_and_tokenizer_arguments(tiny_dirs):
    with pytest.raises(InputError, match="env must be a mapping"):
        load_model(str(tiny_dirs["bert"]), env=5)
    with pytest.raises(InputError, match="already-loaded"):
        load_model(str(tiny_dirs["bert"]), tokenizer=object())

    class Half:  # has a config, but not a transformers one
        config = 1

        def state_dict(self) -> dict:
            return {}

    with pytest.raises(InputError, match="Expected a path"):
        load_model(Half(), tokenizer=object())


@pytest.mark.parametrize("value", [None, "default", 5])
def test_functions_taking_a_model_refuse_other_values(value):
    for call in (info, open_index):
        with pytest.raises(InputError, match="must be a bertlens Model") as err:
            call(value)
        assert "load_model" in err.value.hint


def test_nan_in_an_encoder_layer_is_refused_by_contextual_commands(capsys, tiny_copy):
    """A NaN outside the embedding layer would make every layer's vectors NaN: the forward-pass commands say so."""
    path = tiny_copy("bert")
    edit_tensor(path, "encoder.layer.0.attention.self.query.weight", lambda m: m.__setitem__((0, 0), np.nan))
    model = load_model(str(path))
    assert info(model).warnings == ()  # the embedding layer itself is sound
    for argv in (["layers", "a dog"], ["context", "dog", "a dog.", "the dog."]):
        assert_error(
            capsys, [*argv, "--model", str(path)], "CorruptModelError", "encoder.layer.0.attention.self.query.weight"
        )
