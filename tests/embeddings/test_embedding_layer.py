"""The embedding layer laid bare, checked against transformers' hidden_states[0] on every family.

No tolerance: the check is equality. The sum shown goes through the model's own LayerNorm (and projection) module, and
must equal, bit for bit, what transformers computes from the ids (tests/core/test_cpu_paths.py runs this under every
x86 kernel PyTorch can be forced to).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from nasty import NASTY
from oracle import assert_agrees_with_transformers, transformers_model
from tiny import FAMILIES

from bertlens import InputTooLongError, explain
from bertlens.embeddings import compare_inputs

pytestmark = pytest.mark.parity  # held to transformers and tokenizers: run on each version pyproject allows

TEXTS = ["hello, world!", "I like eating bread", "The banana bread was horrible", "I am Sinan", ""]


@pytest.mark.parametrize("text", TEXTS)
def test_default_model_fidelity(default_model, text):
    result = explain(default_model, text)
    assert result.checked and result.checked_against.endswith(" BertEmbeddings")
    assert result.matches and result.max_abs_diff == 0.0
    assert_agrees_with_transformers(result, transformers_model(default_model.source.path))


def test_default_model_fidelity_on_a_pair_and_a_long_input(default_model):
    net = transformers_model(default_model.source.path)
    pair = explain(default_model, "I like eating bread", "The banana bread was horrible")
    assert pair.matches
    assert_agrees_with_transformers(pair, net)
    long = explain(default_model, "The quick brown fox jumps over the lazy dog. " * 50)
    assert len(long.tokens) == 502
    assert long.float32_step == 2.0**-21  # the largest |output| (6.3) lies in [4, 8), where float32 steps are 2**-21
    assert long.matches
    assert_agrees_with_transformers(long, net)


def test_default_model_is_reproduced_bit_for_bit(default_model):
    for text in TEXTS[:-1]:
        result = explain(default_model, text, "The banana bread was horrible")
        assert result.max_abs_diff == 0.0
        oracle = assert_agrees_with_transformers(result, transformers_model(default_model.source.path))
        np.testing.assert_array_equal(result.matrix("output"), oracle)  # bit for bit, as transformers computes it


def test_default_model_parts_are_the_models_own_rows(default_model):
    net = default_model.torch_model()
    result = explain(default_model, "bread", "bread")
    emb = net.embeddings
    for token in result.tokens:
        np.testing.assert_array_equal(token.word_row, emb.word_embeddings.weight[token.id].detach().numpy())
        np.testing.assert_array_equal(
            token.position_row, emb.position_embeddings.weight[token.position_id].detach().numpy()
        )
        np.testing.assert_array_equal(
            token.token_type_row, emb.token_type_embeddings.weight[token.token_type_id].detach().numpy()
        )
    assert [t.token_type_id for t in result.tokens] == [0, 0, 0, 1, 1]
    assert [t.position_id for t in result.tokens] == [0, 1, 2, 3, 4]
    first = result.tokens[1]
    np.testing.assert_array_equal(first.sum, (first.word_row + first.token_type_row) + first.position_row)


def test_sum_is_bit_for_bit_layer_norms_input(default_model):
    result = explain(default_model, "The banana bread was horrible", "I like eating bread")
    net = default_model.torch_model()  # transformers' own model, run on the same ids and segments
    seen = []
    hook = net.embeddings.LayerNorm.register_forward_pre_hook(lambda module, args: seen.append(args[0][0].clone()))
    try:
        with torch.inference_mode():
            net(
                input_ids=torch.tensor([[t.id for t in result.tokens]]),
                token_type_ids=torch.tensor([[t.token_type_id for t in result.tokens]]),
            )
    finally:
        hook.remove()
    np.testing.assert_array_equal(result.matrix("sum"), seen[0].numpy())


def test_layer_norm_statistics_are_the_sums_in_float64(default_model):
    result = explain(default_model, "dog")
    for token in result.tokens:
        x = token.sum.astype(np.float64)
        assert token.layer_norm_mean == x.mean()
        assert token.layer_norm_std == np.sqrt(x.var() + 1e-12)
    layer_norm = default_model.torch_model().embeddings.LayerNorm
    with torch.inference_mode():
        theirs = layer_norm(torch.from_numpy(result.matrix("sum"))[None])[0].numpy()  # (tokens, H)
    np.testing.assert_array_equal(result.matrix("layer_norm_output"), theirs)  # the model's own module, bit for bit


def test_without_the_check_the_steps_are_float64_rounded_once(default_model):
    checked, unchecked = explain(default_model, "hello, world!"), explain(default_model, "hello, world!", check=False)
    np.testing.assert_array_equal(checked.matrix("sum"), unchecked.matrix("sum"))
    weights = default_model.embedding_weights
    x = checked.matrix("sum").astype(np.float64)  # (tokens, E)
    exact = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)
    exact = exact * weights.layer_norm_weight + weights.layer_norm_bias
    np.testing.assert_array_equal(unchecked.matrix("output"), exact.astype(np.float32))
    assert unchecked.checked_against is None and unchecked.max_abs_diff is None and not unchecked.matches


def test_dropout_is_named_and_inactive(default_model):
    result = explain(default_model, "dog")
    assert result.dropout == 0.1  # the config's number, as read
    assert result.dropout_active is False
    assert not default_model.torch_model().training
    assert any("dropout (p = 0.1): inactive" in step for step in result.steps)
    again = explain(default_model, "dog")
    np.testing.assert_array_equal(result.matrix("model_output"), again.matrix("model_output"))


def test_cls_is_the_same_vector_in_every_sentence(default_model):
    a = explain(default_model, "I like eating bread")
    b = explain(default_model, "The banana bread was horrible")
    np.testing.assert_array_equal(a.tokens[0].model_output, b.tokens[0].model_output)


def test_same_word_at_other_positions_differs_only_by_position_rows(default_model):
    comparison = compare_inputs(default_model, "I like eating bread", "The banana bread was horrible")
    by_piece = {s.piece: s for s in comparison.shared}
    assert set(by_piece) == {"[CLS]", "bread", "[SEP]"}
    assert by_piece["[CLS]"].same_position_and_segment and by_piece["[CLS]"].output_max_abs_diff == 0.0
    bread = by_piece["bread"]
    assert (bread.position_a, bread.position_b) == (4, 3)
    assert not bread.same_position_and_segment
    assert bread.output_max_abs_diff > 0.01
    assert bread.rows_explain_sum == 0.0
    assert "bread  7852  4/3      0/0      position" in comparison.to_table()


def test_the_same_word_in_two_sentences_also_agrees_with_transformers(default_model):
    net = default_model.torch_model()
    ids = torch.tensor([[101, 1045, 2066, 5983, 7852, 102]])
    with torch.inference_mode():
        direct = net.embeddings(input_ids=ids)[0].numpy()
    ours = explain(default_model, "I like eating bread")
    np.testing.assert_array_equal(ours.matrix("output"), direct)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_matches_hidden_states_0(tiny_models, family):
    model = tiny_models[family]
    for text, pair in [("the cat sat on the mat", None), ("a dog ran", "the bread was bad"), ("", None)]:
        result = explain(model, text, pair)
        assert result.matches and result.max_abs_diff == 0.0, (family, text)
        assert_agrees_with_transformers(result, transformers_model(model.source.path))


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_against_transformers_on_nasty_text(tiny_models, family):
    net = transformers_model(tiny_models[family].source.path)
    for text in NASTY[:-2]:
        result = explain(tiny_models[family], text)
        assert result.matches
        assert_agrees_with_transformers(result, net)


def test_roberta_positions_start_after_the_padding_index(tiny_models):
    for family in ("roberta", "xlm-roberta"):
        result = explain(tiny_models[family], "the cat sat")
        assert [t.position_id for t in result.tokens] == [2, 3, 4, 5, 6]
        assert any("padding_idx + 1 = 2" in step for step in result.steps)


def test_distilbert_has_no_token_types(tiny_models):
    result = explain(tiny_models["distilbert"], "the cat", "a dog")
    assert all(t.token_type_id is None and t.token_type_row is None for t in result.tokens)
    assert any("no token-type" in part and "ignored" in part for part in result.absent_parts)
    assert "token_type" not in result.formula
    assert result.matches
    assert_agrees_with_transformers(result, transformers_model(tiny_models["distilbert"].source.path))


@pytest.mark.parametrize("family", ["albert", "electra"])
def test_factorised_embeddings_are_projected_after_layer_norm(tiny_models, family):
    result = explain(tiny_models[family], "the big house")
    token = result.tokens[1]
    assert token.word_row.shape == (16,)
    assert token.layer_norm_output.shape == (16,)
    assert token.output.shape == (32,)
    assert token.projected is None
    assert result.formula == (
        "output = dropout(projection(LayerNorm(word_embeddings[id] + token_type_embeddings[segment] "
        "+ position_embeddings[position])))"
    )


def test_deberta_without_absolute_positions_says_so(tiny_models):
    result = explain(tiny_models["deberta-v2"], "the cat sat")
    assert all(t.position_id is None and t.position_row is None for t in result.tokens)
    assert any(part.startswith("position_embeddings: no absolute position rows") for part in result.absent_parts)
    token = result.tokens[1]
    assert token.projected.shape == (32,)  # projected before LayerNorm
    assert result.formula == "output = dropout(LayerNorm(projection(word_embeddings[id])) * attention_mask)"


def test_modernbert_has_only_token_rows_and_a_biasless_norm(tiny_models):
    model = tiny_models["modernbert"]
    assert model.embedding_weights.layer_norm_bias is None
    result = explain(model, "the dog")
    assert result.formula == "output = dropout(LayerNorm(word_embeddings[id]))"
    assert len(result.absent_parts) == 2


def test_too_long_for_the_position_table(tiny_models, default_model):
    with pytest.raises(InputTooLongError, match="only 64 positions"):
        explain(tiny_models["bert"], "cat " * 70)
    with pytest.raises(InputTooLongError, match="only 512 positions"):
        explain(default_model, "word " * 600)


def test_segment_beyond_the_token_type_table_is_an_input_error(tiny_dirs):
    from tiny import BERT_SPECIALS, build_tokenizer

    from bertlens import InputError, load_model

    model = load_model(str(tiny_dirs["roberta"]))
    tokenizer, _ = build_tokenizer(BERT_SPECIALS)  # a BERT template gives segment 1 to the pair
    model.vocabulary.tokenizer.post_processor = tokenizer.post_processor
    with pytest.raises(InputError, match="only 1 token-type rows"):
        explain(model, "the cat", "a dog")


def test_without_check_needs_no_model_run(default_model):
    result = explain(default_model, "dog", check=False)
    assert not result.checked and result.max_abs_diff is None
    assert result.tokens[1].model_output is None


def test_table_and_dict(default_model):
    result = explain(default_model, "hello, world!")
    table = result.to_table()
    import transformers

    against = f"transformers {transformers.__version__} BertEmbeddings"
    assert f"is exactly equal to the model's own output, computed from the ids by {against}, for every token" in table
    assert f"theirs = {against} run on the token ids" in result.to_table(verbose=True)
    assert "word_embeddings: row id of a (30522, 384) matrix" in table
    data = result.to_dict()
    assert len(data["tokens"]) == 6
    assert len(data["tokens"][0]["output"]) == 384
    assert data["max_abs_diff"] == result.max_abs_diff == 0.0
    assert data["checked_against"] == against


JARGON = ("ulp", "float32 steps", "float64", "module")


def test_explain_speaks_plainly_and_keeps_the_detail_for_verbose_and_json(default_model, capsys):
    from bertlens.cli import main

    result = explain(default_model, "hello, world!")
    plain, verbose = result.to_table(), result.to_table(verbose=True)
    assert [word for word in JARGON if word in plain] == []
    assert [word for word in JARGON if word not in verbose] == []
    assert "exactly equal to the model's own output" in plain
    data = result.to_dict()
    assert data["check_summary"] in plain and data["check_detail"] in verbose
    assert data["float32_step"] == result.float32_step
    assert main(["explain", "hello, world!", "--no-check"]) == 0
    assert [word for word in JARGON if word in capsys.readouterr().out] == []
    assert main(["explain", "hello, world!", "--verbose"]) == 0
    assert "LayerNorm module" in capsys.readouterr().out
    for argv in (["explain", "bread", "--compare", "a bread"], ["explain", "bread", "--compare", "a bread", "-v"]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert ("max |pos row a - b|" in out) == ("-v" in argv) == ("unexplained sum diff" in out)


@pytest.mark.parametrize("family", ["albert", "electra", "deberta-v2"])
def test_a_projection_is_the_models_own_module_and_the_check_names_what_ran(tiny_models, family):
    import transformers

    model = tiny_models[family]
    result = explain(model, "the cat sat")  # a projection outside the embeddings module runs the whole model
    assert result.max_abs_diff == 0.0
    ran = {"albert": "AlbertModel (hidden_states[0])", "electra": "ElectraModel (hidden_states[0])"}
    expected = ran.get(family, "DebertaV2Embeddings")
    assert result.checked_against == f"transformers {transformers.__version__} {expected}"
    assert expected in result.check_summary()


@pytest.mark.parametrize("verbose", [False, True])
def test_compare_states_each_number_its_table_shows(default_model, verbose):
    comparison = compare_inputs(default_model, "hello, world!", "hello world")
    lines = comparison.to_table(verbose=verbose).splitlines()
    head = lines[2]
    rows = {line.split()[0]: line for line in lines[4 : 4 + len(comparison.shared)]}
    columns = [m.start() for m in re.finditer(r"\S+(?: \S+)*", head)]  # where each column's header starts

    def cell_of(piece: str, header: str) -> str:
        i = head.index(header)
        end = next((c for c in columns if c > i), None)
        return rows[piece][:end].split()[-1]

    sentences = [line for line in lines if re.match(r"^'.+' \(id \d+\):", line)]
    assert len(sentences) == len(comparison.shared)
    for sentence in sentences:
        piece = sentence[1 : sentence.index("' (id")]
        numbers = re.findall(r"at most ([0-9][0-9.e+-]*) \((max \|[^)]*\|)\)", sentence)
        numbers += [(n, h) for h, n in re.findall(r"\((max \|[^)]*\|) = ([0-9][0-9.e+-]*)\)", sentence)]
        assert numbers, sentence
        for number, header in numbers:
            assert number == cell_of(piece, header), (sentence, header)
    world = next(s for s in sentences if s.startswith("'world'"))
    assert ("position rows differ by at most" in world) == verbose
