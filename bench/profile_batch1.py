"""Where one batch-1 `ids` request's time goes (ALBERT base, float32, movie-review sentences).

1. A ladder of ways to run the same request, round-robin, p50: the Keras model called eagerly,
   the Keras model inside one tf.function (encoder and head only), the export's `ids` function
   traced in this process (input checks, softmax, label), the `ids` signature of the written
   SavedModel as TF Serving and `tf.saved_model.load` run it, `ModelRunner.run` (the built-in
   server's Python: JSON-decoded lists to checked tensors, outputs to numpy), and the int8
   `model.tflite` of `--export_precision=int8`. The steps between rungs are the overheads.
2. Op by op: a `tf.profiler` trace of `--profile_calls` calls of the SavedModel's signature,
   read back from its XSpace protobuf, the kernel time summed by op type and by part of the
   model (embeddings, attention, feed-forward, layer norms, pooler and head) per request.
   TensorFlow runs two kernels at once on two cores, so the kernel times add up to more than
   the wall time.

    .venv/bin/python bench/profile_batch1.py [--runs=60] [--profile_calls=20]
"""

import collections
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import bench_dynamic_length  # noqa: E402  the serving benchmark's data, model and requests
import kernel_trace  # noqa: E402
import machine  # noqa: E402

from absl import app, flags  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.export import classifier as classifier_export  # noqa: E402
from albert_tf.modeling import classifier, encoder  # noqa: E402
from albert_tf.serving import model_runner, tflite_servable  # noqa: E402
from albert_tf.text import tokenization  # noqa: E402

flags.DEFINE_integer("runs", 60, "Batch-1 requests per rung of the ladder.")
flags.DEFINE_integer("profile_calls", 20, "Signature calls traced by tf.profiler.")
FLAGS = flags.FLAGS

# Parts of the model by node name (`modeling.encoder`, `modeling.attention`), first match wins.
# oneDNN fuses a product with its bias and the residual add: the fused node keeps the add's name.
_LAYER = r"group_\d+_inner_group_\d+(_\d+)?"
PARTS = ((r"embedding_hidden_mapping_in", "embedding projection"),
         (r"embeddings", "embeddings (gathers, sums)"),
         (r"LayerNorm", "layer norms"),
         (r"attention_1(_\d+)?/BiasAdd", "Q, K, V projections"),
         (_LAYER + r"/add$", "attention output projection (+ residual)"),
         (r"attention_1", "attention scores, softmax, context, transposes"),
         (r"intermediate", "feed-forward in product + GELU"),
         (_LAYER + r"/add_1$", "feed-forward out product (+ residual)"),
         (r"pooler", "pooler and head"))


def ladder(model, signatures, loaded, runner, int8, requests):
    """{rung: [ms per request]}, the rungs called in turn on each request."""
    specs = [tf.TensorSpec([None, None], tf.int32, name=name)
             for name in classifier_export.MODEL_INPUTS]  # one trace for every length
    keras_function = tf.function(lambda inputs: model(inputs, training=False),
                                 input_signature=[{spec.name: spec for spec in specs}])
    traced = tf.function(signatures.ids, input_signature=specs)

    def inputs(request):
        ids = tf.constant(request[1])
        return ids, tf.constant(request[2]), tf.zeros_like(ids)

    rungs = {
        "Keras model, eager": lambda r: model(dict(zip(classifier_export.MODEL_INPUTS, inputs(r))),
                                              training=False),
        "Keras model in one tf.function": lambda r: keras_function(
            dict(zip(classifier_export.MODEL_INPUTS, inputs(r)))),
        "export's `ids` function, traced here": lambda r: traced(*inputs(r)),
        "SavedModel `ids` signature (TF Serving's call)": lambda r: loaded.signatures["ids"](
            **dict(zip(classifier_export.MODEL_INPUTS, inputs(r)))),
        "ModelRunner.run (built-in server, lists in)": lambda r: runner.run("ids", {
            "input_ids": r[1].tolist(), "input_mask": r[2].tolist(),
            "segment_ids": np.zeros_like(r[1]).tolist()}),
        "int8 model.tflite (--prefer_tflite_model)": lambda r: int8(
            input_ids=r[1], input_mask=r[2], segment_ids=np.zeros_like(r[1])),
    }
    times = {name: [] for name in rungs}
    for index, request in enumerate(requests):
        for name, call in rungs.items():
            start = time.perf_counter()
            call(request)
            if index >= 3:
                times[name].append((time.perf_counter() - start) * 1000.0)
    return times


