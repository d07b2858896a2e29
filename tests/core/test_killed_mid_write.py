"""Killed at the worst moment, nothing is lost or left half-written: `pretrain` killed with SIGKILL while it places a
checkpoint resumes to the planned step with a continuous log and the weights of a run never stopped; SIGTERM ends it
on a checkpoint with a resume hint; `export`, `extend` and `extract` killed at each step that moves files into place
leave no half-written output (a rerun succeeds, or says what to do); and the sweep of stale staging folders spares
every one it cannot prove is a dead bertlens process's of this host.

Each command runs as the CLI in a child process that stops itself at a chosen point (a Python audit hook on the file
operation: the nth rename out of a staging folder, the nth write of the training log) and waits there, so the kill
lands exactly there, never after a guessed time. Tiny models (tests/conftest.py) and a few KB of text keep each case
to seconds.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bertlens.cli import main
from bertlens.core.outputs import STAGING_MARKER
from bertlens.training.checkpoints import checkpoints

pytestmark = pytest.mark.slow  # each case starts the CLI in a fresh process (torch and a model) and kills it
ROOT = Path(__file__).resolve().parents[2]

# The child: the bertlens CLI, stopped at the nth audit event of a kind whose first argument contains a text.
STOP_AT = r"""
import sys
from bertlens.cli import main

events, text, nth = set(sys.argv[1].split(",")), sys.argv[2], int(sys.argv[3])
state = {"seen": 0, "inside": False}


def stop(event, args):
    if state["inside"] or event not in events or not args or text not in str(args[0]):
        return
    state["inside"] = True
    state["seen"] += 1
    if state["seen"] == nth:
        print("stopped at", event, args[0], flush=True)
        sys.stdin.readline()  # the parent kills this process here, or signals it and then lets it go on
    state["inside"] = False


sys.addaudithook(stop)
sys.exit(main(sys.argv[4:]))
"""
MOVES = "os.rename,os.replace"  # the audit events of a file or folder moved into place


def stopped(args: list[str], events: str, text: str, nth: int = 1) -> subprocess.Popen[str] | None:
    """The CLI running `args` in a child, stopped at the nth of `events` on a path holding `text`; None when it ended
    without reaching it (then it ran to its end)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", STOP_AT, events, text, str(nth), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    if line.startswith("stopped at"):
        return child
    _, err = child.communicate(timeout=120)
    assert child.returncode == 0, err[-3000:]
    return None


def killed(child: subprocess.Popen[str], number: signal.Signals) -> tuple[int, str]:
    """Send `number` to the stopped child (a catchable signal: then let it go on); its exit code and standard error."""
    child.send_signal(number)
    _, err = child.communicate(input="" if number == signal.SIGKILL else "\n", timeout=120)
    return child.returncode, err


def leftovers(folder: Path) -> list[str]:
    """Staging folders and partial files anywhere under `folder`."""
    return sorted(p.name for p in folder.rglob(".*") if p.name.startswith(".bertlens-") or p.name.endswith(".partial"))


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


# --- pretrain -------------------------------------------------------------------------------------------------------

TINY = ["--hidden-size", "32", "--heads", "2", "--intermediate-size", "64", "--max-positions", "64"]
TINY += ["--seq-length", "32", "--batch-size", "2", "--warmup-steps", "1", "--precision", "float32", "--threads", "1"]
TINY += ["--max-steps", "12", "--checkpoint-every", "4", "--log-every", "1", "--no-watch", "--no-progress"]


def pretrain_args(generated_corpus: Path, tokenizer: Path, out: Path) -> list[str]:
    return ["pretrain", str(generated_corpus), "--out", str(out), "--tokenizer", str(tokenizer), *TINY]


