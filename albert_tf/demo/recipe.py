"""The demo's sizes and hyperparameters, in one place: `make demo` and the ablation study
(`albert_tf.demo.study`) both start from them."""

from albert_tf.demo import data_sources


def demo_settings(quick):
    """Sizes that finish in about 10 minutes on 2 CPU cores (about 3 with --quick)."""
    return {
        "vocab_size": 8000,
        "max_seq_length": 128,
        "max_predictions_per_seq": 20,
        "dupe_factor": 1 if quick else 3,
        "brown_shards": 3 if quick else data_sources.BROWN_SHARDS,
        "pretrain_steps": 60 if quick else 800,
        "pretrain_batch": 32,
        "pretrain_lr": 0.003,
        "finetune_steps": 60 if quick else 600,
        "finetune_seq_length": 64,
        "finetune_batch": 32,
        "finetune_lr": 1e-4,
        "model": {"vocab_size": 8000, "embedding_size": 64, "hidden_size": 128,
                  "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 512,
                  "max_position_embeddings": 128},
    }
