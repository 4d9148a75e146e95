"""The demo's sizes and hyperparameters, in one place: `make demo` and the ablation study
(`albert_tf.demo.study`) both start from them."""

from albert_tf.demo import data_sources


def demo_settings(quick):
    """The sizes and hyperparameters `make demo` runs (`quick`: the CI check of the machinery,
    whose scores mean nothing). Chosen by measurement on a 2-core CPU: docs/demo.md has the
    runs that chose them."""
    return {
        "vocab_size": 8000,
        "max_seq_length": 64,
        "max_predictions_per_seq": 10,
        "dupe_factor": 1 if quick else 5,
        "brown_shards": 3 if quick else data_sources.BROWN_SHARDS,
        "pretrain_steps": 40 if quick else 2000,
        "pretrain_batch": 64,
        "pretrain_lr": 0.01,
        "pretrain_seed": 1,
        "pretrain_eval_steps": 5 if quick else 40,
        "pretrain_model_overrides": {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0},
        "finetune_steps": 30 if quick else 500,
        "finetune_seeds": (1,) if quick else (1, 2, 3),
        "finetune_seq_length": 64,
        "finetune_batch": 32,
        "finetune_lr": 1e-4,
        # the data-efficiency comparison beside the full one: each seed's subset, both arms
        "efficiency_sentences": 50 if quick else 500,
        "efficiency_steps": 10 if quick else 200,
        "model": {"vocab_size": 8000, "embedding_size": 64, "hidden_size": 128,
                  "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 512,
                  "max_position_embeddings": 128},
    }
