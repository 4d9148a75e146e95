"""The same model in Hugging Face `transformers<5` (PyTorch): the independent reference that the
parity tests and benchmarks compare against. `transformers` is a development dependency only,
imported when these functions are called."""

import contextlib
import io


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
    """`load_tf_weights_in_albert` (which reads the original names), without its per-name prints."""
    import transformers
    with contextlib.redirect_stdout(io.StringIO()):
        transformers.load_tf_weights_in_albert(hf_model, hf_model.config, checkpoint_prefix)
    return hf_model
