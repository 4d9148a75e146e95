"""What an export precision costs in answers: label agreement with float32 on a real dev set.

Each export is served as the built-in server serves it (`ModelRunner`; the int8 one through
`tflite_servable`, as `--prefer_tflite_model`), its `ids` signature called once per dev sentence
at batch 1 and the sentence's real length. Printed per precision: dev accuracy, labels equal to
float32's, the largest |probability − float32's| over every sentence and label, and the p50
time of one call.

    .venv/bin/python bench/bench_export_precision.py --dev_file=demo_output/glue/SST-2/dev.tsv \
        --spm_model_file=demo_output/vocab/spm.model --float32_export=E/float32 \
        --bfloat16_export=E/bfloat16 --int8_export=E/int8

(exports written by `run_classifier.py --export_dir=E/<precision> --export_precision=<precision>`).
"""

import csv
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import machine  # noqa: E402  bench/machine.py: the script's own directory is on sys.path
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from albert_tf import serving  # noqa: E402
from albert_tf.serving import tflite_servable  # noqa: E402
from albert_tf.text import tokenization  # noqa: E402

flags.DEFINE_string("dev_file", None, "SST-2 layout dev.tsv: sentence<TAB>label, a header line.")
flags.DEFINE_string("spm_model_file", None, "The exports' SentencePiece model.")
flags.DEFINE_integer("max_seq_length", 64, "The exports' max_seq_length (ids cut to it).")
flags.DEFINE_string("float32_export", None, "The float32 export (the reference).")
flags.DEFINE_string("bfloat16_export", None, "An --export_precision=bfloat16 export.")
flags.DEFINE_string("int8_export", None, "An --export_precision=int8 export (its model.tflite).")
FLAGS = flags.FLAGS


def dev_set():
    """(ids [1, length] int32 per sentence, gold labels)."""
    tokenizer = tokenization.FullTokenizer(None, True, FLAGS.spm_model_file)
    cls_id, sep_id = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
    with open(FLAGS.dev_file, encoding="utf-8") as reader:
        rows = list(csv.reader(reader, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    requests = []
    for sentence, _ in rows:
        pieces = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(
            tokenization.preprocess_text(sentence, lower=True)))[:FLAGS.max_seq_length - 2]
        requests.append(np.array([[cls_id, *pieces, sep_id]], np.int32))
    return requests, np.array([int(label) for _, label in rows])


def answers(runner, requests):
    """(probabilities [N, labels], ms per call) of the `ids` signature, one sentence a call."""
    probabilities, times = [], []
    for ids in requests:
        start = time.perf_counter()
        outputs = runner.run("ids", {"input_ids": ids, "input_mask": np.ones_like(ids),
                                     "segment_ids": np.zeros_like(ids)})
        times.append((time.perf_counter() - start) * 1000.0)
        probabilities.append(outputs["probabilities"][0])
    return np.array(probabilities), times


def main(_):
    print(f"CPU: {machine.cpu_model()}; {os.cpu_count()} cores; TensorFlow {tf.__version__}")
    requests, gold = dev_set()
    loaders = {"float32": serving.ModelRunner, "bfloat16": serving.ModelRunner,
               "int8 (model.tflite)": tflite_servable.TfliteRunner}
    paths = {"float32": FLAGS.float32_export, "bfloat16": FLAGS.bfloat16_export,
             "int8 (model.tflite)": FLAGS.int8_export}
    results = {}
    for name, path in paths.items():
        if path is None:
            continue
        model_dir, version = serving.resolve_model_dir(path)
        runner = loaders[name](model_dir, "albert", version or 1, serving.DEFAULT_MAX_BATCH_SIZE)
        answers(runner, requests[:5])  # warm-up: the first calls trace and optimise
        results[name] = answers(runner, requests)
    reference = results["float32"][0]
    print(f"\n{len(requests)} dev sentences of {FLAGS.dev_file}, batch 1, real length")
    print("| export | dev accuracy | labels equal to float32's | max abs probability "
          "difference | p50 ms per call |")
    print("|---|---|---|---|---|")
    table = []
    for name, (probabilities, times) in results.items():
        labels = probabilities.argmax(axis=1)
        agreement = np.mean(labels == reference.argmax(axis=1))
        accuracy, difference = np.mean(labels == gold), np.abs(probabilities - reference).max()
        print(f"| {name} | {accuracy:.4f} | {agreement:.2%} "
              f"({np.sum(labels != reference.argmax(axis=1))} differ) | "
              f"{difference:.4f} | {np.median(times):.2f} |")
        table.append(machine.row(
            "batch-1 p50", name, np.median(times), "ms", "float32's time", np.median(results["float32"][1]),
            f"labels equal to float32's {agreement:.2%}, largest probability difference {difference:.4f}, "
            f"dev accuracy {accuracy:.4f}"))
    print("written:", machine.write_results(
        "export_precision", f"export precisions against float32 on {len(requests)} dev sentences, "
        "batch 1, real length", table, lambda entry: entry["name"] != "float32",
        {"dev_file": FLAGS.dev_file}))

if __name__ == "__main__":
    flags.mark_flags_as_required(["dev_file", "spm_model_file", "float32_export"])
    app.run(main)
