"""GLUE classifier speed: fine-tuning throughput and exported-model latency vs HF PyTorch.

ALBERT-base (v2 config), sequence 128, 2 labels.

* Fine-tuning, global batch 32: ours = run_classifier's loop (`training.loop.Trainer` with
  `glue.task.ClassifierTask`, AdamW) in float32 and mixed_bfloat16, fed from memory; Hugging Face
  = `AlbertForSequenceClassification` with torch AdamW, float32. Median step time of the
  measured steps after a warm-up step (which includes tracing for ours) → examples/s.
* Serving latency: our SavedModel (`export.classifier`, the `ids` signature, loaded with
  `tf.saved_model.load` as TF Serving would load it) exported in float32 and in mixed_bfloat16,
  vs HF in eval mode under `torch.no_grad()` in float32 and under CPU bfloat16 autocast; batch 1
  (p50 and p99 of --latency_runs calls) and batch 32 (p50 of --batch_runs calls). Both models
  hold the same weights (ours → checkpoint in the original layout → HF's
  `load_tf_weights_in_albert`).

    .venv/bin/python bench/bench_classifier.py [--train_steps=4] [--latency_runs=100]
"""

import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from albert_tf import checkpoints  # noqa: E402
from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.export import classifier as classifier_export  # noqa: E402
from albert_tf.glue import task as glue_task  # noqa: E402
from albert_tf.modeling import classifier  # noqa: E402
from albert_tf.training import loop  # noqa: E402

SEQ, LABELS = 128, 2

flags.DEFINE_integer("train_batch_size", 32, "Fine-tuning global batch.")
flags.DEFINE_integer("train_steps", 4, "Measured fine-tuning steps (after one warm-up step).")
flags.DEFINE_integer("latency_runs", 100, "Batch-1 calls per variant (after 5 warm-up calls).")
flags.DEFINE_integer("batch_runs", 10, "Batch-32 calls per variant.")
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


def time_our_training(config, batch, precision, steps):
    output_dir = tempfile.mkdtemp(prefix="bench_classifier_")
    try:
        training = loop.TrainingConfig(
            output_dir=output_dir, train_batch_size=batch, num_train_steps=steps + 1,
            learning_rate=5e-5, optimizer="adamw", save_checkpoints_steps=10 ** 9,
            iterations_per_loop=1, precision=precision)
        trainer = loop.Trainer(_InMemoryTask(config, synthetic_batch(config, batch)),
                               tf.distribute.get_strategy(), training)
        trainer.checkpoints.save = lambda step: None  # not part of a step
        times = []
        original = trainer._train_loop_fn

        def timed(iterator, num_steps):
            start = time.perf_counter()
            result = original(iterator, num_steps)
            int(result[0])
            times.append(time.perf_counter() - start)
            return result
        trainer._train_loop_fn = timed
        trainer.train()
        return statistics.median(times[1:])
    finally:
        shutil.rmtree(output_dir, ignore_errors=True)


def hf_model(config, checkpoint_prefix):
    import transformers
    hf_config = transformers.AlbertConfig(
        vocab_size=config.vocab_size, embedding_size=config.embedding_size,
        hidden_size=config.hidden_size, num_hidden_layers=config.num_hidden_layers,
        num_hidden_groups=config.num_hidden_groups, num_attention_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size, inner_group_num=config.inner_group_num,
        hidden_act="gelu_new", hidden_dropout_prob=config.hidden_dropout_prob,
        attention_probs_dropout_prob=config.attention_probs_dropout_prob,
        classifier_dropout_prob=0.1, max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size, layer_norm_eps=1e-12, num_labels=LABELS)
    model = transformers.AlbertForSequenceClassification(hf_config)
    if checkpoint_prefix:
        transformers.load_tf_weights_in_albert(model, hf_config, checkpoint_prefix)
    return model


def time_hf_training(config, batch, steps):
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
    times = []
    for _ in range(steps + 1):
        start = time.perf_counter()
        model(**inputs).loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def _latencies(call, runs):
    for _ in range(5):
        call()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return np.array(times) * 1000.0


def our_serving_latency(config, checkpoint_prefix, precision, export_root, runs, batch_runs):
    model = classifier_export.load_classifier(config, LABELS, checkpoint_prefix, precision)
    signatures = classifier_export.ClassifierSignatures(model, ["0", "1"], SEQ, regression=False)
    path = classifier_export.write_saved_model(signatures, os.path.join(export_root, precision))
    ids = tf.saved_model.load(path).signatures["ids"]
    results = {}
    for batch, count in ((1, runs), (32, batch_runs)):
        data = synthetic_batch(config, batch, seed=1)
        inputs = {k: tf.constant(data[k]) for k in ("input_ids", "input_mask", "segment_ids")}
        results[batch] = _latencies(lambda: ids(**inputs)["probabilities"].numpy(), count)
    return results


