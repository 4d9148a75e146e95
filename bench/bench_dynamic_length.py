"""Paying only for real tokens: length buckets against Hugging Face's dynamic padding.

ALBERT-base (v2 config), float32, real-length text, one invocation, round-robin.

* Fine-tuning, single sentence: the movie-review sentences of `data/movie_reviews.tsv` (SST-2
  style, label = score > 0), `--max_seq_length=128`, global batch 32, AdamW. Ours =
  run_classifier's pipeline (GLUE records → `glue.task.ClassifierTask` → `training.loop.Trainer`)
  with `--length_buckets=auto` (batches of one length bucket each, as training groups them, and
  an encoder that skips the padding left inside them) and with `off` (the original's fixed
  length 128), over the same file. Hugging Face = `AlbertForSequenceClassification` + torch
  AdamW on the same examples in file order, batched by `DataCollatorWithPadding` (padding to
  each batch's longest row). One step of each in turn after a warm-up; examples/s = examples /
  summed step time.
* Serving latency: the exported classifier (`export.classifier`, loaded with
  `tf.saved_model.load` as TF Serving loads it; its encoder skips padding) on movie-review
  sentences, request i = sentence i (batch 1) or sentences 32i…32i+31 (batch 32): its `text`
  signature (raw text in, tokenized in the graph, trimmed to a bucket) and its `ids` signature
  fed the ids at their real length (batch 32: padded to the longest row); Hugging Face =
  `AlbertForSequenceClassification` in eval mode under `torch.no_grad()` on the same ids without
  padding (batch 32: padded to the longest row). One call of each in turn; p50 and p99.
  Export precisions (`--export_precision`), on the same `ids` requests: the bfloat16 export
  (bfloat16 policy: products and their weights in bfloat16; `--serving_exports=mixed_bfloat16`
  adds the earlier one, float32 weights cast per call) and the int8 `model.tflite` called through
  `serving.tflite_servable` as `serve.py --prefer_tflite_model` calls it (XNNPACK, 2 threads).
* SQuAD prediction: the windows of `data/squad_v1_excerpt.json` (repeated to `--squad_copies`
  times the questions), `--max_seq_length=384`, stride 128, query 64, batch 8. Ours =
  the whole-set pass of `training.prediction.aggregate` over `squad.task.SquadTask`'s predict
  set, v1.1 (always padded to 384, as the original)
  and v2.0 with length buckets (its encoder skips padding); Hugging Face =
  `AlbertForQuestionAnswering` under `torch.no_grad()` on the same windows, each batch cut to its
  longest row, and padded to 384 as transformers' `run_qa.py` does by default. One whole pass of
  each in turn; features/s from the median pass.

Tokens come from a SentencePiece model trained here on the Brown Corpus (`make data`), so the
lengths are those of real English text. Weights are random: speed does not depend on them.

    .venv/bin/python bench/bench_dynamic_length.py [--train_steps=24] [--squad_passes=3]

TensorFlow's matrix products go through oneDNN unless TF_ENABLE_ONEDNN_OPTS=0 is set (then
Eigen); run it both ways on a new CPU: `TF_ENABLE_ONEDNN_OPTS=0 .venv/bin/python bench/...`.
"""

import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import machine  # noqa: E402  bench/machine.py: the script's own directory is on sys.path
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from albert_tf.huggingface import hf_interop  # noqa: E402
from albert_tf.text import tokenization, vocab  # noqa: E402
from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.glue import features as glue_features  # noqa: E402
from albert_tf.glue import task as glue_task  # noqa: E402
from albert_tf.glue.processors import InputExample  # noqa: E402
from albert_tf.squad import data as squad_data  # noqa: E402
from albert_tf.squad import prediction as squad_prediction  # noqa: E402
from albert_tf.squad import task as squad_task  # noqa: E402
from albert_tf.training import length_buckets, loop, prediction  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(REPO, "albert_tf", "configs", "albert_base_v2.json")

