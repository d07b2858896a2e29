"""Model sources: the default, directories, the local Hugging Face cache, loaded objects; and every load error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from oracle import assert_agrees_with_transformers, transformers_model
from tiny import FAMILIES as TINY_FAMILIES
from tiny import make_tiny

from bertlens import (
    CorruptModelError,
    InputError,
    MissingTokenizerError,
    MissingWeightsError,
    ModelNotFoundError,
    UnsupportedArchitectureError,
    VocabularyMismatchError,
    explain,
    load_model,
    tokenize,
)
from bertlens.core.families import FAMILIES
from bertlens.core.sources import default_model_dir, resolve


def test_default_model_is_found_inside_the_installed_package(default_model):
    assert default_model.source.kind == "default"
    assert default_model.source.path == default_model_dir().resolve()
    assert default_model.family.model_type == "bert"
    assert default_model.vocabulary.size == 30522
    assert default_model.config.hidden_size == 384


def test_env_variable_chooses_the_model_and_argument_wins(tiny_dirs):
    env = {"BERTLENS_MODEL": str(tiny_dirs["roberta"])}
    assert resolve(None, env).path == tiny_dirs["roberta"].resolve()
    assert resolve(str(tiny_dirs["bert"]), env).path == tiny_dirs["bert"].resolve()
    assert resolve("default", env).kind == "default"
    assert resolve(None, {}).kind == "default"


def test_model_id_from_local_hf_cache(tiny_dirs, tmp_path):
    repo = tmp_path / "hub" / "models--someone--tiny-bert"
    snapshot = repo / "snapshots" / "0123abcd"
    shutil.copytree(tiny_dirs["bert"], snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    model = load_model("someone/tiny-bert", env={"HF_HUB_CACHE": str(tmp_path / "hub")})
    assert model.source.kind == "hf-cache"
    assert model.source.path == snapshot.resolve()
    assert tokenize(model, "the cat").pieces == ["[CLS]", "the", "cat", "[SEP]"]


def test_an_uncached_model_id_offline_names_the_model_the_cache_and_the_switch(tmp_path):
    with pytest.raises(ModelNotFoundError) as err:
        load_model("someone/not-here", env={"HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    assert "someone/not-here" in err.value.message and str(tmp_path) in err.value.message
    assert "HF_HUB_OFFLINE=1" in err.value.message and "hf download someone/not-here" in err.value.hint


def test_missing_path(tmp_path):
    with pytest.raises(ModelNotFoundError, match="No such directory"):
        load_model(str(tmp_path / "nope" / "model"))


def test_a_file_is_not_a_model(tmp_path):
    file = tmp_path / "model.txt"
    file.write_text("x")
    with pytest.raises(ModelNotFoundError, match="is a file"):
        load_model(str(file))


def test_directory_without_config(tmp_path):
    with pytest.raises(ModelNotFoundError, match="no config.json"):
        load_model(str(tmp_path))


def test_no_weights(tiny_copy):
    path = tiny_copy("bert")
    (path / "model.safetensors").unlink()
    with pytest.raises(MissingWeightsError, match="no weights"):
        load_model(str(path))


def test_no_tokenizer(tiny_copy):
    path = tiny_copy("bert")
    (path / "tokenizer.json").unlink()
    with pytest.raises(MissingTokenizerError, match="no tokenizer"):
        load_model(str(path))


def test_sentencepiece_only_tokenizer_gets_a_conversion_hint(tiny_copy):
    path = tiny_copy("bert")
    (path / "tokenizer.json").unlink()
    (path / "sentencepiece.bpe.model").write_bytes(b"\0")
    with pytest.raises(MissingTokenizerError) as err:
        load_model(str(path))
    assert "save_pretrained" in err.value.hint


def test_tokenizer_larger_than_matrix(tiny_copy):
    from tiny import BERT_SPECIALS, VOCAB, build_tokenizer

    path = tiny_copy("bert")
    tokenizer, _ = build_tokenizer(BERT_SPECIALS)
    tokenizer.add_tokens([f"extra{i}" for i in range(5)])
    tokenizer.save(str(path / "tokenizer.json"))
    with pytest.raises(VocabularyMismatchError, match=f"only {VOCAB} rows"):
        load_model(str(path))


def test_config_vocab_size_disagrees_with_matrix(tiny_copy):
    path = tiny_copy("bert")
    config = json.loads((path / "config.json").read_text())
    config["vocab_size"] = 999
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(VocabularyMismatchError, match="vocab_size=999"):
        load_model(str(path))


def test_unsupported_architecture_names_the_supported_ones(tiny_copy):
    path = tiny_copy("bert")
    config = json.loads((path / "config.json").read_text())
    config["model_type"] = "gpt2"
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(UnsupportedArchitectureError) as err:
        load_model(str(path))
    assert "gpt2" in err.value.message
    for family in FAMILIES:
        assert family in err.value.hint


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b"this is not a safetensors file",
        lambda b: b[: len(b) // 2],  # truncated
        lambda b: b"",
    ],
    ids=["garbage", "truncated", "empty"],
)
def test_corrupt_weights(tiny_copy, damage):
    path = tiny_copy("bert")
    weights = path / "model.safetensors"
    weights.write_bytes(damage(weights.read_bytes()))
    with pytest.raises(CorruptModelError, match="Cannot read"):
        load_model(str(path))


def test_corrupt_config_json(tiny_copy):
    path = tiny_copy("bert")
    (path / "config.json").write_text("{not json")
    with pytest.raises(CorruptModelError, match="not valid JSON"):
        load_model(str(path))


def test_corrupt_tokenizer_json(tiny_copy):
    path = tiny_copy("bert")
    (path / "tokenizer.json").write_text('{"version": "1.0", "model": 3}')
    with pytest.raises(CorruptModelError, match="tokenizer"):
        load_model(str(path))


def test_pytorch_bin_weights_load_and_match(tmp_path):
    path = make_tiny("bert", tmp_path / "bin", safetensors=False)
    assert (path / "pytorch_model.bin").exists()
    model = load_model(str(path))
    assert model.source.weights_format == "pytorch"
    result = explain(model, "the cat sat")
    assert result.matches
    assert_agrees_with_transformers(result, transformers_model(path))


def test_masked_lm_checkpoint_with_prefixed_names(tmp_path):
    path = make_tiny("bert", tmp_path / "mlm", mlm=True)
    model = load_model(str(path))
    result = explain(model, "the dog ran")
    assert result.matches
    assert_agrees_with_transformers(result, transformers_model(path))  # the prefix dropped


def test_vocab_txt_only_gives_the_same_ids_as_tokenizer_json(default_model, tmp_path):
    src = default_model.source.path
    target = tmp_path / "no-tokenizer-json"
    target.mkdir()
    for name in ("config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json"):
        (target / name).symlink_to(src / name)
    model = load_model(str(target))
    for text in ("hello, world!", "I am Sinan", "The banana bread was horrible"):
        assert tokenize(model, text).ids == tokenize(default_model, text).ids


def test_sentence_transformers_layout_finds_the_transformer_folder(tiny_dirs, tmp_path):
    shutil.copytree(tiny_dirs["bert"], tmp_path / "0_Transformer")
    (tmp_path / "modules.json").write_text(
        json.dumps(
            [{"idx": 0, "name": "0", "path": "0_Transformer", "type": "sentence_transformers.models.Transformer"}]
        )
    )
    assert load_model(str(tmp_path)).source.path == (tmp_path / "0_Transformer").resolve()


def test_already_loaded_transformers_model_and_tokenizer(tiny_dirs):
    from transformers import AutoModel, PreTrainedTokenizerFast

    net = AutoModel.from_pretrained(str(tiny_dirs["electra"]))
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(tiny_dirs["electra"] / "tokenizer.json"))
    tokenizer.enable_padding = None  # the caller's tokenizer object is left as it is
    model = load_model(net, tokenizer=tokenizer)
    assert model.source.kind == "object"
    result = explain(model, "a big red car")
    assert result.matches
    assert_agrees_with_transformers(result, net)
    np.testing.assert_array_equal(
        result.tokens[1].word_row, net.get_input_embeddings().weight[result.tokens[1].id].detach().numpy()
    )


def test_loaded_model_without_tokenizer_is_an_input_error(tiny_dirs):
    from transformers import AutoModel

    with pytest.raises(InputError, match="without its tokenizer"):
        load_model(AutoModel.from_pretrained(str(tiny_dirs["bert"])))


def test_an_unrelated_object_is_an_input_error():
    with pytest.raises(InputError, match="Expected a path"):
        load_model(42)


def test_missing_shard_named_by_index(tiny_copy):
    path = tiny_copy("bert")
    index = {"metadata": {}, "weight_map": {"embeddings.word_embeddings.weight": "model-00001-of-00002.safetensors"}}
    (path / "model.safetensors").unlink()
    (path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(MissingWeightsError, match="missing"):
        load_model(str(path))


def test_source_description_mentions_where(tiny_dirs):
    model = load_model(Path(tiny_dirs["bert"]))
    assert str(tiny_dirs["bert"].resolve()) in model.source.description


def test_byte_level_bpe_from_vocab_json_and_merges(tmp_path):
    from tokenizers import ByteLevelBPETokenizer

    path = make_tiny("roberta", tmp_path / "bpe", vocab_size=300)
    (path / "tokenizer.json").unlink()
    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(
        ["the cat sat on the mat", "a dog ran in the house"] * 20,
        vocab_size=300,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        show_progress=False,
    )
    trainer.save_model(str(path))
    model = load_model(str(path))
    assert model.source.tokenizer_files[0].name == "vocab.json"
    result = tokenize(model, "the cat")
    assert result.pieces[0] == "<s>" and result.pieces[-1] == "</s>" and result.tokens[0].special
    result = explain(model, "the cat sat")
    assert result.matches
    assert_agrees_with_transformers(result, transformers_model(path))


def test_bfloat16_weights_are_read_without_loss(tiny_copy):
    import torch
    from safetensors.torch import load_file, save_file

    path = tiny_copy("bert")
    state = {
        k: (v.to(torch.bfloat16) if v.is_floating_point() else v)
        for k, v in load_file(str(path / "model.safetensors")).items()
    }
    save_file(state, str(path / "model.safetensors"), metadata={"format": "pt"})
    model = load_model(str(path))
    expected = state["embeddings.word_embeddings.weight"].float().numpy()
    np.testing.assert_array_equal(model.embedding_weights.word_embeddings, expected)
    result = explain(model, "the cat sat")
    assert result.matches
    assert_agrees_with_transformers(result, transformers_model(path))


@pytest.mark.parametrize("family", TINY_FAMILIES)
def test_the_base_class_loaded_by_name_is_the_one_automodel_builds(tiny_dirs, tiny_models, family):
    from transformers import AutoConfig, AutoModel

    model = tiny_models[family]
    built = AutoModel.from_config(AutoConfig.from_pretrained(str(tiny_dirs[family])))
    assert type(model.torch_model()).__name__ == FAMILIES[family].base_class == type(built).__name__
