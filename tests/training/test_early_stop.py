"""A run that stops before the end of its schedule says so, with the command that continues it, in every place a user
looks: the result and `--json` (`stopped_early`), the terminal, and a banner atop report.html; that command continues
it, and a finished run says nothing of the kind. The demo has no built-in time limit: it runs its whole schedule."""

from __future__ import annotations

import html
import json
import shlex

import pytest
from tiny_runs import TINY_SHAPE, tiny

from bertlens.cli import main
from bertlens.cli.common import Call
from bertlens.cli.training import pretrain as pretrain_command
from bertlens.cli.training import pretrain_config
from bertlens.training import PretrainConfig, pretrain, watch_report
from bertlens.training.early_stop import STOP_FILE, WHY, read_stop

SMALL = [*TINY_SHAPE, "--seq-length", "32", "--batch-size", "4", "--warmup-steps", "2", "--precision", "float32"]
SMALL += ["--threads", "1", "--probe", "king", "--benchmarks", "rg65", "--no-progress"]


def test_demo_runs_its_whole_schedule_unless_given_a_limit():
    demo = PretrainConfig.preset_config("demo")
    assert demo.max_minutes is None and demo.checkpoint_seconds is None and demo.last_step == demo.max_steps
    demo_run = ["sample", "--preset", "demo", "--out", "d"]
    assert pretrain_config(Call(pretrain_command.make_context("pretrain", demo_run))).max_minutes is None
    limited = pretrain_command.make_context("pretrain", [*demo_run, "--minutes", "1"])
    assert pretrain_config(Call(limited)).max_minutes == 1


def test_a_paused_run_says_so_everywhere_and_its_command_finishes_it(
    paragraphs, paragraphs_tokenizer, tmp_path, capsys
):
    out = str(tmp_path / "run")
    first = ["pretrain", str(paragraphs), "--out", out, "--tokenizer", str(paragraphs_tokenizer), *SMALL]
    assert main([*first, "--max-steps", "4", "--stop-at-step", "2", "--json"]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    command = f"bertlens pretrain --out {shlex.quote(out)} --resume"
    assert result["stopped_early"] == {"reason": "stop_at_step", "step": 2, "max_steps": 4, "command": command}
    assert f"\n  {command}\n" in captured.err  # the terminal: the command on a line of its own, whole
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    banner = page[page.index("<body>") : page.index("<h1>")]  # above everything else
    assert "This run stopped early" in banner and "step 2 of 4" in banner and html.escape(command) in banner
    assert WHY["stop_at_step"] in banner

    assert main(["watch", out, "--json"]) == 0  # the watch report alone says it too
    assert json.loads(capsys.readouterr().out)["stopped_early"] == result["stopped_early"]
    assert main(["watch", out]) == 0
    assert capsys.readouterr().out.startswith("Stopped early at step 2 of 4")

    words = shlex.split(command)
    assert words[0] == "bertlens" and main([*words[1:], "--no-progress", "--json"]) == 0  # the command as given
    finished = json.loads(capsys.readouterr().out)
    assert (finished["step"], finished["stopped"], finished["stopped_early"]) == (4, "finished", None)
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "class=stopped" not in page and "stopped early" not in page.lower()


def test_a_time_limit_stop_is_continued_without_the_limit(paragraphs, paragraphs_tokenizer, tmp_path):
    """A limit of 60 µs, less than any step takes (so on any machine), stops the run after its first step."""
    out = tmp_path / "run"
    config = tiny(max_steps=1000, max_minutes=0.000001, watch=False)
    result = pretrain(config, paragraphs, out, tokenizer=paragraphs_tokenizer)
    stop = result.stopped_early
    assert stop is not None and (stop.reason, stop.step, stop.max_steps) == ("time limit", result.step, 1000)
    assert stop.command == f"bertlens pretrain --out {shlex.quote(str(out))} --resume --no-time-limit"
    lines = result.to_table().splitlines()
    assert lines[-3].startswith(f"Stopped early at step {result.step} of 1,000: {WHY['time limit']}")
    assert lines[-1] == f"  {stop.command}"
    assert json.loads((out / "training" / STOP_FILE).read_text(encoding="utf-8"))["stopped"] == "time limit"
    assert read_stop(out, result.step) == stop


def test_an_unrecorded_stop_is_still_named(paragraphs, paragraphs_tokenizer, tmp_path):
    """A run killed after its last checkpoint (its stop.json naming another step) or still training is unfinished."""
    out = tmp_path / "run"
    pretrain(tiny(max_steps=3, watch=True), paragraphs, out, tokenizer=paragraphs_tokenizer)
    assert read_stop(out, 3) is None and watch_report(out).stopped_early is None  # finished: nothing to say
    stop = read_stop(out, 2)  # as if the last checkpoint were step 2
    assert stop is not None and (stop.reason, stop.step, stop.max_steps) == ("unknown", 2, 3)
    assert stop.command.endswith("--resume")
    (out / "training" / STOP_FILE).write_text("not json", encoding="utf-8")
    assert read_stop(out, 2) == stop


@pytest.mark.parametrize("processes", [1, 2])
def test_the_command_fits_the_run(processes, tmp_path):
    from bertlens.training.early_stop import continue_command

    folder = tmp_path / "a run"
    command = continue_command(folder, "SIGTERM", processes)
    start = "bertlens" if processes == 1 else "torchrun --nproc-per-node 2 -m bertlens"
    assert shlex.split(command) == [*shlex.split(start), "pretrain", "--out", str(folder), "--resume"]
