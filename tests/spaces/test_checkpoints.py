"""`diff` along one training run: a tiny BERT pre-trained at a steady learning rate, its first checkpoint against
itself and against every later one. The more steps lie between two checkpoints, the fewer nearest tokens they share
and the further apart their rows lie after alignment."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from tiny_runs import tiny

from bertlens import load_model
from bertlens.spaces import SpaceDiff, diff
from bertlens.training import pretrain
from bertlens.training.checkpoints import checkpoints

EVERY = 8  # steps between checkpoints
SAVED = 4  # checkpoints, the last at step EVERY * SAVED
EPS32 = float(np.finfo(np.float32).eps)


@pytest.fixture(scope="module")
def along_the_run(
    paragraphs: Path, paragraphs_tokenizer: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[int], list[SpaceDiff]]:
    """The steps of the run's checkpoints, and the first one diffed against each (itself first).

    A constant learning rate of 2e-3 after two warm-up steps: every stretch of steps moves the rows about as much as the
    one before, where a decaying schedule would leave the last stretch nearly still."""
    out = tmp_path_factory.mktemp("checkpoints") / "run"
    config = tiny(
        max_steps=EVERY * SAVED,
        checkpoint_every=EVERY,
        keep_checkpoints=SAVED,
        learning_rate=2e-3,
        schedule="constant",
        watch=False,
    )
    pretrain(config, paragraphs, out, tokenizer=paragraphs_tokenizer)
    found = checkpoints(out)
    first = load_model(found[0][1])
    return [step for step, _ in found], [diff(first, load_model(folder), top=3) for _, folder in found]


def test_every_checkpoint_is_kept_and_compared_on_the_whole_vocabulary(along_the_run):
    steps, diffs = along_the_run
    assert steps == [EVERY * (n + 1) for n in range(SAVED)]
    assert all(d.same_vocabulary and d.tokens == diffs[0].tokens and d.k == 10 for d in diffs)


def test_the_first_checkpoint_against_itself_keeps_every_neighbour(along_the_run):
    _, diffs = along_the_run
    itself = diffs[0]
    assert itself.overlap_mean == 1.0 and itself.overlap.min() == 1.0
    assert itself.histogram[-1] == itself.tokens and itself.raw_cosine_mean is not None


def test_overlap_with_the_first_checkpoint_falls_as_the_gap_grows(along_the_run):
    _, diffs = along_the_run
    means = [d.overlap_mean for d in diffs]
    assert all(earlier > later for earlier, later in pairwise(means)), means
    medians = [d.overlap_median for d in diffs]
    assert all(earlier >= later for earlier, later in pairwise(medians)), medians


def test_distance_left_after_alignment_grows_with_the_gap(along_the_run):
    _, diffs = along_the_run
    residuals = [d.residual_mean for d in diffs]
    assert diffs[0].residual.max() <= 4 * diffs[0].width_a * EPS32  # 1 - cos of a row with itself
    assert all(earlier < later for earlier, later in pairwise(residuals)), residuals
