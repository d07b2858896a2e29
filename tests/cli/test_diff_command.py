"""`bertlens diff A B`: its --json is the library's `diff(...).to_dict()` (and `.token(...)`'s with --token), its
table is `str()` of the result, and every misuse is a refusal with a hint, before any slow work where it can be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tiny import make_tiny

from bertlens import load_model
from bertlens.cli import main
from bertlens.spaces import diff


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """Two tiny BERTs of one vocabulary: one 32 wide, one 24 wide (its rows are padded to compare them)."""
    root = tmp_path_factory.mktemp("two-models")
    a = make_tiny("bert", root / "a", seed=0)
    b = make_tiny("bert", root / "b", seed=1, hidden_size=24, intermediate_size=29)
    return str(a), str(b)


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The error of a refused command line (exit 2, a message and a hint, no traceback)."""
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "\n  hint: " in err, err
    return err


def test_json_is_the_library_result(capsys, pair):
    a, b = pair
    data = run_json(capsys, "diff", a, b, "-k", "5", "--top", "4")
    expected = diff(load_model(a), load_model(b), k=5, top=4)
    assert data == json.loads(json.dumps(expected.to_dict()))
    assert data["width_a"] == 32 and data["width_b"] == 24 and data["padded"] == "B" and len(data["moved"]) == 4


def test_token_prints_its_two_neighbourhoods(capsys, pair):
    a, b = pair
    token = diff(load_model(a), load_model(b), top=1).moved[0].token
    data = run_json(capsys, "diff", a, b, "--token", token)
    assert data == json.loads(json.dumps(diff(load_model(a), load_model(b)).token(token).to_dict()))
    assert len(data["neighbours_a"]) == len(data["neighbours_b"]) == 10
    assert main(["diff", a, b, "--token", token, "-k", "3"]) == 0
    table = capsys.readouterr().out
    assert table.startswith(f"{token!r} (") and "nearest in A" in table and "nearest in B" in table


def test_table_and_corpus_and_contextual(capsys, pair, generated_corpus):
    a, b = pair
    argv = ["diff", a, b, "--top", "3", "--corpus", str(generated_corpus), "--contextual", "--occurrences", "100"]
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert table.startswith(f"A: {load_model(a).source.description}\nB: ")
    assert "By the token's count in" in table and "Linear CKA of every layer pair" in table
    data = run_json(capsys, *argv, "--layer", "1", "--layer-b", "0")
    context = data["contextual"]
    assert (context["layer_a"], context["layer_b"]) == (1, 0) and context["occurrences"] == 100
    assert [len(row) for row in context["cka"]] == [3, 3, 3] and data["by_frequency"]


def test_one_model_named_twice_is_itself(capsys, pair):
    data = run_json(capsys, "diff", pair[0], pair[0], "--top", "2")
    assert data["overlap_mean"] == 1.0 and data["histogram"][-1] == data["tokens"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--layer", "1"], "--layer applies only with --contextual"),
        (["--layer-b", "0"], "--layer-b applies only with --contextual"),
        (["--occurrences", "10000"], "--occurrences applies only with --contextual"),  # its default, typed: refused too
        (["--token", "cat", "--top", "3"], "--top applies only to the whole comparison"),
        (["--token", "cat", "--contextual"], "--contextual applies only to the whole comparison"),
        (["--token", "cat", "--plot", "x.png"], "--plot applies only to the whole comparison"),
        (["--overwrite"], "--overwrite applies only with --plot"),
        (["--plot", "png"], "no suffix is not a picture format"),
        (["--plot", "x.pdf"], "not a picture format"),
        (["--model", "default"], "--model (default) would be ignored"),
        (["-k", "0"], "-k"),
        (["--top", "0"], "--top"),
        (["--token", "zzyzx-not-a-token"], "is not a token both vocabularies hold"),
        (["--contextual", "--layer", "7"], "does not exist in model A"),
        (["--contextual", "--layer-b", "-9"], "--layer-b"),
        (["--contextual", "--occurrences", "3"], "--occurrences"),
        (["--corpus", "no-such-corpus"], "no-such-corpus"),
    ],
)
def test_misuse_is_refused_with_a_hint(capsys, pair, tmp_path, monkeypatch, extra, message):
    monkeypatch.chdir(tmp_path)
    err = refused(capsys, "diff", *pair, *extra)
    assert message in err, err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_model_that_cannot_be_loaded_is_refused(capsys, pair, tmp_path):
    assert "No such directory" in refused(capsys, "diff", pair[0], str(tmp_path / "missing"))
    assert "empty" in refused(capsys, "diff", "", pair[1])


def test_the_picture_is_checked_before_the_models_are_read(capsys, tmp_path):
    (tmp_path / "taken.png").write_bytes(b"kept")
    err = refused(capsys, "diff", str(tmp_path / "missing-a"), "missing-b", "--plot", str(tmp_path / "taken.png"))
    assert "exists" in err and (tmp_path / "taken.png").read_bytes() == b"kept"


def test_usage_names_both_models(capsys):
    assert main(["diff", "default"]) == 2
    assert "Missing argument 'B'" in capsys.readouterr().err


def test_each_model_loads_as_every_command_loads_one(capsys, pair, tmp_path):
    """A run's checkpoint folder is a model folder: `diff` reads what `load_model` reads."""
    checkpoint = Path(tmp_path / "run" / "checkpoints" / "step-00000010")
    make_tiny("bert", checkpoint, mlm=True, seed=0)
    data = run_json(capsys, "diff", pair[0], str(checkpoint), "--top", "1")
    assert data["model_b"] == load_model(str(checkpoint)).source.description and data["same_vocabulary"]