flags.DEFINE_string("data_dir", os.path.join(REPO, "data"), "Where `make data` put the data.")
flags.DEFINE_integer("train_steps", 24, "Measured fine-tuning steps per implementation.")
flags.DEFINE_integer("train_batch_size", 32, "Fine-tuning global batch.")
flags.DEFINE_integer("squad_passes", 3, "Measured whole passes per implementation.")
flags.DEFINE_integer("squad_copies", 8, "How many times the excerpt's questions are repeated.")
flags.DEFINE_integer("latency_runs", 100, "Batch-1 requests per implementation.")
flags.DEFINE_integer("batch_runs", 20, "Batch-32 requests per implementation.")
flags.DEFINE_list("measure", ["training", "serving", "squad"], "Which parts to measure.")
flags.DEFINE_list("serving_exports", ["bfloat16", "int8"], "Exports measured beside float32 in "
                  "--measure=serving: bfloat16 (weights stored in bfloat16, as "
                  "--export_precision=bfloat16 writes them), mixed_bfloat16 (the earlier "
                  "bfloat16 export: float32 weights cast per call), int8. Drop the bfloat16 "
                  "ones where TensorFlow's bfloat16 kernels cannot run, e.g. with "
                  "ONEDNN_MAX_CPU_ISA=AVX2 on a CPU with AVX-512 BF16.")
flags.DEFINE_bool("serving_hf", True, "--measure=serving: also time Hugging Face (the ratios' "
                  "reference). Without it the reference is our float32 `ids` signature: on a "
                  "loaded machine PyTorch's waiting threads slow the calls timed after it.")
flags.DEFINE_string("serving_results", None, "--measure=serving: also write "
                    "bench/results/<this>.json (bench/machine.py) with every row.")
FLAGS = flags.FLAGS

SEQ, SQUAD_SEQ = 128, 384
# The rows the figure in bench/RESULTS.md shows: ours with length buckets, each against HF.
HEADLINE_ROWS = ("ours, length buckets", "ours, `ids` signature", "ours v2.0, length buckets")




def spm_model(work_dir):
    brown = sorted(os.path.join(FLAGS.data_dir, "brown", name)
                   for name in os.listdir(os.path.join(FLAGS.data_dir, "brown")))
    return vocab.train_albert_spm(brown, os.path.join(work_dir, "brown-8k"), vocab_size=8000)


def movie_review_examples():
    examples = []
    with open(os.path.join(FLAGS.data_dir, "movie_reviews.tsv"), encoding="utf-8") as reader:
        for line in reader:
            index, score, sentence = line.rstrip("\n").split("\t")
            examples.append(InputExample(f"train-{index}", sentence, None,
                                         "1" if float(score) > 0 else "0"))
    return examples


def timed(call):
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


# ------------------------------------------------------------------------------- fine-tuning

WARMUP_STEPS = 8  # enough for every bucket length to have come up once


def our_training_steps(config, record_file, buckets, work_dir):
    """A function running the next step of run_classifier's loop (records in file order)."""
    task = glue_task.ClassifierTask(config, "sst-2", 2, SEQ, train_file=record_file,
                                    shuffle_buffer=1,
                                    batching=length_buckets.Batching.cut(buckets))
    training = loop.TrainingConfig(
        output_dir=tempfile.mkdtemp(dir=work_dir), train_batch_size=FLAGS.train_batch_size,
        num_train_steps=10 ** 6, learning_rate=5e-5, optimizer="adamw")
    trainer = loop.Trainer(task, tf.distribute.get_strategy(), training)
    iterator = trainer.train_iterator()
    return lambda: trainer.train_steps(iterator, 1)


