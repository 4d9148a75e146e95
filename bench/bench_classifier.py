"""GLUE classifier speed: fine-tuning throughput and exported-model latency vs HF PyTorch.

ALBERT-base (v2 config), sequence 128, 2 labels.

* Fine-tuning, global batch 32: ours = run_classifier's loop (`training.loop.Trainer` with
  `glue.task.ClassifierTask`, AdamW) in float32 and mixed_bfloat16, fed from memory; Hugging Face
  = `AlbertForSequenceClassification` with torch AdamW, float32. The implementations run one
  step each in turn (round-robin, after a warm-up step that includes tracing for ours); median
  step time → examples/s. A third row of ours builds the model on the Einsum path, which the
  scripts used before 2026-11-23, to show what the reshape+matmul path gains.
* Serving latency: our SavedModel (`export.classifier`, the `ids` signature, loaded with
  `tf.saved_model.load` as TF Serving would load it) exported in float32 and in mixed_bfloat16,
  vs HF in eval mode under `torch.no_grad()` in float32 and under CPU bfloat16 autocast; batch 1
  (--latency_runs calls) and batch 32 (--batch_runs calls), p50 and p99. Both models
  hold the same weights (ours → checkpoint in the original layout → HF's
  `load_tf_weights_in_albert`).

    .venv/bin/python bench/bench_classifier.py [--train_steps=4] [--latency_runs=100]
"""

import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import machine  # noqa: E402  bench/machine.py: the script's own directory is on sys.path
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from albert_tf import checkpoints  # noqa: E402
from albert_tf.huggingface import hf_interop  # noqa: E402
from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.export import classifier as classifier_export  # noqa: E402
from albert_tf.glue import task as glue_task  # noqa: E402
from albert_tf.modeling import classifier, encoder  # noqa: E402
from albert_tf.training import loop  # noqa: E402

SEQ, LABELS = 128, 2

flags.DEFINE_integer("train_batch_size", 32, "Fine-tuning global batch.")
flags.DEFINE_integer("train_steps", 4, "Measured fine-tuning steps per implementation (after a warm-up step).")
flags.DEFINE_integer("latency_runs", 100, "Batch-1 calls per variant (after 3 warm-up rounds).")
flags.DEFINE_integer("batch_runs", 20, "Batch-32 calls per variant.")
flags.DEFINE_list("measure", ["training", "serving"], "Which parts to measure.")
FLAGS = flags.FLAGS


