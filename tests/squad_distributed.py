"""SQuAD answer prediction of one model on one device, on 2 logical CPUs, and bucketed (with the
same weights in a model that also skips padding inside each batch, as the bucketed task builds).

Run by tests/test_squad_prediction.py in a fresh process (logical devices must be set before
TensorFlow starts): `squad_distributed.py <squad.json> <spm model> <out dir>`. Prints one
`RESULT <json>` line with the raw outputs and the official scores of each way.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf

(cpu,) = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402

from albert_tf.text import tokenization  # noqa: E402
from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.squad import data, prediction  # noqa: E402
from albert_tf.squad import task as squad_task  # noqa: E402
from albert_tf.training import prediction as training_prediction  # noqa: E402
from albert_tf.training.length_buckets import Batching  # noqa: E402
from tests.conftest import copy_weights  # noqa: E402

SEQ = 64
CONFIG = dict(vocab_size=4000, embedding_size=16, hidden_size=32, num_hidden_layers=2,
              num_attention_heads=4, intermediate_size=37, max_position_embeddings=SEQ,
              hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def main(squad_file, spm_model_file, output_dir):
    batching = Batching.cut((16, 32, SEQ))
    for name in ("one_device", "mirrored", "mirrored_bucketed"):
        os.makedirs(os.path.join(output_dir, name), exist_ok=True)
    keras.utils.set_random_seed(3)
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    task = squad_task.SquadTask(AlbertConfig(**CONFIG), True, SEQ, dropout_prob=0.0)
    with mirrored.scope():
        model = task.build_model(mirrored)
        skipping_model = squad_task.SquadTask(AlbertConfig(**CONFIG), True, SEQ, dropout_prob=0.0,
                                              batching=batching).build_model(mirrored)
    assert skipping_model.encoder.skip_padding and not model.encoder.skip_padding
    copy_weights(model, skipping_model)
    tokenizer = tokenization.FullTokenizer.from_scratch(None, True, spm_model_file)
    predict_set = data.prepare_predict_set(
        squad_file, tokenizer, spm_model_file, data.FeatureOptions(SEQ, 32, 16, True),
        output_dir, "eval")
    ways = {"one_device": (model, dict(strategy=tf.distribute.get_strategy())),
            "mirrored": (model, dict(strategy=mirrored)),
            "mirrored_bucketed": (skipping_model, dict(strategy=mirrored, batching=batching))}
    results = {"features": len(predict_set.features)}
    for name, (way_model, settings) in ways.items():
        # batch 5: the last global batch is split unevenly over the two replicas.
        evaluator = prediction.SquadEvaluator(predict_set, True, fixed_threshold=0.0)
        way_task = squad_task.SquadTask(AlbertConfig(**CONFIG), True, SEQ, dropout_prob=0.0,
                                        batching=settings.get("batching", Batching()),
                                        scorer=evaluator, output_dir=f"{output_dir}/{name}")
        state = training_prediction.aggregate(way_task, way_model, way_task.predict_dataset(None, 5),
                                              settings["strategy"])
        raw = evaluator.raw_results_of(
            {key: np.concatenate([batch[key] for batch in state]) for key in state[0]})
        results[name] = {
            "unique_ids": [r.unique_id for r in raw],
            "start_top_log_probs": [r.start_top_log_probs.tolist() for r in raw],
            "end_top_index": [r.end_top_index.tolist() for r in raw],
            "cls_logits": [r.cls_logits for r in raw],
            "scores": way_task.reduce_aggregated_logs(state)}
    print("RESULT " + json.dumps(results, default=float))


if __name__ == "__main__":
    main(*sys.argv[1:4])