def op_profile(loaded, requests, log_dir):
    """({op type: ms per request}, {part: ms per request}, wall ms per request) from a trace."""
    function = loaded.signatures["ids"]
    calls = [dict(zip(classifier_export.MODEL_INPUTS, (tf.constant(r[1]), tf.constant(r[2]),
                                                       tf.zeros_like(tf.constant(r[1])))))
             for r in requests[:FLAGS.profile_calls]]
    tf.profiler.experimental.start(log_dir)
    start = time.perf_counter()
    for call in calls:
        function(**call)
    wall = (time.perf_counter() - start) * 1000.0 / len(calls)
    tf.profiler.experimental.stop()
    by_op, by_part = collections.Counter(), collections.Counter()
    for _, node, op_type, milliseconds in kernel_trace.kernel_events(log_dir, "tf_Compute"):
        milliseconds /= len(calls)
        by_op[op_type] += milliseconds
        by_part[next((part for pattern, part in PARTS if re.search(pattern, node)),
                     "other (head, checks, outputs)")] += milliseconds
    return by_op, by_part, wall


def main(_):
    from albert_tf.demo import precision_choice
    print(f"CPU: {machine.cpu_model()}; {os.cpu_count()} cores; ISA: "
          f"{' '.join(precision_choice.cpu_description()[1])}; TensorFlow {tf.__version__}")
    config = AlbertConfig.from_json_file(bench_dynamic_length.CONFIG)
    with tempfile.TemporaryDirectory(prefix="profile_batch1_") as work_dir:
        spm_file = bench_dynamic_length.spm_model(work_dir)
        tokenizer = tokenization.FullTokenizer(None, True, spm_file)
        requests = bench_dynamic_length.serving_requests(tokenizer, 1, FLAGS.runs + 3)
        model = classifier.AlbertClassifier(encoder.AlbertEncoder(config, skip_padding=True), 2)
        signatures = classifier_export.ClassifierSignatures(
            model, ["0", "1"], bench_dynamic_length.SEQ, False)
        model_dir = classifier_export.write_saved_model(
            signatures, os.path.join(work_dir, "export"), with_tflite=True)
        loaded = tf.saved_model.load(model_dir)
        runner = model_runner.ModelRunner(model_dir, "albert", 1)
        int8 = tflite_servable.TfliteRunner(model_dir, "albert", 1, 1024).signatures["ids"]
        lengths = [request[1].shape[1] for request in requests]
        print(f"\n{len(requests) - 3} movie-review sentences at batch 1, {np.median(lengths):.0f} "
              f"pieces median ({min(lengths)}–{max(lengths)}), round-robin, p50")
        print("| rung | p50 ms | step from the rung above |")
        print("|---|---|---|")
        previous = None
        for name, values in ladder(model, signatures, loaded, runner, int8, requests).items():
            p50 = float(np.median(values))
            step = "" if previous is None else f"{p50 - previous:+.1f} ms"
            print(f"| {name} | {p50:.1f} | {step} |")
            previous = p50
        by_op, by_part, wall = op_profile(loaded, requests, os.path.join(work_dir, "trace"))
        total = sum(by_op.values())
        print(f"\nKernel time per request of the SavedModel signature (tf.profiler, "
              f"{FLAGS.profile_calls} calls): {total:.1f} ms of kernels in {wall:.1f} ms wall")
        print("| op type | ms | share |")
        print("|---|---|---|")
        for op_type, milliseconds in by_op.most_common(12):
            print(f"| {op_type} | {milliseconds:.2f} | {milliseconds / total:.0%} |")
        print("| part of the model | ms | share |")
        print("|---|---|---|")
        for part, milliseconds in by_part.most_common():
            print(f"| {part} | {milliseconds:.2f} | {milliseconds / total:.0%} |")


if __name__ == "__main__":
    app.run(main)