def hf_training_steps(config, record_file, spm_file):
    """A function running the next HF step on the same examples, dynamically padded."""
    import torch
    import transformers
    torch.manual_seed(0)
    model = transformers.AlbertForSequenceClassification(hf_interop.huggingface_config(
        config, classifier_dropout_prob=0.1, num_labels=2, attn_implementation=None))
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01, eps=1e-6)
    collator = transformers.DataCollatorWithPadding(
        transformers.AlbertTokenizer(vocab_file=spm_file), return_tensors="pt")
    rows = []
    for record in glue_task.ClassifierTask(config, "sst-2", 2, SEQ).dataset_of(record_file,
                                                                            1).unbatch():
        length = int(record["input_mask"].numpy().sum())
        rows.append({"input_ids": record["input_ids"].numpy()[:length].tolist(),
                     "token_type_ids": record["segment_ids"].numpy()[:length].tolist(),
                     "attention_mask": [1] * length, "labels": int(record["label_ids"])})
    batches = iter([collator(rows[i:i + FLAGS.train_batch_size])
                    for i in range(0, len(rows) - FLAGS.train_batch_size + 1,
                                   FLAGS.train_batch_size)])

    def step():
        model(**next(batches)).loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
    return step


def measure_training(config, spm_file, work_dir):
    tokenizer = tokenization.FullTokenizer(None, True, spm_file)
    examples = movie_review_examples()
    needed = FLAGS.train_batch_size * (FLAGS.train_steps + 2)
    record_file = os.path.join(work_dir, "train.tf_record")
    glue_features.write_records(examples[:needed], ["0", "1"], SEQ, tokenizer, record_file,
                                "sst-2")
    lengths = [len(tokenizer.tokenize(e.text_a)) + 2 for e in examples[:needed]]
    steps = {"ours, length buckets": our_training_steps(
                 config, record_file, length_buckets.default_buckets(SEQ), work_dir),
             "ours, padded to 128": our_training_steps(config, record_file, None, work_dir),
             "HF, DataCollatorWithPadding": hf_training_steps(config, record_file, spm_file)}
    for name, call in steps.items():  # warm-up: tracing, and ours one program per bucket length
        for _ in range(WARMUP_STEPS if name.startswith("ours") else 1):
            call()
    seconds = {name: 0.0 for name in steps}
    for _ in range(FLAGS.train_steps):
        for name, call in steps.items():
            seconds[name] += timed(call)
    rates = {name: FLAGS.train_batch_size * FLAGS.train_steps / s for name, s in seconds.items()}
    reference = rates["HF, DataCollatorWithPadding"]
    print(f"\nFine-tuning, movie-review sentences (mean {np.mean(lengths):.1f} pieces, max "
          f"{max(lengths)}), batch {FLAGS.train_batch_size}, {FLAGS.train_steps} steps each")
    for name, rate in rates.items():
        print(f"  {name:32s} {rate:7.1f} examples/s  {rate / reference:5.2f}× HF")
    return [machine.row("fine-tuning", name, rate, "examples/s", "HF's", reference)
            for name, rate in rates.items()]


# ---------------------------------------------------------------------------------- serving

def serving_requests(tokenizer, batch, count):
    """`count` requests of `batch` movie-review sentences: (texts, ids padded to the longest)."""
    sentences = [example.text_a for example in movie_review_examples()]
    requests = []
    for index in range(count):
        texts = sentences[index * batch:(index + 1) * batch]
        rows = [[2] + tokenizer.convert_tokens_to_ids(tokenizer.tokenize(
            tokenization.preprocess_text(text, lower=True)))[:SEQ - 2] + [3] for text in texts]
        width = max(len(row) for row in rows)
        ids = np.array([row + [0] * (width - len(row)) for row in rows], np.int32)
        requests.append((texts, ids, (ids > 0).astype(np.int32)))
    return requests


