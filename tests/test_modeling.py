"""The Keras model against the original modeling.py: names and shapes, sharing, numerics, precision, XLA."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.config import AlbertConfig, ConfigError
from albert_tf.modeling import (attention, classifier, embeddings, encoder, layers, multiple_choice,
                                pretraining, squad_heads, token_classifier)
from tests.conftest import copy_weights

# A released (G = K = 1) checkpoint's 32 model tensors, with V, E, H, I, P, T symbolic.
SPEC_NAMES = [
    ("bert/embeddings/word_embeddings", "V,E"),
    ("bert/embeddings/token_type_embeddings", "T,E"),
    ("bert/embeddings/position_embeddings", "P,E"),
    ("bert/embeddings/LayerNorm/beta", "E"),
    ("bert/embeddings/LayerNorm/gamma", "E"),
    ("bert/encoder/embedding_hidden_mapping_in/kernel", "E,H"),
    ("bert/encoder/embedding_hidden_mapping_in/bias", "H"),
] + [
    (f"bert/encoder/transformer/group_0/inner_group_0/{name}", shape) for name, shape in [
        ("attention_1/self/query/kernel", "H,H"), ("attention_1/self/query/bias", "H"),
        ("attention_1/self/key/kernel", "H,H"), ("attention_1/self/key/bias", "H"),
        ("attention_1/self/value/kernel", "H,H"), ("attention_1/self/value/bias", "H"),
        ("attention_1/output/dense/kernel", "H,H"), ("attention_1/output/dense/bias", "H"),
        ("LayerNorm/beta", "H"), ("LayerNorm/gamma", "H"),
        ("ffn_1/intermediate/dense/kernel", "H,I"), ("ffn_1/intermediate/dense/bias", "I"),
        ("ffn_1/intermediate/output/dense/kernel", "I,H"), ("ffn_1/intermediate/output/dense/bias", "H"),
        ("LayerNorm_1/beta", "H"), ("LayerNorm_1/gamma", "H"),
    ]
] + [
    ("bert/pooler/dense/kernel", "H,H"), ("bert/pooler/dense/bias", "H"),
    ("cls/predictions/transform/dense/kernel", "H,E"), ("cls/predictions/transform/dense/bias", "E"),
    ("cls/predictions/transform/LayerNorm/beta", "E"), ("cls/predictions/transform/LayerNorm/gamma", "E"),
    ("cls/predictions/output_bias", "V"),
    ("cls/seq_relationship/output_weights", "2,H"), ("cls/seq_relationship/output_bias", "2"),
]


def small_config(**fields):
    base = dict(vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                num_attention_heads=2, intermediate_size=24, max_position_embeddings=20)
    base.update(fields)
    return AlbertConfig(**base)


def batch(config, batch_size=2, length=6, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, config.vocab_size, size=(batch_size, length)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[-1, length // 2:] = 0
    return {"input_ids": ids, "input_mask": mask,
            "segment_ids": (np.arange(length)[None, :] >= length // 2).astype(np.int32).repeat(batch_size, 0)}


@pytest.fixture
def float32_policy():
    yield
    keras.mixed_precision.set_global_policy("float32")


def test_released_layout_has_the_specs_32_tensors():
    config = small_config(vocab_size=31, embedding_size=6, hidden_size=12, num_attention_heads=3,
                          intermediate_size=20, max_position_embeddings=17, type_vocab_size=3)
    sizes = {"V": 31, "E": 6, "H": 12, "I": 20, "P": 17, "T": 3, "2": 2}
    model = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    actual = [(name, tuple(variable.shape)) for name, variable in model.checkpoint_variables().items()]
    expected = [(name, tuple(sizes[s] for s in shape.split(","))) for name, shape in SPEC_NAMES]
    assert actual == expected and len(actual) == 32
    assert len(model.weights) == 32  # no variable outside the table


def test_embedding_eq_hidden_has_no_projection():
    model = encoder.AlbertEncoder(small_config(embedding_size=16))
    assert not any("embedding_hidden_mapping_in" in name for name in model.checkpoint_variables())
    outputs = model(batch(model.config))
    assert outputs["embedding_output"].shape == (2, 6, 16)


def test_groups_and_inner_groups_names(tiny_config):
    names = list(encoder.AlbertEncoder(tiny_config).checkpoint_variables())
    scopes = sorted({name.split("/")[3] + "/" + name.split("/")[4] for name in names if "/transformer/" in name})
    assert scopes == ["group_0/inner_group_0", "group_0/inner_group_1",
                      "group_1/inner_group_0", "group_1/inner_group_1"]
    assert len(names) == 7 + 4 * 16 + 2


def test_output_shapes_and_layer_count(tiny_config):
    model = encoder.AlbertEncoder(tiny_config)
    outputs = model(batch(tiny_config, length=9))
    assert outputs["sequence_output"].shape == (2, 9, 32)
    assert outputs["pooled_output"].shape == (2, 32)
    assert outputs["embedding_output"].shape == (2, 9, 16)
    assert len(outputs["encoder_outputs"]) == 4 * 2  # one per layer x inner group
    np.testing.assert_array_equal(outputs["encoder_outputs"][-1], outputs["sequence_output"])


def test_layers_use_group_index(tiny_config):
    """Layers 0-1 use group_0 and layers 2-3 group_1: changing group_1 leaves the first half alone."""
    model = encoder.AlbertEncoder(tiny_config)
    inputs = batch(tiny_config)
    before = [output.numpy() for output in model(inputs)["encoder_outputs"]]
    for name, variable in model.checkpoint_variables().items():
        if "/group_1/" in name and name.endswith("query/kernel"):
            variable.assign(variable * 3.0)
    after = [output.numpy() for output in model(inputs)["encoder_outputs"]]
    for index in range(4):  # layers 0 and 1, two inner groups each
        np.testing.assert_array_equal(before[index], after[index])
    assert not np.allclose(before[4], after[4])


def test_one_shared_block_applied_to_every_layer():
    config = small_config(num_hidden_layers=3)
    model = encoder.AlbertEncoder(config)
    inputs = batch(config)
    outputs = model(inputs)["encoder_outputs"]
    block = model.groups[0][0]
    again = block(outputs[0], inputs["input_mask"])
    np.testing.assert_allclose(again, outputs[1], atol=1e-6)


def test_pooler_is_tanh_dense_of_first_position():
    config = small_config()
    model = encoder.AlbertEncoder(config)
    outputs = model(batch(config))
    names = model.checkpoint_variables()
    first = outputs["sequence_output"].numpy()[:, 0]
    expected = np.tanh(first @ names["bert/pooler/dense/kernel"].numpy() + names["bert/pooler/dense/bias"].numpy())
    np.testing.assert_allclose(outputs["pooled_output"], expected, atol=1e-6)


def test_embedding_output_by_hand():
    config = small_config()
    model = encoder.AlbertEncoder(config)
    inputs = batch(config)
    names = {k: v.numpy() for k, v in model.checkpoint_variables().items()}
    summed = (names["bert/embeddings/word_embeddings"][inputs["input_ids"]]
              + names["bert/embeddings/token_type_embeddings"][inputs["segment_ids"]]
              + names["bert/embeddings/position_embeddings"][:6][None])
    mean, var = summed.mean(-1, keepdims=True), summed.var(-1, keepdims=True)
    expected = (summed - mean) / np.sqrt(var + 1e-12)  # gamma 1, beta 0 at initialisation
    np.testing.assert_allclose(model(inputs)["embedding_output"], expected, atol=1e-5)


def test_gelu_is_the_tanh_approximation():
    x = np.linspace(-4, 4, 41).astype(np.float32)
    expected = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(layers.get_activation("gelu")(x), expected, atol=1e-6)


def test_attention_adder_masks_keys_with_minus_10000():
    adder = attention.attention_adder(np.array([[1, 1, 0]], np.int32)).numpy()
    assert adder.shape == (1, 1, 1, 3)
    np.testing.assert_array_equal(adder.reshape(-1), [0.0, 0.0, -10000.0])


def test_padding_content_is_ignored():
    config = small_config()
    model = encoder.AlbertEncoder(config)
    inputs = batch(config)
    changed = dict(inputs, input_ids=inputs["input_ids"].copy())
    changed["input_ids"][-1, 3:] = (changed["input_ids"][-1, 3:] + 7) % config.vocab_size
    a, b = model(inputs)["sequence_output"].numpy(), model(changed)["sequence_output"].numpy()
    np.testing.assert_allclose(a[-1, :3], b[-1, :3], atol=1e-6)
    assert not np.allclose(a[-1, 3:], b[-1, 3:])


def test_initialisers():
    config = small_config(vocab_size=400, initializer_range=0.05)
    names = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config)).checkpoint_variables()
    table = names["bert/embeddings/word_embeddings"].numpy()
    assert np.abs(table).max() <= 2 * 0.05 + 1e-6  # truncated at two standard deviations
    assert 0.03 < table.std() < 0.05  # truncation shrinks the std to ~0.88 sigma
    for name, variable in names.items():
        value = variable.numpy()
        if name.endswith("bias") or name.endswith("beta"):
            assert not value.any(), name
        if name.endswith("gamma"):
            assert (value == 1).all(), name


def test_defaults_for_mask_and_segments():
    config = small_config()
    model = encoder.AlbertEncoder(config)
    ids = batch(config)["input_ids"]
    explicit = model({"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)})
    implicit = model({"input_ids": ids})
    np.testing.assert_array_equal(explicit["sequence_output"], implicit["sequence_output"])


def test_attention_is_the_originals_einsum_arithmetic():
    """The original's four einsums in numpy against the layer's reshape + MatMul."""
    config = small_config(attention_probs_dropout_prob=0.0, hidden_dropout_prob=0.0)
    layer = attention.SelfAttention(config)
    rng = np.random.default_rng(0)
    for variable in layer.checkpoint_variables().values():
        variable.assign(rng.normal(0, 0.3, variable.shape).astype(np.float32))
    w = {name: variable.numpy() for name, variable in layer.checkpoint_variables().items()}
    hidden, heads = config.hidden_size, config.num_attention_heads
    size = hidden // heads
    x = rng.normal(size=(2, 5, hidden)).astype(np.float32)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.int32)

    def project(name):
        return (np.einsum("BFH,HND->BFND", x, w[f"self/{name}/kernel"].reshape(hidden, heads, size))
                + w[f"self/{name}/bias"].reshape(heads, size))
    logits = (np.einsum("BFND,BTND->BNFT", project("query"), project("key")) / np.sqrt(size)
              + (1.0 - mask[:, None, None, :]) * -10000.0)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = np.einsum("BNFT,BTND->BFND", probs, project("value"))
    expected = (np.einsum("BFND,NDH->BFH", context, w["output/dense/kernel"].reshape(heads, size, hidden))
                + w["output/dense/bias"])
    np.testing.assert_allclose(layer(tf.constant(x), tf.constant(mask)).numpy(), expected, atol=1e-4)


def test_graph_has_no_einsum_op():
    """Every projection is reshape + MatMul, so the graph converts to TFLite."""
    config = small_config()
    model = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    inputs = dict(batch(config), masked_lm_positions=np.array([[0, 2], [1, 1]], np.int32))
    spec = {name: tf.TensorSpec([None, None], tf.int32) for name in inputs}
    graph = tf.function(lambda x: model(x)).get_concrete_function(spec).graph
    assert "Einsum" not in {op.type for op in graph.get_operations()}


def test_one_hot_embeddings_match_lookup():
    config = small_config()
    lookup = encoder.AlbertEncoder(config)
    one_hot = encoder.AlbertEncoder(config, use_one_hot_embeddings=True)
    copy_weights(lookup, one_hot)
    inputs = batch(config)
    np.testing.assert_allclose(lookup(inputs)["sequence_output"], one_hot(inputs)["sequence_output"], atol=1e-5)


def test_dropout_only_when_training(tiny_config):
    model = encoder.AlbertEncoder(tiny_config)
    inputs = batch(tiny_config)
    first, second = model(inputs)["sequence_output"], model(inputs, training=False)["sequence_output"]
    np.testing.assert_array_equal(first, second)
    trained = model(inputs, training=True)["sequence_output"]
    assert not np.allclose(first, trained, atol=1e-3)


def test_sequence_longer_than_positions_names_both_numbers():
    config = small_config(max_position_embeddings=8)
    model = encoder.AlbertEncoder(config)
    with pytest.raises(embeddings.SequenceTooLongError, match="length 9 exceeds max_position_embeddings 8"):
        model(batch(config, length=9))
    traced = tf.function(lambda ids: model({"input_ids": ids})["sequence_output"],
                         input_signature=[tf.TensorSpec([None, None], tf.int32)])
    assert traced(batch(config, length=8)["input_ids"]).shape == (2, 8, 16)
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_position_embeddings 8"):
        traced(batch(config, length=9)["input_ids"])


def test_hidden_size_not_divisible_by_heads():
    with pytest.raises(ConfigError, match=r"'hidden_size' \(30\) is not a multiple of 'num_attention_heads' \(4\)"):
        encoder.AlbertEncoder(small_config(hidden_size=30, num_attention_heads=4))


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_keeps_float32_where_it_matters(policy, float32_policy):
    config = small_config()
    reference = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    keras.mixed_precision.set_global_policy(policy)
    model = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    copy_weights(reference, model)
    inputs = dict(batch(config), masked_lm_positions=np.array([[0, 2], [1, 1]], np.int32))
    outputs, expected = model(inputs), reference(inputs)
    assert all(variable.dtype == "float32" for variable in model.weights)
    for name in ("sequence_output", "pooled_output", "embedding_output", "mlm_logits", "sop_logits"):
        assert outputs[name].dtype == tf.float32, name
        np.testing.assert_allclose(outputs[name], expected[name], atol=0.1, err_msg=name)
    assert model.encoder.groups[0][0].attention.compute_dtype == policy.split("_")[1]
    assert model.encoder.groups[0][0].attention_layer_norm.compute_dtype == "float32"


@pytest.mark.slow
def test_jit_compile_matches_eager():
    config = small_config()
    model = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    inputs = dict(batch(config), masked_lm_positions=np.array([[0, 2], [1, 1]], np.int32))
    compiled = tf.function(lambda x: model(x), jit_compile=True)(inputs)
    eager = model(inputs)
    for name in ("sequence_output", "mlm_logits", "sop_logits"):
        np.testing.assert_allclose(compiled[name], eager[name], atol=1e-5)


def test_mlm_logits_tied_to_word_table():
    config = small_config()
    model = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    inputs = dict(batch(config), masked_lm_positions=np.array([[0, 5], [2, 2]], np.int32))
    outputs = model(inputs)
    names = {k: v.numpy() for k, v in model.checkpoint_variables().items()}
    gathered = np.take_along_axis(outputs["sequence_output"].numpy(),
                                  inputs["masked_lm_positions"][:, :, None], axis=1)
    x = gathered @ names["cls/predictions/transform/dense/kernel"] + names["cls/predictions/transform/dense/bias"]
    x = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)
    expected = x @ names["bert/embeddings/word_embeddings"].T + names["cls/predictions/output_bias"]
    np.testing.assert_allclose(outputs["mlm_logits"], expected, atol=1e-4)
    assert outputs["mlm_logits"].shape == (2, 2, config.vocab_size)
    assert "mlm_logits" not in model(batch(config))


def test_classifier_head_at_root_scope():
    config = small_config()
    model = classifier.AlbertClassifier(encoder.AlbertEncoder(config), num_labels=3)
    names = model.checkpoint_variables()
    assert list(names)[-2:] == ["output_weights", "output_bias"]
    assert tuple(names["output_weights"].shape) == (3, 16) and tuple(names["output_bias"].shape) == (3,)
    inputs = batch(config)
    outputs = model(inputs)
    expected = outputs["pooled_output"].numpy() @ names["output_weights"].numpy().T
    np.testing.assert_allclose(outputs["logits"], expected, atol=1e-6)
    assert not np.allclose(model(inputs, training=True)["logits"], outputs["logits"])


HEADS = {
    "classifier": lambda bert: classifier.AlbertClassifier(bert, num_labels=3),
    "token_classifier": lambda bert: token_classifier.AlbertTokenClassifier(bert, 5),
    "multiple_choice": lambda bert: multiple_choice.AlbertMultipleChoice(bert, num_choices=4),
    "pretraining": pretraining.AlbertPretrainingModel,
    "squad_v1": squad_heads.AlbertSquadV1,
    "squad_v2": squad_heads.AlbertSquadV2,
}


@pytest.mark.parametrize("head", sorted(HEADS))
def test_task_model_uses_the_passed_encoders_variables_under_the_original_names(head):
    config = small_config()
    bert = encoder.AlbertEncoder(config)
    model = HEADS[head](bert)
    assert model.encoder is bert and model.config is bert.config
    names = model.checkpoint_variables()
    encoder_names = [name for name, _ in SPEC_NAMES if name.startswith("bert/")]
    assert list(names)[:len(encoder_names)] == encoder_names
    for name, variable in bert.checkpoint_variables().items():
        assert names[name] is variable, name
    own = [id(variable) for variable in bert.weights]
    assert sum(id(variable) in own for variable in model.weights) == len(own)  # no copies
    assert len({id(variable) for variable in model.weights}) == len(model.weights)


def test_task_model_computes_in_its_encoders_precision(float32_policy):
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    bert = encoder.AlbertEncoder(small_config())
    keras.mixed_precision.set_global_policy("float32")
    model = classifier.AlbertClassifier(bert, num_labels=2)
    assert model.dtype_policy.name == "mixed_bfloat16"
    assert classifier.AlbertClassifier(bert, 2, dtype="float32").dtype_policy.name == "float32"


def test_squad_v1_refuses_an_encoder_that_skips_padding():
    with pytest.raises(ValueError, match="v1.1 model keeps the padded computation"):
        squad_heads.AlbertSquadV1(encoder.AlbertEncoder(small_config(), skip_padding=True))