def hf_serving_latency(config, checkpoint_prefix, bfloat16, runs, batch_runs):
    import contextlib
    import torch
    model = hf_model(config, checkpoint_prefix).eval()
    results = {}
    for batch, count in ((1, runs), (32, batch_runs)):
        data = synthetic_batch(config, batch, seed=1)
        inputs = dict(input_ids=torch.tensor(data["input_ids"], dtype=torch.long),
                      attention_mask=torch.tensor(data["input_mask"], dtype=torch.long),
                      token_type_ids=torch.tensor(data["segment_ids"], dtype=torch.long))

        def call():
            autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if bfloat16
                        else contextlib.nullcontext())
            with torch.no_grad(), autocast:
                return torch.softmax(model(**inputs).logits.float(), -1).numpy()
        results[batch] = _latencies(call, count)
    return results


def main(_):
    logging.set_verbosity(logging.WARNING)
    config = AlbertConfig.published("base_v2")
    cores = len(os.sched_getaffinity(0))
    batch = FLAGS.train_batch_size
    print(f"cores: {cores}; ALBERT-base v2, seq {SEQ}", flush=True)

    hf_step = time_hf_training(config, batch, FLAGS.train_steps)
    training_rows = [("HF PyTorch AdamW", "float32", hf_step)]
    print(f"fine-tuning HF float32: {hf_step:.2f} s/step", flush=True)
    for precision in ("float32", "mixed_bfloat16"):
        seconds = time_our_training(config, batch, precision, FLAGS.train_steps)
        training_rows.append(("albert-tf run_classifier loop, AdamW", precision, seconds))
        print(f"fine-tuning ours {precision}: {seconds:.2f} s/step", flush=True)

    work = tempfile.mkdtemp(prefix="bench_classifier_export_")
    try:
        model = classifier.AlbertClassifier(config, LABELS)
        dummy = tf.zeros([1, 2], tf.int32)
        model({"input_ids": dummy, "input_mask": dummy, "segment_ids": dummy})
        prefix = os.path.join(work, "model.ckpt-best")
        checkpoints.write_checkpoint(prefix, {name: variable.numpy() for name, variable
                                              in model.checkpoint_variables().items()})
        serving_rows = []
        for name, bf16 in (("HF PyTorch eval, no_grad", False), ("HF PyTorch eval, no_grad", True)):
            latencies = hf_serving_latency(config, prefix, bf16, FLAGS.latency_runs, FLAGS.batch_runs)
            serving_rows.append((name, "bfloat16 autocast" if bf16 else "float32", latencies))
            print(f"serving {name} {'bf16' if bf16 else 'fp32'}: p50 {np.median(latencies[1]):.1f} ms",
                  flush=True)
        for precision in ("float32", "mixed_bfloat16"):
            latencies = our_serving_latency(config, prefix, precision, work, FLAGS.latency_runs,
                                            FLAGS.batch_runs)
            serving_rows.append(("albert-tf SavedModel `ids` signature", precision, latencies))
            print(f"serving ours {precision}: p50 {np.median(latencies[1]):.1f} ms", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"\nFine-tuning, batch {batch} x seq {SEQ} (median of {FLAGS.train_steps} steps):\n")
    print("| implementation | precision | s/step | examples/s | vs HF float32 |")
    print("|---|---|---|---|---|")
    for name, precision, seconds in training_rows:
        print(f"| {name} | {precision} | {seconds:.2f} | {batch / seconds:.1f} | "
              f"{hf_step / seconds:.2f}x |")
    hf_p50 = np.median(serving_rows[0][2][1])
    print(f"\nServing latency, seq {SEQ} (batch 1: {FLAGS.latency_runs} calls; batch 32: "
          f"{FLAGS.batch_runs} calls):\n")
    print("| implementation | precision | batch 1 p50 ms | batch 1 p99 ms | batch 1 vs HF float32 "
          "| batch 32 p50 ms |")
    print("|---|---|---|---|---|---|")
    for name, precision, latencies in serving_rows:
        p50, p99 = np.percentile(latencies[1], [50, 99])
        print(f"| {name} | {precision} | {p50:.1f} | {p99:.1f} | {hf_p50 / p50:.2f}x | "
              f"{np.median(latencies[32]):.0f} |")


if __name__ == "__main__":
    app.run(main)