def synthetic_batch(config, batch, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(SEQ // 2, SEQ + 1, batch)
    mask = (np.arange(SEQ)[None, :] < lengths[:, None]).astype(np.int32)
    return {
        "input_ids": (rng.integers(5, config.vocab_size, (batch, SEQ)) * mask).astype(np.int32),
        "input_mask": mask,
        "segment_ids": ((np.arange(SEQ)[None, :] >= lengths[:, None] // 2) * mask).astype(np.int32),
        "label_ids": rng.integers(0, LABELS, batch).astype(np.int32),
        "is_real_example": np.ones(batch, np.int32),
    }


class _InMemoryTask(glue_task.ClassifierTask):
    def __init__(self, config, batch):
        super().__init__(config, "sst-2", LABELS, SEQ)
        self.batch = batch

    def train_dataset(self, input_context, batch_size):
        return tf.data.Dataset.from_tensors(self.batch).repeat()


def our_training_step(config, batch, precision):
    """A function running one step of run_classifier's loop (AdamW, classifier task)."""
    output_dir = tempfile.mkdtemp(prefix="bench_classifier_")
    training = loop.TrainingConfig(
        output_dir=output_dir, train_batch_size=batch, num_train_steps=10 ** 6,
        learning_rate=5e-5, optimizer="adamw", precision=precision)
    trainer = loop.Trainer(_InMemoryTask(config, synthetic_batch(config, batch)),
                           tf.distribute.get_strategy(), training)
    iterator = trainer.train_iterator()
    shutil.rmtree(output_dir, ignore_errors=True)
    return lambda: trainer.train_steps(iterator, 1)


def hf_model(config, checkpoint_prefix):
    import transformers
    hf_config = hf_interop.huggingface_config(
        config, classifier_dropout_prob=0.1, num_labels=LABELS, attn_implementation=None)
    model = transformers.AlbertForSequenceClassification(hf_config)
    if checkpoint_prefix:
        hf_interop.load_original_checkpoint(model, checkpoint_prefix)
    return model


def hf_training_step(config, batch):
    """A function running one HF AlbertForSequenceClassification step (AdamW, clipping at 1.0)."""
    import torch
    torch.manual_seed(0)
    model = hf_model(config, None)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01, eps=1e-6)
    data = synthetic_batch(config, batch)
    inputs = dict(input_ids=torch.tensor(data["input_ids"], dtype=torch.long),
                  attention_mask=torch.tensor(data["input_mask"], dtype=torch.long),
                  token_type_ids=torch.tensor(data["segment_ids"], dtype=torch.long),
                  labels=torch.tensor(data["label_ids"], dtype=torch.long))

    def step():
        model(**inputs).loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
    return step


def round_robin(calls, runs, warmup):
    """Milliseconds per call: one call of each variant in turn, so machine noise hits all alike."""
    for _ in range(warmup):
        for call in calls.values():
            call()
    times = {name: [] for name in calls}
    for _ in range(runs):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append((time.perf_counter() - start) * 1000.0)
    return {name: np.array(values) for name, values in times.items()}


def our_serving_call(config, checkpoint_prefix, precision, export_root, batch):
    """Calls the exported SavedModel's `ids` signature, loaded as TF Serving would load it."""
    model = classifier_export.load_classifier(config, LABELS, checkpoint_prefix, precision)
    signatures = classifier_export.ClassifierSignatures(model, ["0", "1"], SEQ, regression=False)
    path = classifier_export.write_saved_model(
        signatures, os.path.join(export_root, f"{precision}-{batch}"))
    ids = tf.saved_model.load(path).signatures["ids"]
    data = synthetic_batch(config, batch, seed=1)
    inputs = {k: tf.constant(data[k]) for k in ("input_ids", "input_mask", "segment_ids")}
    return lambda: ids(**inputs)["probabilities"].numpy()


def hf_serving_call(model, config, batch, bfloat16):
    """Calls HF in eval mode under no_grad, float32 or CPU bfloat16 autocast."""
    import contextlib
    import torch
    data = synthetic_batch(config, batch, seed=1)
    inputs = dict(input_ids=torch.tensor(data["input_ids"], dtype=torch.long),
                  attention_mask=torch.tensor(data["input_mask"], dtype=torch.long),
                  token_type_ids=torch.tensor(data["segment_ids"], dtype=torch.long))

    def call():
        autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if bfloat16
                    else contextlib.nullcontext())
        with torch.no_grad(), autocast:
            return torch.softmax(model(**inputs).logits.float(), -1).numpy()
    return call


def main(_):
    logging.set_verbosity(logging.WARNING)
    config = AlbertConfig.published("base_v2")
    cores = len(os.sched_getaffinity(0))
    batch = FLAGS.train_batch_size
    print(f"cores: {cores}; ALBERT-base v2, seq {SEQ}; "
          f"ONEDNN_MAX_CPU_ISA={os.environ.get('ONEDNN_MAX_CPU_ISA', '(unset)')}", flush=True)

    if "training" in FLAGS.measure:
        report_training(config, batch)
    if "serving" in FLAGS.measure:
        report_serving(config)


def report_training(config, batch):
    training_calls = {("HF PyTorch AdamW", "float32"): hf_training_step(config, batch)}
    for precision in ("float32", "mixed_bfloat16"):
        training_calls[("albert-tf run_classifier loop, AdamW", precision)] = our_training_step(
            config, batch, precision)
    training = round_robin(training_calls, FLAGS.train_steps, warmup=1)
    hf_step = np.median(training[("HF PyTorch AdamW", "float32")]) / 1000.0
    print(f"\nFine-tuning, batch {batch} x seq {SEQ} (round-robin, median of "
          f"{FLAGS.train_steps} steps after a warm-up step):\n")
    table = [machine.row("fine-tuning", f"{name}, {precision}", batch / (np.median(times) / 1000.0),
                         "examples/s", "HF's float32", batch / hf_step)
             for (name, precision), times in training.items()]
    print("| implementation | examples/s | vs HF float32 |")
    print("|---|---|---|")
    for entry in table:
        print(f"| {entry['name']} | {entry['value']:.1f} | {entry['ratio']:.2f}x |")
    print("written:", machine.write_results(
        "classifier_training", f"GLUE fine-tuning step, ALBERT-base, batch {batch} × {SEQ}, AdamW, "
        "against HF PyTorch", table, lambda entry: entry["name"].startswith("albert-tf"),
        {"train_steps": FLAGS.train_steps, "batch": batch, "seq": SEQ}))

def report_serving(config):
    work = tempfile.mkdtemp(prefix="bench_classifier_export_")
    try:
        model = classifier.AlbertClassifier(encoder.AlbertEncoder(config), LABELS)
        dummy = tf.zeros([1, 2], tf.int32)
        model({"input_ids": dummy, "input_mask": dummy, "segment_ids": dummy})
        prefix = os.path.join(work, "model.ckpt-best")
        checkpoints.write_checkpoint(prefix, {name: variable.numpy() for name, variable
                                              in model.checkpoint_variables().items()})
        hf = hf_model(config, prefix).eval()
        serving = {}
        for serving_batch, runs in ((1, FLAGS.latency_runs), (32, FLAGS.batch_runs)):
            calls = {
                ("HF PyTorch eval, no_grad", "float32"): hf_serving_call(hf, config, serving_batch, False),
                ("HF PyTorch eval, no_grad", "bfloat16 autocast"): hf_serving_call(
                    hf, config, serving_batch, True)}
            for precision in ("float32", "mixed_bfloat16"):
                calls[("albert-tf SavedModel `ids` signature", precision)] = our_serving_call(
                    config, prefix, precision, work, serving_batch)
            serving[serving_batch] = round_robin(calls, runs, warmup=3)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"\nServing latency, seq {SEQ}, round-robin (batch 1: {FLAGS.latency_runs} calls "
          f"each; batch 32: {FLAGS.batch_runs} calls each):\n")
    print("| implementation | precision | batch | p50 ms | p99 ms | p50 vs HF float32 |")
    print("|---|---|---|---|---|---|")
    table = []
    for serving_batch, results in serving.items():
        hf_p50 = np.median(results[("HF PyTorch eval, no_grad", "float32")])
        for (name, precision), times in results.items():
            p50, p99 = np.percentile(times, [50, 99])
            print(f"| {name} | {precision} | {serving_batch} | {p50:.1f} | {p99:.1f} | "
                  f"{hf_p50 / p50:.2f}x |")
            table.append(machine.row(f"batch {serving_batch} p50", f"{name}, {precision}", p50, "ms",
                                     "HF's float32", hf_p50, f"p99 {p99:.0f} ms"))
    print("written:", machine.write_results(
        "classifier_serving", f"exported classifier latency, ALBERT-base, seq {SEQ}, p50 (p99), "
        "against HF PyTorch", table, lambda entry: entry["name"].startswith("albert-tf"),
        {"latency_runs": FLAGS.latency_runs, "batch_runs": FLAGS.batch_runs, "seq": SEQ}))

if __name__ == "__main__":
    app.run(main)
