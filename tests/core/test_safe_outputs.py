"""Never overwrite or lose a model: refused output folders, the source never written, stale stagings swept, extract
shards verified on resume, umask permissions; and the bad inputs of pretrain, train-tokenizer, watch and export.

Tiny models (tests/tiny.py) and a few KB of generated text keep every case to seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tiny_runs import TINY_SHAPE
from tiny_runs import tiny as training_tiny

from bertlens import InputError, export_matrix
from bertlens.cli import main
from bertlens.contextual.extract import ExtractOptions, extract, read_shards
from bertlens.core.outputs import STAGING_MARKER, new_staging, read_small_text
from bertlens.extend import extend_vocabulary
from bertlens.lens import Lens
from bertlens.training import PretrainConfig, TokenizerConfig, pretrain, train_tokenizer
from bertlens.training.checkpoints import RUN_MARKER

TINY_FLAGS = [
    *TINY_SHAPE,
    "--seq-length",
    "32",
    "--batch-size",
    "2",
    "--warmup-steps",
    "1",
    "--precision",
    "float32",
    "--threads",
    "1",
    "--no-watch",
    "--no-progress",
]


def tiny(**overrides: object) -> PretrainConfig:
    """test_training's tiny config, shortened further: two steps, no watching."""
    values: dict[str, object] = dict(batch_size=2, max_steps=2, warmup_steps=1, watch=False)
    return training_tiny(**{**values, **overrides})