def measure_serving(config, spm_file, work_dir):
    import torch
    import transformers
    from albert_tf.text import tf_tokenization
    from albert_tf.export import classifier as classifier_export
    from albert_tf.modeling import classifier, encoder
    from albert_tf.serving import tflite_servable
    tokenizer = tokenization.FullTokenizer(None, True, spm_file)
    # as export.load_classifier
    model = classifier.AlbertClassifier(encoder.AlbertEncoder(config, skip_padding=True), 2)
    graph_tokenizer = tf_tokenization.InGraphTokenizer(spm_file, True)
    signatures = classifier_export.ClassifierSignatures(
        model, ["0", "1"], SEQ, False, graph_tokenizer, graph_tokenizer.cls_id,
        graph_tokenizer.sep_id)
    loaded = tf.saved_model.load(classifier_export.write_saved_model(
        signatures, os.path.join(work_dir, "export")))
    exports = {}
    for policy in ("bfloat16", "mixed_bfloat16"):
        if policy in FLAGS.serving_exports:
            exports[policy] = tf.saved_model.load(classifier_export.write_saved_model(
                bfloat16_signatures(config, model, spm_file, policy),
                os.path.join(work_dir, policy))).signatures["ids"]
    if "int8" in FLAGS.serving_exports:
        exports["int8"] = tflite_servable.TfliteRunner(classifier_export.write_saved_model(
            signatures, os.path.join(work_dir, "int8"), include_text=False, with_tflite=True),
            "albert", 1, 1024).signatures["ids"]
    hf = transformers.AlbertForSequenceClassification(hf_interop.huggingface_config(
        config, num_labels=2, attn_implementation=None)).eval()
    reference_name = ("HF eval, no_grad, no padding" if FLAGS.serving_hf
                      else "ours, `ids` signature")
    table = []
    print(f"\nServing latency, movie-review sentences, max_seq_length {SEQ}, round-robin")
    print(f"| implementation | batch | p50 ms | p99 ms | p50 CPU ms | p50 vs {reference_name} |")
    print("|---|---|---|---|---|---|")
    for batch, runs in ((1, FLAGS.latency_runs), (32, FLAGS.batch_runs)):
        requests = serving_requests(tokenizer, batch, runs + 3)
        calls = {
            "ours, `text` signature (raw text)": lambda r: loaded.signatures["text"](
                text_a=tf.constant(r[0]), text_b=tf.constant([""] * len(r[0]))),
            "ours, `ids` signature": lambda r: loaded.signatures["ids"](
                input_ids=tf.constant(r[1]), input_mask=tf.constant(r[2]),
                segment_ids=tf.zeros_like(tf.constant(r[1]))),
            "HF eval, no_grad, no padding": lambda r: _hf_call(torch, hf, r)}
        if not FLAGS.serving_hf:
            del calls["HF eval, no_grad, no padding"]
        for policy, label in (("bfloat16", "bfloat16 export"),
                              ("mixed_bfloat16", "mixed_bfloat16 export (weights cast per call)")):
            if policy in exports:
                calls[f"ours, `ids`, {label}"] = lambda r, policy=policy: exports[policy](
                    input_ids=tf.constant(r[1]), input_mask=tf.constant(r[2]),
                    segment_ids=tf.zeros_like(tf.constant(r[1])))
        if "int8" in exports:
            calls["ours, `ids`, int8 model.tflite"] = lambda r: exports["int8"](
                input_ids=r[1], input_mask=r[2], segment_ids=np.zeros_like(r[1]))
        times = {name: [] for name in calls}
        cpu_times = {name: [] for name in calls}
        for index, request in enumerate(requests):
            for name, call in calls.items():
                start, cpu_start = time.perf_counter(), time.process_time()
                call(request)
                elapsed = time.perf_counter() - start
                if index >= 3:  # warm-up requests
                    times[name].append(elapsed * 1000.0)
                    cpu_times[name].append((time.process_time() - cpu_start) * 1000.0)
        reference = np.median(times[reference_name])
        for name, values in times.items():
            p50, p99 = np.percentile(values, [50, 99])
            # per request against the reference's call in the same round: the spread the
            # machine's noise leaves on the ratio
            per_round = np.array(values) / np.array(times[reference_name])
            low, high = np.percentile(per_round, [25, 75])
            print(f"| {name} | {batch} | {p50:.1f} | {p99:.1f} | {np.median(cpu_times[name]):.1f} "
                  f"| {p50 / reference:.2f}× |")
            table.append(machine.row(
                f"serving batch {batch} p50", name, p50, "ms", f"{reference_name}'s time", reference,
                f"p99 {p99:.0f} ms, per request {low:.2f}–{high:.2f}× the reference"))
    if FLAGS.serving_results:
        print("written:", machine.write_results(
            FLAGS.serving_results,
            f"exported classifier p50 by export precision, ALBERT-base, movie-review sentences, "
            f"max_seq_length {SEQ}, round-robin", table,
            lambda entry: entry["name"] != reference_name,
            {name: FLAGS[name].value for name in ("latency_runs", "batch_runs", "serving_exports",
                                                   "serving_hf")}))
    return table


