import json

import pytest

from albert_tf.config import AlbertConfig, ConfigError, PUBLISHED_MODELS


def test_defaults_are_the_originals():
    config = AlbertConfig(vocab_size=30000)
    assert (config.embedding_size, config.hidden_size, config.num_hidden_layers) == (128, 4096, 12)
    assert (config.num_attention_heads, config.intermediate_size) == (64, 16384)
    assert (config.num_hidden_groups, config.inner_group_num, config.down_scale_factor) == (1, 1, 1)
    assert config.hidden_act == "gelu"
    assert config.hidden_dropout_prob == 0 and config.attention_probs_dropout_prob == 0
    assert (config.max_position_embeddings, config.type_vocab_size, config.initializer_range) == (512, 2, 0.02)


def test_round_trip_keeps_unknown_keys(tmp_path):
    source = {"vocab_size": 30000, "hidden_size": 768, "num_attention_heads": 12,
              "net_structure_type": 0, "gap_size": 0, "layers_to_keep": [], "num_memory_blocks": 0}
    path = tmp_path / "albert_config.json"
    path.write_text(json.dumps(source))
    config = AlbertConfig.from_json_file(str(path))
    assert config.layers_to_keep == [] and config.net_structure_type == 0
    text = config.to_json_string()
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"
    out = tmp_path / "out.json"
    config.to_json_file(str(out))
    assert AlbertConfig.from_json_file(str(out)) == config


@pytest.mark.parametrize("name", PUBLISHED_MODELS)
def test_published_configs(name):
    config = AlbertConfig.published(name)
    size, version = name.split("_")
    expected = {"base": (768, 12, 12, 3072), "large": (1024, 24, 16, 4096),
                "xlarge": (2048, 24, 16, 8192), "xxlarge": (4096, 12, 64, 16384)}[size]
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads,
            config.intermediate_size) == expected
    assert (config.vocab_size, config.embedding_size) == (30000, 128)
    dropout = 0.1 if version == "v1" and size != "xxlarge" else 0.0
    assert config.hidden_dropout_prob == dropout == config.attention_probs_dropout_prob


def test_group_index_matches_original_formula():
    config = AlbertConfig(vocab_size=10, num_hidden_layers=12, num_hidden_groups=3, num_attention_heads=4, hidden_size=8)
    assert [config.group_index(i) for i in range(12)] == [0] * 4 + [1] * 4 + [2] * 4


@pytest.mark.parametrize("text, message", [
    ('{"vocab_size": 10, "hidden_size": 30, "num_attention_heads": 4', "malformed JSON at line 1"),
    ('{"hidden_size": 32}', "'vocab_size' is missing"),
    ('{"vocab_size": 10, "hidden_size": 30, "num_attention_heads": 4}', "not a multiple of 'num_attention_heads'"),
    ('{"vocab_size": 10, "hidden_size": 32, "num_attention_heads": 4, "hidden_act": "swish"}', "'hidden_act'"),
    ('{"vocab_size": "ten"}', "'vocab_size' must be a positive integer"),
])
def test_bad_config_names_file_and_field(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        AlbertConfig.from_json_file(str(path))
    assert str(path) in str(error.value) and message in str(error.value)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        AlbertConfig.from_json_file(str(tmp_path / "nope.json"))