def logged_steps(run: Path) -> list[int]:
    lines = (run / "training" / "log.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["step"] for line in lines]


def same_weights(a: Path, b: Path) -> bool:
    from safetensors.numpy import load_file

    first, second = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    return first.keys() == second.keys() and all(np.array_equal(first[k], second[k]) for k in first)


def test_pretrain_killed_placing_a_checkpoint_resumes_with_nothing_lost(
    generated_corpus, generated_tokenizer, tmp_path, capsys
):
    run = tmp_path / "run"
    child = stopped(pretrain_args(generated_corpus, generated_tokenizer, run), MOVES, ".bertlens-checkpoint-", nth=2)
    assert child is not None, "the run never placed its second checkpoint"
    code, err = killed(child, signal.SIGKILL)  # step 8's checkpoint written in staging, not yet in place
    assert code == -signal.SIGKILL, err[-2000:]
    assert [step for step, _ in checkpoints(run)] == [4] and leftovers(run)  # the staged one is left behind
    assert logged_steps(run) == list(range(1, 9))  # the log ran ahead of the last checkpoint

    code, result = cli(capsys, "pretrain", "--out", str(run), "--resume", "--no-progress")
    assert code == 0, result
    assert (result["step"], result["resumed_from"], result["stopped"]) == (12, 4, "finished")
    assert logged_steps(run) == list(range(1, 13))  # continuous: steps 5-8 once, from the resumed run
    assert [step for step, _ in checkpoints(run)] == [8, 12] and leftovers(run) == []
    assert cli(capsys, *pretrain_args(generated_corpus, generated_tokenizer, tmp_path / "whole"))[0] == 0
    assert same_weights(run, tmp_path / "whole")  # bit for bit the run that was never stopped


def test_pretrain_sigterm_ends_on_a_checkpoint_with_a_resume_hint(
    generated_corpus, generated_tokenizer, tmp_path, capsys
):
    run = tmp_path / "run"
    child = stopped(pretrain_args(generated_corpus, generated_tokenizer, run), "open", "log.jsonl", nth=6)
    assert child is not None, "the run never wrote its sixth log line"
    code, err = killed(child, signal.SIGTERM)  # asks to stop after the step it is in (step 6)
    assert code == 130, err[-2000:]
    assert "SIGTERM at step 6: checkpoint step-00000006 written" in err and "--resume" in err
    assert "Traceback" not in err
    assert [step for step, _ in checkpoints(run)] == [4, 6] and logged_steps(run) == list(range(1, 7))
    code, result = cli(capsys, "pretrain", "--out", str(run), "--resume", "--no-progress")
    assert code == 0 and (result["step"], result["resumed_from"]) == (12, 6), result
    assert logged_steps(run) == list(range(1, 13)) and leftovers(run) == []


# --- export, extend, extract ----------------------------------------------------------------------------------------


def test_export_killed_at_every_move_leaves_no_half_written_export(tiny_dirs, tmp_path, capsys):
    model = str(tiny_dirs["bert"])
    for nth in range(1, 10):
        out = tmp_path / f"export-{nth}"
        args = ["export", "--model", model, "--out", str(out), "--format", "word2vec"]
        child = stopped(args, MOVES, ".bertlens-export-", nth)
        if child is None:
            break  # this export moves fewer things: every point was tried
        code, err = killed(child, signal.SIGKILL)
        assert code == -signal.SIGKILL, err[-2000:]
        assert not out.exists(), (nth, sorted(p.name for p in out.iterdir()))  # all or nothing: here nothing
        code, result = cli(capsys, *args)  # the same command again: no --overwrite needed
        assert code == 0, result
        assert sorted(p.name for p in out.iterdir()) == ["word_embeddings.w2v.txt"]
        assert leftovers(tmp_path) == []  # the killed run's staging folder was swept
    assert nth > 1, "the export never moved a file into place"


def test_export_killed_into_a_folder_in_use_says_what_to_do(tiny_dirs, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    args = ["export", "--model", str(tiny_dirs["bert"]), "--out", str(out), "--format", "npy"]
    child = stopped(args, MOVES, ".bertlens-export-", nth=2)  # the matrix moved in, its vocabulary not yet
    assert child is not None
    assert killed(child, signal.SIGKILL)[0] == -signal.SIGKILL
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    code, error = cli(capsys, *args)
    assert code == 2 and "--overwrite" in error["hint"], error  # the file it would replace is named
    code, result = cli(capsys, *args, "--overwrite")
    assert code == 0, result
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "vocab.txt", "word_embeddings.npy"]
    assert leftovers(tmp_path) == []


def test_extend_killed_before_its_model_is_moved_in_leaves_nothing(tiny_dirs, tmp_path, capsys):
    out = tmp_path / "extended"
    args = ["extend", "--words", "zebra", "okapi", "--model", str(tiny_dirs["bert"]), "--out", str(out)]
    child = stopped(args, MOVES, ".bertlens-extend-")
    assert child is not None, "extend never moved its model into place"
    assert killed(child, signal.SIGKILL)[0] == -signal.SIGKILL
    assert not out.exists() and leftovers(tmp_path)  # the whole model was staged; none of it is at the target
    code, result = cli(capsys, *args)
    assert code == 0 and result["new_rows"] == result["old_rows"] + 2, result
    assert leftovers(tmp_path) == [] and (out / "config.json").is_file()


def test_extract_killed_between_a_shards_files_resumes_to_the_whole(tiny_dirs, generated_corpus, tmp_path, capsys):
    from bertlens.contextual.extract import read_shards

    out = tmp_path / "extract"
    args = [
        "extract",
        str(generated_corpus),
        "--model",
        str(tiny_dirs["bert"]),
        "--out",
        str(out),
        "--shard-texts",
        "8",
    ]
    args += ["--no-progress"]
    child = stopped(args, MOVES, ".bertlens-extract-", nth=4)  # shard 1: its rows in place, its vectors not yet
    assert child is not None
    assert killed(child, signal.SIGKILL)[0] == -signal.SIGKILL
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8"))["complete"] is False
    code, error = cli(capsys, *args)
    assert code == 2 and "--resume" in error["hint"], error
    code, result = cli(capsys, *args, "--resume")
    assert code == 0 and result["resumed_after"] == 8, result
    assert cli(capsys, *args[:5], str(tmp_path / "whole"), *args[6:])[0] == 0
    assert leftovers(out) == [] and sorted(p.name for p in out.iterdir()) == sorted(
        p.name for p in (tmp_path / "whole").iterdir()
    )
    for ours, theirs in zip(read_shards(out), read_shards(tmp_path / "whole"), strict=True):
        assert all(
            np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b for a, b in zip(ours, theirs, strict=True)
        )


# --- the sweep of stale staging folders -----------------------------------------------------------------------------


def dead_pid() -> int:
    """The id of a process that has ended (a child, run to its end and reaped)."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(child.stdout)


def marked(folder: Path, **about: object) -> Path:
    folder.mkdir()
    (folder / STAGING_MARKER).write_text(json.dumps(about), encoding="utf-8")
    (folder / "half-written.bin").write_bytes(bytes(1024))
    return folder


HOLDER = """
import sys
from pathlib import Path
from bertlens.core.outputs import new_staging

print(new_staging(Path(sys.argv[1]), "export"), flush=True)
sys.stdin.readline()
"""


def test_a_sweep_removes_only_what_a_dead_bertlens_process_of_this_host_left(tiny_dirs, tmp_path, capsys):
    parent, host, dead = tmp_path, socket.gethostname(), dead_pid()
    export = ["export", "--model", str(tiny_dirs["bert"]), "--format", "npy", "--out"]
    with subprocess.Popen(  # a live process (not this one) holding a staging folder, as a running export does
        [sys.executable, "-c", HOLDER, str(parent)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    ) as holder:  # closes its pipes on leaving
        assert holder.stdout is not None
        live = Path(holder.stdout.readline().strip())
        (live / "half-written.bin").write_bytes(bytes(1024))
        stale = marked(parent / f".bertlens-export-{dead}-0000aaaa", pid=dead, host=host, kind="export")
        user = parent / "theirs"
        decoys = [
            live,
            marked(parent / f".bertlens-export-{dead}-0000cccc", pid=dead, host=f"{host}-other", kind="export"),
            marked(parent / f".bertlens-export-{dead}-0000dddd", pid=dead + 1, host=host, kind="export"),  # not its pid
            parent / f".bertlens-extend-{dead}-0000eeee",  # no marker: not provably bertlens's
            parent / f".bertlens-tokenizer-{dead}-0000ffff",  # a file, not a folder
            parent / f".bertlens-export-{dead}-00001111",  # a link to a user's folder (that holds a stale marker)
            parent / ".bertlens-notes",  # a user's own folder, named otherwise
        ]
        decoys[3].mkdir()
        (decoys[3] / "data.txt").write_text("mine", encoding="utf-8")
        decoys[4].write_text("mine", encoding="utf-8")
        marked(user, pid=dead, host=host, kind="export")
        decoys[5].symlink_to(user, target_is_directory=True)
        decoys[6].mkdir()
        before = {p.name: sorted(q.name for q in p.iterdir()) if p.is_dir() else p.read_text() for p in decoys}
        assert cli(capsys, *export, str(parent / "a"))[0] == 0  # its staging folder sweeps `parent` first
        assert not stale.exists()  # the one proved stale is gone
        after = {p.name: sorted(q.name for q in p.iterdir()) if p.is_dir() else p.read_text() for p in decoys}
        assert after == before and sorted(p.name for p in user.iterdir()) == [STAGING_MARKER, "half-written.bin"]
        holder.kill()  # the holder dies without cleaning up: its staging folder is stale from now on
        holder.wait(timeout=60)
    assert cli(capsys, *export, str(parent / "b"))[0] == 0
    assert not live.exists()  # swept
    assert all(p.exists() or p.is_symlink() for p in decoys[1:])