def bfloat16_signatures(config, float_model, spm_file, policy="bfloat16"):
    """`ClassifierSignatures` of a copy of `float_model` under the Keras `policy`: bfloat16 as
    `--export_precision=bfloat16` loads it, or mixed_bfloat16 as it did before."""
    import keras
    from albert_tf.text import tf_tokenization
    from albert_tf.export import classifier as classifier_export
    from albert_tf.modeling import classifier, encoder
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        model = classifier.AlbertClassifier(encoder.AlbertEncoder(config, skip_padding=True), 2)
    finally:
        keras.config.set_dtype_policy(previous)
    for name, variable in model.checkpoint_variables().items():
        variable.assign(float_model.checkpoint_variables()[name])
    tokenizer = tf_tokenization.InGraphTokenizer(spm_file, True)
    return classifier_export.ClassifierSignatures(model, ["0", "1"], SEQ, False, tokenizer,
                                                  tokenizer.cls_id, tokenizer.sep_id)


def _hf_call(torch, model, request):
    with torch.no_grad():
        return model(input_ids=torch.tensor(request[1], dtype=torch.long),
                     attention_mask=torch.tensor(request[2], dtype=torch.long)).logits.numpy()


# ------------------------------------------------------------------------------ SQuAD predict

def squad_predict_set(spm_file, work_dir):
    with open(os.path.join(FLAGS.data_dir, "squad_v1_excerpt.json"), encoding="utf-8") as reader:
        excerpt = json.load(reader)
    copies = []
    for copy in range(FLAGS.squad_copies):
        for article in excerpt["data"]:
            paragraphs = [dict(p, qas=[dict(q, id=f"{q['id']}-{copy}") for q in p["qas"]])
                          for p in article["paragraphs"]]
            copies.append(dict(article, paragraphs=paragraphs))
    path = os.path.join(work_dir, "squad.json")
    with open(path, "w", encoding="utf-8") as writer:
        json.dump({"data": copies, "version": "1.1"}, writer)
    tokenizer = tokenization.FullTokenizer.from_scratch(None, True, spm_file)
    return squad_data.prepare_predict_set(
        path, tokenizer, spm_file, squad_data.FeatureOptions(SQUAD_SEQ, 128, 64, True),
        work_dir, "eval")


def our_squad_pass(config, predict_set, version_2):
    """run_squad.py's prediction: v2 with length buckets (its model skips padding), v1 padded."""
    batching = (length_buckets.Batching.auto(SQUAD_SEQ) if version_2
                else length_buckets.PADDED)
    task = squad_task.SquadTask(config, version_2, SQUAD_SEQ, batching=batching,
                                scorer=squad_prediction.SquadEvaluator(predict_set, version_2))
    model = task.build_model(tf.distribute.get_strategy())
    return lambda: prediction.aggregate(task, model, task.predict_dataset(None, 8))