def snapshot(folder: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every file under `folder` (and '<dir>' for folders): equal means untouched."""
    found = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        found[relative] = "<dir>" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, str]]:
    """Run the CLI in-process with --json; the exit code and the JSON printed (an error's, for exit 2)."""
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def assert_refused(code: int, error: dict[str, str], *phrases: str) -> None:
    assert code == 2, error
    assert error["error"] and error["hint"], error  # says what is wrong and what to do
    for phrase in phrases:
        assert phrase in error["message"], error


# --- pretrain: the run folder ---------------------------------------------------------------------------------------


def test_pretrain_refuses_a_folder_with_other_files(generated_corpus, generated_tokenizer, tmp_path, capsys):
    model = tmp_path / "my-files"  # not a model's folder (no weights): pretrain's own check of the run folder
    model.mkdir()
    for name, content in (("notes.txt", b"mine"), ("config.json", b"{}"), ("tokenizer.json", b"{}")):
        (model / name).write_bytes(content)
    before = snapshot(model)
    for extra in ([], ["--overwrite"]):
        code, error = cli(
            capsys,
            "pretrain",
            str(generated_corpus),
            "--out",
            str(model),
            "--tokenizer",
            str(generated_tokenizer),
            *extra,
        )
        assert_refused(code, error, "is not empty and is not a run folder")
        assert snapshot(model) == before
    code, error = cli(capsys, "pretrain", str(generated_corpus), "--out", str(model), "--resume")
    assert_refused(code, error, "not a run folder of bertlens pretrain")
    assert snapshot(model) == before


def test_pretrain_never_writes_the_model_it_continues(generated_corpus, tiny_copy, tmp_path, capsys):
    source = tiny_copy("bert")
    before = snapshot(source)
    for out, phrase in ((source, "is a model's folder"), (source / "run", "lies inside a model's folder")):
        for extra in ([], ["--overwrite"]):
            code, error = cli(
                capsys, "pretrain", str(generated_corpus), "--out", str(out), "--init-from", str(source), *extra
            )
            assert_refused(code, error, phrase)
            assert snapshot(source) == before
    relative = os.path.relpath(source, Path.cwd())  # the same folder spelled another way
    with pytest.raises(InputError, match="is a model's folder"):
        pretrain(tiny(init_from=str(source)), generated_corpus, Path(relative) / ".." / source.name)
    assert snapshot(source) == before


def test_pretrain_never_writes_into_its_tokenizer_folder(generated_corpus, generated_tokenizer, capsys):
    before = snapshot(generated_tokenizer)
    code, error = cli(
        capsys,
        "pretrain",
        str(generated_corpus),
        "--out",
        str(generated_tokenizer / "run"),
        "--tokenizer",
        str(generated_tokenizer),
    )
    assert_refused(code, error, "lies inside the tokenizer folder")
    assert snapshot(generated_tokenizer) == before


def test_marked_run_resumes_and_overwrite_starts_again(generated_corpus, generated_tokenizer, tmp_path):
    out = tmp_path / "run"
    first = pretrain(tiny(stop_at_step=1), generated_corpus, out, tokenizer=generated_tokenizer)
    assert first.step == 1 and json.loads((out / RUN_MARKER).read_text())["command"] == "pretrain"
    with pytest.raises(InputError, match="already holds a run"):
        pretrain(tiny(), generated_corpus, out, tokenizer=generated_tokenizer)
    with pytest.raises(InputError, match="cannot be used together"):
        pretrain(tiny(), generated_corpus, out, tokenizer=generated_tokenizer, resume=True, overwrite=True)
    resumed = pretrain(tiny(), generated_corpus, out, tokenizer=generated_tokenizer, resume=True)
    assert (resumed.step, resumed.resumed_from) == (2, 1)
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    again = pretrain(tiny(max_steps=1), generated_corpus, out, tokenizer=generated_tokenizer, overwrite=True)
    assert (again.step, again.resumed_from, again.checkpoints) == (1, None, ("step-00000001",))
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step-00000001"]  # the earlier run is gone
    assert not (out / "notes.txt").exists() and (out / RUN_MARKER).is_file()


def test_a_new_run_that_fails_leaves_nothing(generated_corpus, generated_tokenizer, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(InputError, match="holds no text"):
        pretrain(tiny(), empty, tmp_path / "new" / "run", tokenizer=generated_tokenizer)
    assert not (tmp_path / "new").exists()
    existing = tmp_path / "existing"
    existing.mkdir()
    with pytest.raises(InputError, match="holds no text"):
        pretrain(tiny(), empty, existing, tokenizer=generated_tokenizer)
    assert existing.is_dir() and not any(existing.iterdir())  # as empty as it was


def test_pretrain_broken_tokenizer_names_the_file(generated_corpus, tmp_path, capsys):
    broken = tmp_path / "tok"
    broken.mkdir()
    (broken / "tokenizer.json").write_text("{not json", encoding="utf-8")
    out = tmp_path / "run"
    code, error = cli(capsys, "pretrain", str(generated_corpus), "--out", str(out), "--tokenizer", str(broken))
    assert_refused(code, error, str(broken / "tokenizer.json"), "broken")
    assert "train-tokenizer" in error["hint"]
    assert not out.exists()


@pytest.mark.parametrize(
    ("flags", "field"),
    [
        (["--lr", "nan"], "learning_rate"),
        (["--lr", "inf"], "learning_rate"),
        (["--lr", "0"], "learning_rate"),
        (["--lr=-1e-4"], "learning_rate"),
        (["--minutes", "-1"], "max_minutes"),
        (["--minutes", "0"], "max_minutes"),
        (["--minutes", "nan"], "max_minutes"),
        (["--batch-size", "0"], "batch_size"),
        (["--max-steps", "-3"], "max_steps"),
        (["--seed", "-1"], "seed"),
        (["--dropout", "1.5"], "hidden_dropout_prob"),
        (["--attention-dropout", "nan"], "attention_probs_dropout_prob"),
        (["--mlm-probability", "1"], "mlm_probability"),
        (["--weight-decay", "-0.1"], "weight_decay"),
        (["--warmup-steps", "-1"], "warmup_steps"),
        (["--threads", "0"], "threads"),
        (["--stop-at-step", "0"], "stop_at_step"),
        (["--hidden-size", "100000000000"], "hidden_size"),
        (["--num-layers", "0"], "num_hidden_layers"),
        (["--keep-checkpoints", "0"], "keep_checkpoints"),
        (["--validation-tokens", "0"], "validation_tokens"),
        (["--new-rows-from", "-1"], "new_rows_from"),
    ],
)
def test_pretrain_bad_numbers(generated_corpus, generated_tokenizer, tmp_path, capsys, flags, field):
    out = tmp_path / "run"
    code, error = cli(
        capsys, "pretrain", str(generated_corpus), "--out", str(out), "--tokenizer", str(generated_tokenizer), *flags
    )
    assert_refused(code, error, field, flags[0].split("=")[0] + ":")  # the field, and the option as typed
    assert not out.exists()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"learning_rate": float("nan")}, "learning_rate must be a number greater than 0"),
        ({"hidden_size": "128"}, "hidden_size must be a whole number"),
        ({"batch_size": True}, "batch_size must be a whole number"),
        ({"max_minutes": -1.0}, "max_minutes"),
        ({"adam_beta2": 1.0}, "adam_beta2"),
        ({"probe_words": "king"}, "probe_words must be a list of words"),
        ({"watch": "yes"}, "watch must be true or false"),
        ({"mask_ratio": 0.8, "random_ratio": 0.3}, "add up to"),
        ({"schedule": "cosine"}, "Unknown schedule"),
    ],
)
def test_config_values_are_checked_where_the_config_is_made(values, message):
    with pytest.raises(InputError, match=message) as caught:
        PretrainConfig.from_dict({**PretrainConfig().to_dict(), **values})
    assert caught.value.hint


