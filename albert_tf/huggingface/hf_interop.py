"""The same model in Hugging Face `transformers` (PyTorch): the independent reference that the
parity tests and benchmarks compare against. `transformers` and `torch` are development
dependencies only, imported when these functions are called."""

import tensorflow as tf

from albert_tf.huggingface import hf_format


def huggingface_config(config, **overrides):
    """A `transformers.AlbertConfig` for an `AlbertConfig`: tanh gelu (`gelu_new`), LayerNorm
    epsilon 1e-12, eager attention (so padded batches mask as the original does)."""
    import transformers
    fields = dict(
        vocab_size=config.vocab_size, embedding_size=config.embedding_size,
        hidden_size=config.hidden_size, num_hidden_layers=config.num_hidden_layers,
        num_hidden_groups=config.num_hidden_groups, num_attention_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size, inner_group_num=config.inner_group_num,
        hidden_act="gelu_new", hidden_dropout_prob=config.hidden_dropout_prob,
        attention_probs_dropout_prob=config.attention_probs_dropout_prob,
        max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size, layer_norm_eps=1e-12, attn_implementation="eager")
    fields.update(overrides)
    return transformers.AlbertConfig(**fields)


def load_original_checkpoint(hf_model, checkpoint_prefix):
    """Loads a checkpoint in the original layout into an HF ALBERT model through
    `hf_format`'s name table (transformers 5 has no `load_tf_weights_in_albert`); every
    parameter must be set except the MLM decoder, which HF ties to the embeddings."""
    import torch
    by_class = {name: arch for arch, name in hf_format.HF_CLASS.items() if arch != "regression"}
    architecture = by_class[type(hf_model).__name__]
    config = hf_format.albert_config_from_hf(hf_model.config.to_dict(), "the HF model's config")
    reader = tf.train.load_checkpoint(checkpoint_prefix)
    stored = reader.get_variable_to_shape_map()
    original = {name: reader.get_tensor(name)
                for name, _, _ in hf_format.name_table(config, architecture) if name in stored}
    state = {name: torch.from_numpy(value) for name, value in
             hf_format.to_hf_state(original, config, architecture).items()}
    missing, unexpected = hf_model.load_state_dict(state, strict=False)
    untied = [name for name in missing if not name.startswith("predictions.decoder.")]
    if untied or unexpected:
        raise ValueError(f"{checkpoint_prefix}: HF parameters not set {untied}, unknown {unexpected}")
    return hf_model
