"""Subprocess entry point for test_run_race: a fresh TF runtime with two logical CPUs.

    python tests/race_fresh_process.py <export version dir> <checkpoint> <albert_config.json>
        <test cache> <max_seq_length> <data_dir>

Prints `RESULT {json}`: the exported SavedModel's outputs on the test cache (`serving_default`)
and on the raw test questions (`text`), and the test-split logits of the whole-set pass
(`training.prediction.aggregate`) under MirroredStrategy (2 replicas) from the checkpoint.
"""

import json
import os
import sys

import tensorflow as tf
import tensorflow_text  # noqa: F401  registers the SentencePiece ops of the `text` signature

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.race import cache, reader  # noqa: E402
from albert_tf.export import race as race_export  # noqa: E402
from albert_tf.race import task as race_task  # noqa: E402
from albert_tf.training import prediction  # noqa: E402


def main(export_version_dir, checkpoint, config_file, test_cache, max_seq_length, data_dir):
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    max_seq_length = int(max_seq_length)
    records = next(iter(cache.dataset(test_cache, max_seq_length).batch(10_000)))
    loaded = tf.saved_model.load(export_version_dir)
    serving = loaded.signatures["serving_default"]
    outputs = serving(**{name: records[name] for name in race_task.MODEL_INPUTS})
    texts = {"article": [], "question": [], "options": []}
    for article in reader.read_articles(data_dir, "test"):
        for question, options in zip(article.questions, article.options):
            texts["article"].append(article.article)
            texts["question"].append(question)
            texts["options"].append(list(options))
    text_outputs = loaded.signatures["text"](**{k: tf.constant(v) for k, v in texts.items()})

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    config = AlbertConfig.from_json_file(config_file)
    task = race_task.RaceTask(config, max_seq_length)
    with strategy.scope():
        model = race_export.load_model(config, checkpoint)
    arrays = race_task.arrays_of(prediction.aggregate(
        task, model, task.dataset_of(test_cache, 6), strategy))
    print("RESULT " + json.dumps({
        "signature_inputs": sorted(serving.structured_input_signature[1]),
        "input_dtypes": sorted({spec.dtype.name
                                for spec in serving.structured_input_signature[1].values()}),
        "serving": {name: value.numpy().tolist() for name, value in outputs.items()},
        "text_logits": text_outputs["logits"].numpy().tolist(),
        "replicas": strategy.num_replicas_in_sync,
        "mirrored_logits": arrays["logits"].tolist(),
        "mirrored_labels": arrays["label_ids"].tolist(),
    }))


if __name__ == "__main__":
    main(*sys.argv[1:])
