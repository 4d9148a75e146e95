"""The int8 `model.tflite` on LiteRT's interpreter (`ai_edge_litert`, what `tflite_servable`
runs) against TensorFlow's deprecated `tf.lite.Interpreter`: the same answers, the same time.

An ALBERT-base classifier (random weights) has its `ids` signature converted to int8 as
`--export_precision=int8` does; each interpreter then answers the same batch-1 requests,
the two in turn request by request (who goes first alternating), built from the file's bytes
with a thread per core.

    .venv/bin/python bench/bench_litert_interpreter.py --seq_length=128 --rounds=7
"""

import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import machine  # noqa: E402  bench/machine.py: the script's own directory is on sys.path
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402
from ai_edge_litert import interpreter as litert  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.export import classifier as classifier_export, tflite  # noqa: E402
from albert_tf.modeling import classifier, encoder  # noqa: E402

flags.DEFINE_string("albert_config", os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "albert_tf", "configs",
    "albert_base_v2.json"), "Model size.")
flags.DEFINE_integer("seq_length", 128, "Tokens per request.")
flags.DEFINE_integer("requests", 20, "Requests per interpreter per round.")
flags.DEFINE_integer("rounds", 7, "Alternating rounds.")
FLAGS = flags.FLAGS


def int8_model():
    config = AlbertConfig.from_json_file(FLAGS.albert_config)
    model = classifier.AlbertClassifier(encoder.AlbertEncoder(config), 2)
    signatures = classifier_export.ClassifierSignatures(model, ["neg", "pos"], FLAGS.seq_length,
                                                        False)
    dummy = tf.zeros([1, 2], tf.int32)
    signatures.ids(dummy, dummy, dummy)
    return tflite.convert_int8(signatures.tflite_archive(), ["ids"]), config


def main(_):
    print(machine.describe(), "(a machine shared with other jobs)")
    flatbuffer, config = int8_model()
    print(f"model.tflite: {len(flatbuffer) / 1e6:.1f} MB, seq_length {FLAGS.seq_length}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tf.lite.Interpreter's deprecation notice
        interpreters = {"ai_edge_litert": litert.Interpreter, "tf.lite": tf.lite.Interpreter}
        runners = {name: make(model_content=flatbuffer, num_threads=os.cpu_count())
                   .get_signature_runner("ids") for name, make in interpreters.items()}
    rng = np.random.RandomState(0)
    requests = [rng.randint(5, config.vocab_size, (1, FLAGS.seq_length)).astype(np.int32)
                for _ in range(FLAGS.requests)]
    answers = {name: [runner(input_ids=ids, input_mask=np.ones_like(ids),
                             segment_ids=np.zeros_like(ids))["probabilities"] for ids in requests]
               for name, runner in runners.items()}
    difference = max(np.abs(a - b).max() for a, b in zip(*answers.values()))
    print(f"largest |probability difference| over {FLAGS.requests} requests: {difference:.2e}")
    times = {name: [] for name in runners}
    order = list(runners)
    for _ in range(FLAGS.rounds):
        for ids in requests:  # request by request, the two in turn, who goes first alternating
            order.reverse()
            for name in order:
                start = time.perf_counter()
                runners[name](input_ids=ids, input_mask=np.ones_like(ids),
                              segment_ids=np.zeros_like(ids))
                times[name].append((time.perf_counter() - start) * 1e3)
    for name, values in times.items():
        print(f"{name:15s} p50 {np.percentile(values, 50):7.2f} ms  p10-p90 "
              f"{np.percentile(values, 10):.2f}-{np.percentile(values, 90):.2f} ms")
    ratio = np.percentile(times["ai_edge_litert"], 50) / np.percentile(times["tf.lite"], 50)
    pairs = np.array(times["ai_edge_litert"]) / np.array(times["tf.lite"])
    print(f"p50 ratio ai_edge_litert / tf.lite: {ratio:.3f}; per request pair: median "
          f"{np.median(pairs):.3f}, p10-p90 {np.percentile(pairs, 10):.2f}-"
          f"{np.percentile(pairs, 90):.2f}")


if __name__ == "__main__":
    app.run(main)
