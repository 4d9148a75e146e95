"""The demo's sizes and hyperparameters, in one place: `make demo` and the ablation study
(`albert_tf.demo.study`) both start from them."""

from albert_tf.demo import data_sources


def demo_settings(quick):
    """The sizes and hyperparameters `make demo` runs (`quick`: the CI check of the machinery,
    whose scores mean nothing: every step on less data and a smaller model). Chosen by
    measurement on a 2-core CPU: docs/demo.md has the runs that chose them."""
    settings = {
        "vocab_size": 8000,
        "max_seq_length": 64,
        "max_predictions_per_seq": 10,
        "dupe_factor": 5,
        "brown_shards": data_sources.BROWN_SHARDS,
        "pretrain_steps": 2000,
        "pretrain_batch": 64,
        "pretrain_lr": 0.01,
        "pretrain_seed": 1,
        "pretrain_eval_steps": 40,
        "pretrain_model_overrides": {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0},
        "finetune_steps": 500,
        "finetune_seeds": (1, 2, 3),
        "finetune_seq_length": 64,
        "finetune_batch": 32,
        "finetune_lr": 1e-4,
        # the data-efficiency comparison beside the full one: each seed's subset, both arms
        "efficiency_sentences": 500,
        "efficiency_steps": 200,
        "model": {"vocab_size": 8000, "embedding_size": 64, "hidden_size": 128,
                  "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 512,
                  "max_position_embeddings": 128},
    }
    if quick:  # one Brown shard held out, one to train on
        settings.update(
            vocab_size=2000, dupe_factor=1, brown_shards=2, pretrain_steps=40,
            pretrain_eval_steps=5, finetune_steps=30, finetune_seeds=(1,),
            efficiency_sentences=50, efficiency_steps=10,
            model=dict(settings["model"], vocab_size=2000, embedding_size=32, hidden_size=64,
                       num_hidden_layers=2, intermediate_size=128))
    return settings