def test_config_files_are_read_with_a_bound(generated_corpus, generated_tokenizer, tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it would block: it must be refused unopened
    big = tmp_path / "big.json"
    big.write_text(" " * (1 << 20) + "{}", encoding="utf-8")
    bad = tmp_path / "bad.json"
    bad.write_text('{"hidden_size": "abc"}', encoding="utf-8")
    out = tmp_path / "run"
    for config, phrase in (
        ("/dev/zero", "not a regular file"),
        (str(fifo), "not a regular file"),
        (str(big), "larger than"),
        (str(tmp_path), "is a folder"),
        (str(tmp_path / "missing.json"), "No such"),
        (str(generated_corpus), "not valid JSON"),
        (str(bad), "hidden_size must be a whole number"),
    ):
        args = [
            "pretrain",
            str(generated_corpus),
            "--out",
            str(out),
            "--tokenizer",
            str(generated_tokenizer),
            "--config",
            config,
        ]
        code, error = cli(capsys, *args)
        assert_refused(code, error, phrase)
        assert not out.exists()
    with pytest.raises(InputError, match="not a regular file"):
        read_small_text("/dev/zero")


def test_save_config_is_not_written_over(generated_corpus, generated_tokenizer, tmp_path, capsys):
    kept = tmp_path / "config.json"
    kept.write_text("mine", encoding="utf-8")
    out = tmp_path / "run"
    args = [
        "pretrain",
        str(generated_corpus),
        "--out",
        str(out),
        "--tokenizer",
        str(generated_tokenizer),
        "--save-config",
        str(kept),
    ]
    code, error = cli(capsys, *args, *TINY_FLAGS, "--max-steps", "1")
    assert_refused(code, error, "exists")
    assert kept.read_text(encoding="utf-8") == "mine" and not out.exists()
    code, result = cli(capsys, *args, *TINY_FLAGS, "--max-steps", "1", "--overwrite")
    assert code == 0 and result["step"] == 1
    assert PretrainConfig.load(kept).max_steps == 1


def test_watch_word2vec_minutes_must_be_positive(tmp_path, capsys):
    for minutes in ("-1", "0", "nan", "inf"):
        code, error = cli(capsys, "watch", str(tmp_path), "--word2vec", str(tmp_path), "--word2vec-minutes", minutes)
        assert_refused(code, error, "--word2vec-minutes must be a positive number of minutes")
        assert "Example" in error["hint"]
    assert not any(tmp_path.iterdir())


# --- train-tokenizer ------------------------------------------------------------------------------------------------


def test_train_tokenizer_vocabulary_size_is_bounded(generated_corpus, tmp_path):
    """Far beyond tokenizers' limits the trainer aborts the whole process (SIGABRT): run it in a child."""
    for size in ("100000000000", "0", "-5", str((1 << 24) + 1)):
        out = tmp_path / "tok"
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "bertlens",
                "train-tokenizer",
                str(generated_corpus),
                "--out",
                str(out),
                "--vocab-size",
                size,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 2, run.stderr[-2000:]
        assert "vocab_size must be a whole number from 1 to 16,777,216" in run.stderr and "hint:" in run.stderr
        assert "Traceback" not in run.stderr and not out.exists()
    with pytest.raises(InputError, match="min_frequency"):
        train_tokenizer(generated_corpus, tmp_path / "tok", TokenizerConfig(vocab_size=100, min_frequency=2**65))
    assert not any(tmp_path.iterdir())


def test_train_tokenizer_out_is_a_file(generated_corpus, tmp_path, capsys):
    file = tmp_path / "taken"
    file.write_text("mine", encoding="utf-8")
    code, error = cli(capsys, "train-tokenizer", str(generated_corpus), "--out", str(file), "--vocab-size", "80")
    assert_refused(code, error, "exists and is not a folder")
    assert file.read_text(encoding="utf-8") == "mine" and sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def unprivileged(args: list[str]) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process that read-only folders stop (as root: without the capability to override them)."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("root writes into read-only folders, and setpriv is missing to drop that power")
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]
    return subprocess.run(
        [*prefix, sys.executable, "-m", "bertlens", *args, "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=240,
    )


@pytest.mark.slow  # several commands in fresh processes
def test_outputs_in_a_read_only_folder_are_clear_errors(generated_corpus, generated_tokenizer, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    cases = [
        ["train-tokenizer", str(generated_corpus), "--out", str(locked / "tok"), "--vocab-size", "80"],
        [
            "pretrain",
            str(generated_corpus),
            "--out",
            str(locked / "run"),
            "--tokenizer",
            str(generated_tokenizer),
            *TINY_FLAGS,
        ],
    ]
    try:
        for args in cases:
            run = unprivileged(args)
            assert run.returncode == 2, run.stderr[-2000:]
            error = json.loads(run.stdout)
            assert "Permission denied" in error["message"] and error["hint"], error
            assert "Traceback" not in run.stderr
            assert not any(locked.iterdir())
    finally:
        locked.chmod(0o755)


# --- export and extend ----------------------------------------------------------------------------------------------


def test_export_needs_a_real_path(tiny_dirs, tiny_models, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for out in ("", "   "):
        code, error = cli(capsys, "export", "--model", str(tiny_dirs["bert"]), "--out", out, "--format", "npy")
        assert_refused(code, error, "path is empty")
    assert not any(tmp_path.iterdir())  # nothing written into the current folder
    model = tiny_models["bert"]
    for bad in (None, 5, b"\0".decode() + "x"):
        with pytest.raises(InputError):
            export_matrix(model, bad, "npy")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="path must be a file or folder name"):
        Lens(model).export(None, "npy")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="Unknown export format"):
        export_matrix(model, tmp_path / "x", None)  # type: ignore[arg-type]
    assert not any(tmp_path.iterdir())


def test_extend_never_writes_inside_its_source(tiny_copy, tmp_path):
    from bertlens.core.model import load_model

    source = tiny_copy("bert")
    before = snapshot(source)
    model = load_model(str(source))
    with pytest.raises(InputError, match="lies inside a model's folder"):
        extend_vocabulary(model, ["zebra"], source / "extended")
    with pytest.raises(InputError, match="path must be a file or folder name"):
        extend_vocabulary(model, ["zebra"], None)  # type: ignore[arg-type]
    assert snapshot(source) == before


# --- places never written: model folders and installed packages -----------------------------------------------------


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Relative path -> (size, mtime in ns) of everything under `folder`: cheap enough for the installed model."""
    return {p.relative_to(folder).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def forbidden_places(model_dir: Path, tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Each place no command writes, with the phrase its refusal says: inside the installed default model, inside a
    tiny model saved in tmp, a new folder inside site-packages, and a link in tmp that leads into the tiny model."""
    import sysconfig

    from bertlens.core.sources import default_model_dir

    link = tmp_path / "link"
    link.symlink_to(model_dir, target_is_directory=True)
    packages = Path(sysconfig.get_paths()["purelib"]) / f"bertlens-test-{os.getpid()}-{random.randrange(1 << 30)}"
    return {
        "installed model": (default_model_dir() / "out", "lies inside a model's folder"),
        "tiny model": (model_dir / "sub" / "out", "lies inside a model's folder"),
        "site-packages": (packages / "out", "lies inside the folder of installed Python packages"),
        "link into a model": (link / "sub" / "out", "lies inside a model's folder"),
    }


WRITERS = {  # command -> its arguments writing to {out} (a folder) or {file} (a file name inside {out})
    "export": ["export", "--model", "{model}", "--out", "{out}", "--format", "npy"],
    "extend": ["extend", "--words", "zebra", "--model", "{model}", "--out", "{out}"],
    "extract": ["extract", "{corpus}", "--model", "{model}", "--out", "{out}"],
    "index": ["index", "{corpus}", "--model", "{model}", "--out", "{out}"],
    "distill": ["distill", "{corpus}", "--words", "cat", "--model", "{model}", "--out", "{out}/words.txt"],
    "layers": ["layers", "the cat", "--model", "{model}", "--out", "{out}/vectors.npy"],
    "plot": ["plot", "positions", "--model", "{model}", "--out", "{out}/positions.png"],
    "senses": ["senses", "{tmp}/no-index", "cat", "--plot", "{out}/senses.png"],
    "train-tokenizer": ["train-tokenizer", "{corpus}", "--out", "{out}", "--vocab-size", "80"],
    "pretrain": ["pretrain", "{corpus}", "--out", "{out}", "--tokenizer", "{tokenizer}", *TINY_FLAGS],
    "pretrain --save-config": ["pretrain", "{corpus}", "--out", "{tmp}/run", "--tokenizer", "{tokenizer}",
                               "--save-config", "{out}/config.json", *TINY_FLAGS],
    "watch": ["watch", "{tmp}", "--out", "{out}"],
    "neighbors --cache-dir": ["neighbors", "cat", "--model", "{model}", "--cache-dir", "{out}"],
}  # fmt: skip


@pytest.mark.parametrize("command", list(WRITERS))
def test_no_command_writes_into_a_model_or_an_installed_package(
    command, tiny_dirs, generated_corpus, generated_tokenizer, tmp_path, capsys
):
    from bertlens.core.sources import default_model_dir

    model_dir = tiny_dirs["bert"]
    before = listing(model_dir), listing(default_model_dir())
    for place, (out, phrase) in forbidden_places(model_dir, tmp_path).items():
        fields = {
            "model": model_dir,
            "corpus": generated_corpus,
            "tokenizer": generated_tokenizer,
            "tmp": tmp_path,
            "out": out,
        }
        code, error = cli(capsys, *[arg.format(**fields) for arg in WRITERS[command]])
        assert_refused(code, error, phrase, "never writes")
        assert "e.g. " in error["hint"], (place, error)  # a place to write instead
        assert not out.exists(), place
        assert place == "installed model" or not out.parent.exists(), place  # no folder made on the way
    assert (listing(model_dir), listing(default_model_dir())) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link"]  # nothing beside it either


def test_a_run_folder_is_named_only_by_the_commands_that_own_it(tmp_path):
    from bertlens.core.outputs import check_place, output_path

    run = tmp_path / "run"  # what a pretrain run holds after its first checkpoint: a model, and the run's mark
    run.mkdir()
    for name in ("config.json", "model.safetensors", RUN_MARKER):
        (run / name).write_text("{}", encoding="utf-8")
    assert output_path(run, "run", run=True) == run  # pretrain resumes it, watch writes its report into it
    for target, flags in ((run, {}), (run / "report", {"run": True}), (run / "checkpoints" / "x", {"run": True})):
        with pytest.raises(InputError, match="model's folder") as caught:
            check_place(target, **flags)
        assert "e.g. ./" in caught.value.hint or "e.g. ~/" in caught.value.hint
    (run / RUN_MARKER).unlink()  # a model folder without the mark is no run
    with pytest.raises(InputError, match="is a model's folder"):
        output_path(run, "run", run=True)
    assert output_path(tmp_path / "elsewhere" / "run", "run", run=True) == tmp_path / "elsewhere" / "run"


def test_watch_never_writes_its_report_into_a_model(tiny_copy, capsys):
    source = tiny_copy("bert")
    before = snapshot(source)
    code, error = cli(capsys, "watch", str(source))  # the report's default place: the folder watched
    assert_refused(code, error, "is a model's folder")
    assert snapshot(source) == before


# --- stale stagings -------------------------------------------------------------------------------------------------


def killed_staging(parent: Path, kind: str) -> Path:
    """A staging folder left by a process killed with SIGKILL while writing into it."""
    code = (
        "import sys; from pathlib import Path; from bertlens.core.outputs import new_staging\n"
        f"folder = new_staging(Path(sys.argv[1]), {kind!r})\n"
        "(folder / 'half-written.bin').write_bytes(bytes(1 << 20))\n"
        "print(folder, flush=True)\n"
        "sys.stdin.read()\n"
    )
    with subprocess.Popen(  # closes its pipes on leaving
        [sys.executable, "-c", code, str(parent)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdout is not None
        folder = Path(child.stdout.readline().strip())
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert folder.is_dir() and (folder / STAGING_MARKER).is_file()
    return folder


def foreign_stagings(parent: Path) -> list[Path]:
    """Stagings that must be kept: one in use (this process), one of another host, one without a marker."""
    live = new_staging(parent, "export")
    other = parent / ".bertlens-export-999999-0000abcd"
    other.mkdir()
    (other / STAGING_MARKER).write_text(json.dumps({"pid": 999999, "host": socket.gethostname() + "-other"}))
    unmarked = parent / ".bertlens-extend-999998-0000abce"
    unmarked.mkdir()
    (unmarked / "file").write_text("not provably ours")
    return [live, other, unmarked]


def test_export_sweeps_stagings_of_killed_runs(tiny_models, tmp_path):
    dead = [killed_staging(tmp_path, "export"), killed_staging(tmp_path, "extend")]
    kept = foreign_stagings(tmp_path)
    export_matrix(tiny_models["bert"], tmp_path / "out", "npy")
    assert not any(folder.exists() for folder in dead)
    assert all(folder.exists() for folder in kept)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["vocab.txt", "word_embeddings.npy"]
    shutil.rmtree(kept[0])


def test_extend_and_train_tokenizer_sweep_stagings_of_killed_runs(tiny_models, generated_corpus, tmp_path):
    dead = killed_staging(tmp_path, "extend")
    extend_vocabulary(tiny_models["bert"], ["zebra"], tmp_path / "extended")
    assert not dead.exists()
    dead = killed_staging(tmp_path, "tokenizer")
    train_tokenizer(generated_corpus, tmp_path / "tok", TokenizerConfig(vocab_size=80))
    assert not dead.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["extended", "tok"]  # nothing else left behind


# --- extract: shards verified on resume -----------------------------------------------------------------------------


def shard_rows(out: Path) -> list[object]:
    shards = list(read_shards(out))
    return [np.concatenate([s[i] for s in shards]) if i != 2 else [w for s in shards for w in s[2]] for i in range(4)]


def test_extract_resume_rewrites_damaged_shards(tiny_models, tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"the cat sat on the mat {i}\n" for i in range(9)), encoding="utf-8")
    model = tiny_models["bert"]
    options = ExtractOptions(shard_texts=2)
    whole = extract(model, corpus, tmp_path / "whole", options=options)
    out = tmp_path / "damaged"
    extract(model, corpus, out, options=options)
    manifest = json.loads((out / "manifest.json").read_text())
    assert all(set(s["files"]) and all(len(f["sha256"]) == 64 for f in s["files"].values()) for s in manifest["shards"])
    vectors = out / "vectors-00001.npy"
    vectors.write_bytes(vectors.read_bytes()[:100])  # truncated, as a full disk or a copy cut short leaves it
    with pytest.raises(InputError, match="damaged or missing"):
        list(read_shards(out))
    code, result = cli(
        capsys,
        "extract",
        str(corpus),
        "--model",
        str(tiny_models["bert"].source.path),
        "--out",
        str(out),
        "--resume",
        "--shard-texts",
        "2",
    )
    assert code == 0, result
    assert result["resumed_after"] == 2 and result["rows"] == whole.rows
    assert json.loads((out / "manifest.json").read_text())["complete"] is True
    for ours, theirs in zip(shard_rows(out), shard_rows(tmp_path / "whole"), strict=True):
        assert np.array_equal(ours, theirs) if isinstance(ours, np.ndarray) else ours == theirs
    rows = out / "rows-00003.tsv"
    rows.write_bytes(rows.read_bytes().replace(b"cat", b"cot"))  # same size, other bytes: only the checksum tells
    again = extract(model, corpus, out, options=options, resume=True)
    assert again.resumed_after == 6 and again.rows == whole.rows and b"cot" not in rows.read_bytes()
    (out / "vectors-00004.npy").unlink()  # a missing shard, even in a complete extract
    again = extract(model, corpus, out, options=options, resume=True)
    assert again.resumed_after == 8 and again.rows == whole.rows and (out / "vectors-00004.npy").is_file()
    for ours, theirs in zip(shard_rows(out), shard_rows(tmp_path / "whole"), strict=True):
        assert np.array_equal(ours, theirs) if isinstance(ours, np.ndarray) else ours == theirs
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


# --- permissions ----------------------------------------------------------------------------------------------------


def modes(folder: Path) -> set[tuple[str, int]]:
    """(kind, permission bits) of `folder` and everything under it."""
    return {("dir" if p.is_dir() else "file", stat.S_IMODE(p.stat().st_mode)) for p in [folder, *folder.rglob("*")]}


def test_outputs_follow_the_umask(tiny_models, tiny_copy, generated_corpus, generated_tokenizer, tmp_path):
    from bertlens.core.model import load_model

    source = tiny_copy("bert")
    (source / "README.md").write_text("a model card, copied along", encoding="utf-8")
    for file in source.iterdir():
        file.chmod(0o444)  # a read-only source (as in a shared cache): its copies still follow the umask
    previous = os.umask(0o027)
    try:
        model = tiny_models["bert"]
        for fmt in ("npy", "safetensors", "word2vec", "tensorboard"):
            export_matrix(model, tmp_path / "export" / fmt, fmt)
        extend_vocabulary(load_model(str(source)), ["zebra"], tmp_path / "extended")
        train_tokenizer(generated_corpus, tmp_path / "tok", TokenizerConfig(vocab_size=80))
        pretrain(tiny(max_steps=1), generated_corpus, tmp_path / "run", tokenizer=generated_tokenizer)
        extract(model, generated_corpus, tmp_path / "extract", options=ExtractOptions(shard_texts=40))
        extract(model, generated_corpus, tmp_path / "extract" / "parquet", options=ExtractOptions(format="parquet"))
    finally:
        os.umask(previous)
    for name in ("export", "extended", "tok", "run", "extract"):
        assert modes(tmp_path / name) == {("dir", 0o750), ("file", 0o640)}, name


def test_caches_word_vectors_and_pictures_follow_the_umask(tiny_models, tmp_path):
    """The similarity cache (folder and files), distil's word2vec file and a drawn picture: 0o750 / 0o640 under 027."""
    from bertlens.contextual.distill import distill
    from bertlens.embeddings.positions import position_similarity
    from bertlens.plots.render import render
    from bertlens.similarity.index import open_index

    model = tiny_models["bert"]
    previous = os.umask(0o027)
    try:
        index = open_index(model, tmp_path / "cache")
        index.precompute()  # the neighbour table: written into the cache folder beside the unit rows
        texts = ["the cat saw the dog", "a dog and a cat", "the cat"]
        distill(model, ["cat", "dog"], texts, out=tmp_path / "vectors" / "words.txt")
        render(position_similarity(model, limit=8), tmp_path / "pictures" / "positions.html")
    finally:
        os.umask(previous)
    assert {p.name for p in (tmp_path / "cache").rglob("*") if p.is_file()} >= {"unit.npy", "table.npz"}
    for name in ("cache", "vectors", "pictures"):
        assert modes(tmp_path / name) == {("dir", 0o750), ("file", 0o640)}, name
    assert not [p for p in tmp_path.rglob(".*")]  # no staging folder or partial file left behind


def test_a_picture_is_never_written_over_unless_asked(tiny_models, tmp_path):
    from bertlens.embeddings.positions import position_similarity
    from bertlens.plots.render import PlotOptions, render

    result = position_similarity(tiny_models["bert"], limit=8)
    target = tmp_path / "positions.html"
    target.write_text("mine", encoding="utf-8")
    with pytest.raises(InputError, match="exists; it was left as it is"):
        render(result, target)
    assert target.read_text(encoding="utf-8") == "mine"
    render(result, target, PlotOptions(overwrite=True))
    assert target.read_bytes().startswith(b"<!DOCTYPE html>") or b"<html" in target.read_bytes()[:500]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["positions.html"]  # no partial file left


def test_a_picture_that_cannot_be_written_leaves_no_folder(tiny_models, tmp_path):
    from bertlens.embeddings.positions import position_similarity
    from bertlens.plots.render import render

    result = position_similarity(tiny_models["bert"], limit=8)
    (tmp_path / "file").write_text("x", encoding="utf-8")
    for target in (tmp_path / "file" / "below" / "p.html", tmp_path / "new" / "sub" / f"{'p' * 300}.html"):
        with pytest.raises(InputError, match="Cannot write") as caught:
            render(result, target)  # under a file; a name too long, found only once its folders were made
        assert caught.value.hint
        assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_atomic_file_without_overwrite_keeps_a_file_that_appeared(tmp_path):
    from bertlens.core.outputs import atomic_file

    target = tmp_path / "out.bin"
    with pytest.raises(FileExistsError), atomic_file(target, overwrite=False) as handle:
        handle.write(b"new")
        target.write_bytes(b"appeared meanwhile")
    assert target.read_bytes() == b"appeared meanwhile"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]