def hf_squad_pass(config, predict_set, cut_to_longest):
    """HF on the same windows: each batch cut to its longest row, or padded to 384 as
    transformers' run_qa.py example does by default (--pad_to_max_length)."""
    import torch
    import transformers
    model = transformers.AlbertForQuestionAnswering(hf_interop.huggingface_config(
        config, num_labels=2, attn_implementation=None)).eval()
    batches = []
    for batch in squad_prediction.records.tfrecord_dataset(
            predict_set.record_file, SQUAD_SEQ, False).batch(8):
        length = int(batch["input_mask"].numpy().sum(axis=1).max()) if cut_to_longest else SQUAD_SEQ
        batches.append({"input_ids": torch.tensor(batch["input_ids"].numpy()[:, :length]),
                        "attention_mask": torch.tensor(batch["input_mask"].numpy()[:, :length]),
                        "token_type_ids": torch.tensor(batch["segment_ids"].numpy()[:, :length])})

    def run_pass():
        with torch.no_grad():
            for inputs in batches:
                model(**inputs)
    return run_pass


def measure_squad(config, spm_file, work_dir):
    predict_set = squad_predict_set(spm_file, work_dir)
    lengths = [int(record["input_mask"].numpy().sum()) for record in
               squad_prediction.records.tfrecord_dataset(predict_set.record_file, SQUAD_SEQ, False)]
    passes = {"ours v1.1, padded to 384": our_squad_pass(config, predict_set, False),
              "ours v2.0, length buckets": our_squad_pass(config, predict_set, True),
              "HF, padded to 384 (run_qa.py)": hf_squad_pass(config, predict_set, False),
              "HF AlbertForQuestionAnswering": hf_squad_pass(config, predict_set, True)}
    for call in passes.values():
        call()
    seconds = {name: [] for name in passes}
    for _ in range(FLAGS.squad_passes):
        for name, call in passes.items():
            seconds[name].append(timed(call))
    count = len(predict_set.features)
    rates = {name: count / float(np.median(values)) for name, values in seconds.items()}
    reference = rates["HF AlbertForQuestionAnswering"]
    print(f"\nSQuAD prediction, {count} windows (mean {np.mean(lengths):.0f} pieces, max "
          f"{max(lengths)}), batch 8, median of "
          f"{FLAGS.squad_passes} passes")
    for name, rate in rates.items():
        print(f"  {name:32s} {rate:7.1f} features/s  {rate / reference:5.2f}× HF")
    return [machine.row("SQuAD prediction", name, rate, "features/s", "HF's", reference)
            for name, rate in rates.items()]


def main(_):
    from albert_tf.demo import precision_choice
    print(f"CPU: {machine.cpu_model()}; {os.cpu_count()} cores; ISA: "
          f"{' '.join(precision_choice.cpu_description()[1]) or 'none of interest'}; "
          f"TensorFlow {tf.__version__}; "
          f"TF_ENABLE_ONEDNN_OPTS={os.environ.get('TF_ENABLE_ONEDNN_OPTS', 'unset (oneDNN on)')}")
    config = AlbertConfig.from_json_file(CONFIG)
    measures = {"training": measure_training, "serving": measure_serving, "squad": measure_squad}
    table = []
    with tempfile.TemporaryDirectory(prefix="bench_dynamic_length_") as work_dir:
        spm_file = spm_model(work_dir)
        for part, measure in measures.items():
            if part in FLAGS.measure:
                table += measure(config, spm_file, work_dir)
    avx512 = "avx512f" in precision_choice.cpu_description()[1]
    print("written:", machine.write_results(
        "dynamic_length_avx512" if avx512 else "dynamic_length_avx2",
        "real-length text: length buckets against HF's dynamic padding "
        f"({'AVX-512' if avx512 else 'AVX2 only'})", table,
        lambda entry: entry["name"] in HEADLINE_ROWS,
        {name: FLAGS[name].value for name in ("measure", "train_steps", "squad_passes", "squad_copies",
                                               "latency_runs", "batch_runs", "serving_exports")}))

if __name__ == "__main__":
    app.run(main)
