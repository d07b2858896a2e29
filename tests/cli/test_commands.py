"""The command line: each command is invoked, its --json parsed and compared with the library's to_dict()."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from bertlens import explain, info, token_vector, tokenize, word_vector
from bertlens.cli import main

BERTLENS = [sys.executable, "-m", "bertlens"]


def run_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_tokens_json_is_the_library_result(capsys, default_model):
    assert run_json(capsys, "tokens", "hello, world!") == tokenize(default_model, "hello, world!").to_dict()


def test_tokens_pair_and_no_special(capsys, default_model):
    data = run_json(capsys, "tokens", "I like bread", "--pair", "Banana bread")
    assert data == tokenize(default_model, "I like bread", "Banana bread").to_dict()
    data = run_json(capsys, "tokens", "hello, world!", "--no-special")
    assert [t["id"] for t in data["tokens"]] == [7592, 1010, 2088, 999]


def test_tokens_reads_standard_input(capsys, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"dog")))
    assert [t["id"] for t in run_json(capsys, "tokens", "-")["tokens"]] == [101, 3899, 102]


def test_vector_forms(capsys, default_model):
    assert run_json(capsys, "vector", "dog") == token_vector(default_model, "dog").to_dict()
    assert run_json(capsys, "vector", "--id", "3899")["pieces"] == ["dog"]
    last = word_vector(default_model, "Sinan", "last").to_dict()
    assert run_json(capsys, "vector", "Sinan", "--pool", "last") == last
    assert run_json(capsys, "vector", "dog", "--word")["kind"] == "word"


def test_vector_shows_its_first_numbers_and_all_with_all(capsys, default_model):
    row = token_vector(default_model, "dog")
    assert main(["vector", "dog"]) == 0
    assert capsys.readouterr().out.strip() == row.to_table()  # the first 8 numbers, "… (384)"
    assert main(["vector", "dog", "cat", "--all"]) == 0
    shown = capsys.readouterr().out
    assert shown.count("(384)") == 0 and len(shown.split()) > 2 * 384  # every number of both
    assert run_json(capsys, "vector", "dog", "--all") == run_json(capsys, "vector", "dog") == row.to_dict()


def test_info(capsys, default_model):
    data = run_json(capsys, "info")
    assert data == info(default_model).to_dict()
    assert data["family"] == "BERT" and data["vocab_size"] == 30522 and data["layers"] == 6
    assert data["parameters"] == 22_713_216


def test_info_of_every_family_through_model_option(capsys, tiny_dirs):
    for family, path in tiny_dirs.items():
        data = run_json(capsys, "info", "--model", str(path))
        assert data["model_type"] == family
        assert data["matrix_rows"] == 80


def test_explain_json(capsys, tiny_dirs, tiny_models):
    data = run_json(capsys, "explain", "the cat sat", "--model", str(tiny_dirs["albert"]))
    assert data["max_abs_diff"] == 0.0 and data["checked_against"].endswith("AlbertModel (hidden_states[0])")
    assert data == explain(tiny_models["albert"], "the cat sat").to_dict()


def test_explain_compare_table(capsys):
    assert main(["explain", "I like eating bread", "--compare", "The banana bread was horrible"]) == 0
    out = capsys.readouterr().out
    assert "identical" in out and "position" in out and "max |output a - output b|" in out


def test_export(capsys, tmp_path):
    data = run_json(capsys, "export", "--format", "npy", "--out", str(tmp_path / "e"))
    assert data["rows"] == 30522 and (tmp_path / "e" / "word_embeddings.npy").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["tokens", "x", "--model", "/no/such/model"], "No such directory"),
        (["vector", "sinan", "--token"], "not a token"),
        (["vector", "abc", "--id"], "expects an integer"),
        (["vector", "99999", "--id"], "out of range"),
        (["explain", "a", "--pair", "b", "--compare", "c"], "cannot be used together"),
        (["explain", "word " * 600], "only 512 positions"),
    ],
)
def test_errors_are_messages_not_tracebacks(capsys, argv, message):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert message in captured.err and "Traceback" not in captured.err
    assert captured.err.startswith("bertlens: error:")


def test_options_before_the_command(capsys, tiny_dirs):
    assert main(["--model", str(tiny_dirs["bert"]), "--json", "tokens", "the cat"]) == 0
    assert [t["piece"] for t in json.loads(capsys.readouterr().out)["tokens"]] == ["[CLS]", "the", "cat", "[SEP]"]


def test_error_as_json(capsys):
    assert main(["tokens", "x", "--model", "/no/such/model", "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    assert data["error"] == "ModelNotFoundError" and "No such directory" in data["message"]


def test_environment_variable_chooses_the_model(tiny_dirs):
    import os

    env = {**os.environ, "BERTLENS_MODEL": str(tiny_dirs["distilbert"])}
    done = subprocess.run([*BERTLENS, "info", "--json"], env=env, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout)["model_type"] == "distilbert"


def test_console_script_and_module_entry_point_in_a_subprocess():
    script = Path(sys.executable).with_name("bertlens")
    for command in ([str(script)], BERTLENS):
        done = subprocess.run([*command, "tokens", "dog", "--json"], capture_output=True, text=True, check=True)
        assert [t["id"] for t in json.loads(done.stdout)["tokens"]] == [101, 3899, 102]


def test_tokens_and_vector_do_not_import_torch_or_transformers():
    code = (
        "import sys; from bertlens.cli import main; main(['tokens', 'hello, world!']); main(['vector', 'dog']);"
        "main(['info']); bad = [m for m in ('torch', 'transformers') if m in sys.modules]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_usage_errors_exit_2_with_the_usage_and_what_is_missing():
    done = subprocess.run([*BERTLENS, "vector"], capture_output=True, text=True)
    assert done.returncode == 2 and "Missing argument 'QUERY...'" in done.stderr and "Traceback" not in done.stderr
    assert "Usage: bertlens vector" in done.stderr


def test_every_command_has_help():
    from bertlens.cli import program
    from bertlens.cli.reference import commands

    found = dict(commands(program))
    assert {"info", "tokens", "explain", "vector", "export", "neighbors", "similarity", "plot tokens"} <= set(found)
    for command in found.values():
        assert command.short_help and command.help


def test_neighbors_json_is_the_library_result(capsys, default_model, tmp_path):
    from bertlens.similarity.nearest import neighbors_many

    data = run_json(capsys, "neighbors", "dog", "Sinan", "-k", "5", "--cache-dir", str(tmp_path))
    assert data == neighbors_many(default_model, ["dog", "Sinan"], 5, cache_dir=tmp_path).to_dict()
    assert data["results"][0]["neighbors"][0]["token"] == "dogs"


def test_neighbors_options(capsys, tmp_path):
    cache = ["--cache-dir", str(tmp_path)]
    data = run_json(capsys, "neighbors", "--positive", "king", "woman", "--negative", "man", "-k", "1", *cache)
    assert data["results"][0]["neighbors"][0]["token"] == "queen"
    data = run_json(capsys, "neighbors", "bread", "--words-only", "-k", "30", *cache)
    assert not any(n["token"].startswith("##") for n in data["results"][0]["neighbors"])
    data = run_json(capsys, "neighbors", "--id", "3899", "--center", "--remove-top", "2", "-k", "3", *cache)
    assert data["results"][0]["adjustment"] == "centred, top 2 principal directions removed"
    data = run_json(capsys, "neighbors", "dog", "--metric", "euclidean", "-k", "2", *cache)
    assert data["results"][0]["metric"] == "euclidean"


def test_similarity_command(capsys, tmp_path):
    data = run_json(capsys, "similarity", "dog", "Sinan", "--cache-dir", str(tmp_path))
    assert data["pieces_b"] == ["sin", "##an"] and -1 <= data["score"] <= 1
    assert main(["similarity", "bread", "loaf", "--center", "--cache-dir", str(tmp_path)]) == 0
    assert "raw:" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["neighbors"], "No query given"),
        (["neighbors", "dog", "-k", "0"], "k must be a positive"),
        (["neighbors", "dog", "--positive", "king"], "not both"),
        (["neighbors", "--id", "dog"], "expects integers"),
        (["neighbors", "dog", "--remove-top", "-1"], "--remove-top must be 0 or more"),
        (["similarity", "dog", ""], "no pieces"),
    ],
)
def test_similarity_errors(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_neighbors_needs_neither_torch_nor_transformers(tmp_path):
    code = (
        f"import sys; from bertlens.cli import main; main(['neighbors', 'dog', '--cache-dir', {str(tmp_path)!r}]);"
        "bad = [m for m in ('torch', 'transformers') if m in sys.modules]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_analogy_command(capsys, default_model):
    from bertlens.similarity.analogy import analogy

    data = run_json(capsys, "analogy", "man", "king", "woman", "-k", "3")
    assert data == analogy(default_model, "man", "king", "woman", k=3).to_dict()
    assert data["answers"][0]["token"] == "queen"
    assert run_json(capsys, "analogy", "man", "king", "woman", "--method", "3cosmul")["method"] == "3cosmul"


def test_evaluate_command(capsys, default_model, tmp_path):
    from bertlens.similarity.evaluate import evaluate_pairs

    data = run_json(capsys, "evaluate", "rg65", "mc30")
    assert data["results"][0] == evaluate_pairs(default_model, "rg65").to_dict()
    assert len(data["results"]) == 2
    csv = tmp_path / "mine.csv"
    csv.write_text("word1,word2,score\ndog,cat,7\ncar,automobile,9\nbread,idea,1\n")
    assert len(run_json(capsys, "evaluate", str(csv))["results"][0]["pairs"]) == 3
    listed = run_json(capsys, "evaluate", "--list")
    assert {"wordsim353", "men", "google", "bats"} <= {b["name"] for b in listed["benchmarks"]}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["evaluate"], "No benchmark given"),
        (["evaluate", "nope"], "Unknown benchmark"),
        (["analogy", "man", "king", ""], "no pieces"),
        (["analogy", "man", "king", "woman", "-k", "0"], "k must be"),
    ],
)
def test_analogy_and_evaluate_errors(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_neighbors_precompute_writes_the_table(capsys, tiny_dirs, tmp_path):
    argv = ["neighbors", "dog", "-k", "3", "--model", str(tiny_dirs["bert"]), "--cache-dir", str(tmp_path)]
    plain = run_json(capsys, *argv)
    assert run_json(capsys, *argv, "--precompute") == plain
    assert list(tmp_path.glob("*/table.npz"))
    assert run_json(capsys, *argv) == plain  # now answered from the cached table


def test_layers_command(capsys, default_model):
    from bertlens.contextual import hidden_states, word_vectors

    data = run_json(capsys, "layers", "I am Sinan")
    assert data == hidden_states(default_model, "I am Sinan")[0].to_dict()
    assert len(data["states"]) == 7
    words = run_json(capsys, "layers", "I am Sinan", "--words", "--layers", "-1", "-2", "--pool", "first")
    assert words == word_vectors(default_model, "I am Sinan", layers=[-1, -2], pool="first").to_dict()


def test_context_command(capsys):
    data = run_json(capsys, "context", "bread", "I like eating bread", "The banana bread was horrible")
    assert [layer["layer"] for layer in data["layers"]][:2] == ["input matrix", "0"]
    assert main(["context", "bread", "I like bread", "no butter"]) == 2
    assert "does not occur in sentence 1" in capsys.readouterr().err
    assert main(["layers", "dog", "--words", "--layers", "9"]) == 2
    assert "Layer 9 does not exist" in capsys.readouterr().err


def test_invalid_utf8_on_standard_input_is_a_clear_error():
    done = subprocess.run([*BERTLENS, "tokens", "-"], input=b"\xff\xfe bad", capture_output=True)
    assert done.returncode == 2 and b"not valid UTF-8" in done.stderr and b"Traceback" not in done.stderr


def test_export_into_an_unwritable_place_is_a_clear_error(capsys):
    assert main(["export", "--out", "/proc/bertlens-cannot-write-here"]) == 2
    assert "Cannot write the export" in capsys.readouterr().err


def test_context_over_a_corpus(capsys, tiny_dirs, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The cat sat on the mat. A cat ran in the house.\nThe dog sat. The big cat was good.\n")
    data = run_json(capsys, "context", "cat", "--corpus", str(corpus), "--model", str(tiny_dirs["bert"]))
    assert data["words"] == ["cat"] and data["occurrences"] == 3 and data["texts"] == 4
    assert main(["context", "cat", "a cat", "--corpus", str(corpus)]) == 2
    assert "not both" in capsys.readouterr().err


def test_distill_command(capsys, tiny_dirs, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The cat sat on the mat. A dog ran.\nThe big cat ran.\n")
    out = tmp_path / "v.txt"
    argv = ["distill", str(corpus), "--words", "cat", "dog", "--out", str(out), "--model", str(tiny_dirs["bert"])]
    data = run_json(capsys, *argv)
    assert data["contexts"] == [2, 1] and out.exists()
    assert main(argv) == 2 and "exists" in capsys.readouterr().err
    assert main(["distill", str(corpus)]) == 2 and "No words" in capsys.readouterr().err


def test_extract_command(capsys, tiny_dirs, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat\na dog ran\n")
    argv = ["extract", str(corpus), "--out", str(tmp_path / "x"), "--model", str(tiny_dirs["bert"])]
    data = run_json(capsys, *argv)
    assert data["texts"] == 2 and data["rows"] == 6 and data["shards"] == 1
    assert main(argv) == 2 and "exists" in capsys.readouterr().err
    assert run_json(capsys, *argv, "--resume")["resumed_after"] == 2


def test_layers_sentence_vector(capsys, default_model):
    from bertlens.contextual.vectors import sentence_vectors

    data = run_json(capsys, "layers", "I like bread", "--sentence", "max", "--layers", "0", "-1")
    assert data == sentence_vectors(default_model, "I like bread", method="max", layers=[0, -1]).to_dict()


def _typed_value(param: click.Option) -> list[str]:
    """A value click takes for `param`, its default where it has one (the value a silent default would have)."""
    if param.is_flag:
        return []
    default = param.default
    if isinstance(default, (list, tuple)):
        default = default[0] if default else None
    if isinstance(default, (str, int, float)) and not isinstance(default, bool):  # not click's "unset"
        return [str(default)]
    if isinstance(param.type, click.Choice):
        return [str(param.type.choices[0])]
    return ["1" if isinstance(param.type, (click.types.IntParamType, click.types.FloatParamType)) else "x"]


@pytest.mark.parametrize(("command", "needs"), [("index", "building an index"), ("extract", "writing an extract")])
def test_verify_refuses_every_option_it_would_ignore_even_at_its_default(capsys, tmp_path, command, needs):
    from bertlens.cli import program

    chosen = program.get_command(click.Context(program), command)
    assert chosen is not None
    takes = {"--verify", "--json", "--offline"}  # --verify reads the folder; the rest apply everywhere
    options = [p for p in chosen.params if isinstance(p, click.Option) and not takes & set(p.opts)]
    assert {"--engine", "--device", "--level", "--batch-tokens", "--no-progress", "--model"} <= {
        s for p in options for s in p.opts
    }
    for param in options:
        flag, value = param.opts[0], _typed_value(param)
        spellings = [[flag, *value], [f"{flag}={value[0]}"]] if value else [[flag]]
        for spelling in spellings:
            assert main([command, str(tmp_path), "--verify", *spelling]) == 2, spelling
            err = capsys.readouterr().err
            assert f"{flag} applies only to {needs}, not with --verify" in err and f"Leave out {flag}." in err, err


def test_verify_refuses_what_was_typed_in_every_spelling(capsys, tmp_path):
    for typed in (["--engine", "local"], ["--engine=local"], ["--device", "cpu"], ["-o", "out"], ["-m", "default"]):
        assert main(["index", str(tmp_path), "--verify", *typed]) == 2
        flag = {"-o": "--out", "-m": "--model"}.get(typed[0].split("=")[0], typed[0].split("=")[0])
        assert f"{flag} applies only to building an index" in capsys.readouterr().err
    assert main(["--model", "default", "index", str(tmp_path), "--verify"]) == 2  # a shared flag before the command
    assert "--model applies only to building an index" in capsys.readouterr().err
    assert main(["index", str(tmp_path), "--verify"]) == 2  # nothing typed beside it: the folder is checked
    assert "applies only" not in capsys.readouterr().err


def test_options_typed_at_their_default_where_they_apply_are_taken(capsys, tmp_path):
    missing = str(tmp_path / "missing")
    argv = ["index", missing, "--out", str(tmp_path / "i"), "--engine", "local", "--level=word", "--device", "cpu"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "applies only" not in err and "missing" in err  # past the option checks, to the corpus
    assert main(["index", missing, "--verify", "--json", "--offline"]) == 2  # the index is checked, nothing refused
    assert "applies only" not in capsys.readouterr().out


def test_every_option_lists_its_choices_and_default_in_help():
    """--help names every choice of every option with a fixed set, and the default of every option that has one."""
    from bertlens.cli import program
    from bertlens.cli.reference import commands

    for name, command in commands(program):
        ctx = click.Context(command, info_name=name)
        for param in command.params:
            if not isinstance(param, click.Option) or param.hidden or param.is_flag:
                continue
            record = param.get_help_record(ctx)
            assert record is not None, (name, param.name)
            if isinstance(param.type, click.Choice):
                assert all(str(choice) in " ".join(record) for choice in param.type.choices), (name, param.name)
            default = param.to_info_dict()["default"]
            if default not in (None, ()) and param.show_default is not False:
                assert "[default: " in record[1], (name, param.name)


@pytest.mark.parametrize(
    ("words", "expected"),
    [("bertlens ne", {"neighbors"}), ("bertlens neighbors --metric ", {"cosine", "dot", "euclidean"})],
)
def test_shell_completion_names_commands_and_choices(words, expected):
    """click's completion (docs/commands.md, "Shell completion"): the commands, and each option's choices."""
    env = {**os.environ, "_BERTLENS_COMPLETE": "bash_complete", "COMP_WORDS": words}
    env["COMP_CWORD"] = str(len(words.split()) - (0 if words.endswith(" ") else 1))
    done = subprocess.run(BERTLENS, capture_output=True, text=True, env=env, check=True)
    assert {line.split(",", 1)[1] for line in done.stdout.splitlines()} == expected
