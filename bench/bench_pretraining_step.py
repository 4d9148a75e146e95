"""Pretraining step speed: run_pretraining's loop vs Hugging Face PyTorch AlbertForPreTraining.

ALBERT-base (v2 config), sequence 128, 20 masked positions, global batch 8 and 32. Ours: the
shared training loop (`albert_tf.training.loop.Trainer`, LAMB, MLM+SOP task) in float32 and
mixed_bfloat16, fed from memory. Hugging Face: `AlbertForPreTraining` with torch AdamW, the same
config and batch, float32 (its MLM head scores all 128 positions; ours only the 20 masked ones,
as the original). All are timed in this one invocation, one step of each in turn (so a change in
the load of a shared machine hits all alike); each figure is the median of the measured steps,
after a warm-up step (which includes graph tracing for ours).

MFU = model FLOPs per step / step time / the best matrix-product rate measured here (a 1024x768
by 768x3072 product, the FFN shape; float32: the faster of TensorFlow and PyTorch, bfloat16:
TensorFlow), before and after the timed runs. Model FLOPs count 3x the forward
products (forward + backward) with the MLM head at the masked positions only, the same figure
for both implementations.

    .venv/bin/python bench/bench_pretraining_step.py [--batch_sizes=8,32] [--steps=3]
    ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 .venv/bin/python \
        bench/bench_pretraining_step.py --precisions=float32    # an AVX2-only CPU, emulated
"""

import os
import shutil
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import machine  # noqa: E402  bench/machine.py: the script's own directory is on sys.path

from absl import app, flags, logging  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from albert_tf.huggingface import hf_interop  # noqa: E402
from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.pretraining import task as pretraining_task  # noqa: E402
from albert_tf.training import loop  # noqa: E402

SEQ, PREDICTIONS = 128, 20

flags.DEFINE_list("batch_sizes", ["8", "32"], "Global batch sizes.")
flags.DEFINE_integer("steps", 5, "Measured steps per configuration, round-robin, after one "
                     "warm-up step each.")
flags.DEFINE_list("precisions", ["float32", "mixed_bfloat16"], "Our precisions.")
flags.DEFINE_bool("enable_xla", False, "Also pass --enable_xla to our loop.")
FLAGS = flags.FLAGS


def model_flops_per_step(config, batch, seq=SEQ, predictions=PREDICTIONS):
    """3 x forward matrix-product FLOPs (2 per multiply-add), MLM head at masked positions."""
    h, e, i, s, v = (config.hidden_size, config.embedding_size, config.intermediate_size, seq,
                     config.vocab_size)
    per_token = config.num_hidden_layers * (8 * h * h + 4 * h * i + 4 * s * h) + 2 * e * h
    per_masked = 2 * h * e + 2 * e * v
    forward = batch * (s * per_token + predictions * per_masked + 2 * h * h + 4 * h)
    return 3 * forward


def tf_matmul_rate(dtype, repeats=20):
    a = tf.random.normal((1024, 768), dtype=tf.float32)
    b = tf.random.normal((768, 3072), dtype=tf.float32)
    a, b = tf.cast(a, dtype), tf.cast(b, dtype)
    product = tf.function(lambda x, y: tf.matmul(x, y))
    product(a, b).numpy()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        product(a, b).numpy()
        best = min(best, time.perf_counter() - start)
    return 2 * 1024 * 768 * 3072 / best


def synthetic_batch(config, batch, seed=0, seq=SEQ, predictions=PREDICTIONS):
    rng = np.random.default_rng(seed)
    positions = np.sort(np.stack([rng.choice(np.arange(1, seq), predictions, replace=False)
                                  for _ in range(batch)]), axis=1)
    return {
        "input_ids": rng.integers(5, config.vocab_size, (batch, seq)).astype(np.int32),
        "input_mask": np.ones((batch, seq), np.int32),
        "segment_ids": (np.arange(seq)[None, :] >= seq // 2).repeat(batch, 0).astype(np.int32),
        "masked_lm_positions": positions.astype(np.int32),
        "masked_lm_ids": rng.integers(5, config.vocab_size, (batch, predictions)).astype(np.int32),
        "masked_lm_weights": np.ones((batch, predictions), np.float32),
        "next_sentence_labels": rng.integers(0, 2, (batch, 1)).astype(np.int32),
    }


class _InMemoryTask(pretraining_task.PretrainingTask):
    def __init__(self, config, batch, seq, predictions):
        super().__init__(config, None, seq, predictions)
        self.batch = batch

    def train_dataset(self, input_context, batch_size):
        """The batch's first `batch_size` rows (a replica's share of it) for ever."""
        return tf.data.Dataset.from_tensors({name: value[:batch_size]
                                             for name, value in self.batch.items()}).repeat()


def our_step(config, batch, precision, enable_xla, seq=SEQ, predictions=PREDICTIONS,
             strategy=None):
    """A function running one training step of our loop (LAMB, MLM+SOP task) under `strategy`
    (default: the default strategy, one CPU)."""
    output_dir = tempfile.mkdtemp(prefix="bench_pretraining_")
    training = loop.TrainingConfig(
        output_dir=output_dir, train_batch_size=batch, num_train_steps=10 ** 6,
        num_warmup_steps=0, learning_rate=1e-4, optimizer="lamb", precision=precision,
        enable_xla=enable_xla)
    task = _InMemoryTask(config, synthetic_batch(config, batch, seq=seq, predictions=predictions),
                         seq, predictions)
    trainer = loop.Trainer(task, strategy or tf.distribute.get_strategy(), training)
    iterator = trainer.train_iterator()
    shutil.rmtree(output_dir, ignore_errors=True)
    return lambda: trainer.train_steps(iterator, 1)


def hugging_face_step(config, batch):
    """A function running one HF AlbertForPreTraining step (AdamW, clipping at 1.0)."""
    import torch
    import transformers
    torch.manual_seed(0)
    hf_config = hf_interop.huggingface_config(config, attn_implementation=None)
    model = transformers.AlbertForPreTraining(hf_config)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, eps=1e-6)
    data = synthetic_batch(config, batch)
    labels = np.full((batch, SEQ), -100, np.int64)
    np.put_along_axis(labels, data["masked_lm_positions"].astype(np.int64),
                      data["masked_lm_ids"].astype(np.int64), axis=1)
    inputs = dict(input_ids=torch.tensor(data["input_ids"], dtype=torch.long),
                  attention_mask=torch.tensor(data["input_mask"], dtype=torch.long),
                  token_type_ids=torch.tensor(data["segment_ids"], dtype=torch.long),
                  labels=torch.tensor(labels),
                  sentence_order_label=torch.tensor(data["next_sentence_labels"][:, 0],
                                                    dtype=torch.long))

    def step():
        loss = model(**inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
    return step


def median_step_seconds(steps, repeats):
    """Runs the steps round-robin (one warm-up each), so load changes hit all of them alike."""
    times = {name: [] for name in steps}
    for step in steps.values():
        step()
    for _ in range(repeats):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def torch_matmul_rate(repeats=20):
    import torch
    a, b = torch.randn(1024, 768), torch.randn(768, 3072)
    torch.matmul(a, b)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        torch.matmul(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * 1024 * 768 * 3072 / best


def measure_rates():
    """Product rates of float32 (TF, PyTorch) and, when measured, bfloat16 (not with oneDNN
    capped to AVX2, where TensorFlow's bfloat16 product cannot be built)."""
    rates = {"float32": tf_matmul_rate(tf.float32), "torch_float32": torch_matmul_rate()}
    if "mixed_bfloat16" in FLAGS.precisions:
        rates["mixed_bfloat16"] = tf_matmul_rate(tf.bfloat16)
    print(f"cores: {len(os.sched_getaffinity(0))}; matrix-product rate (GFLOP/s): "
          + ", ".join(f"{k} {v / 1e9:.1f}" for k, v in rates.items()), flush=True)
    return rates


def main(_):
    logging.set_verbosity(logging.WARNING)  # the loop's per-step progress lines
    config = AlbertConfig.published("base_v2")
    rates = measure_rates()
    rows = []
    for batch in map(int, FLAGS.batch_sizes):
        flops = model_flops_per_step(config, batch)
        steps = {"hf": hugging_face_step(config, batch)}
        for precision in FLAGS.precisions:
            steps[precision] = our_step(config, batch, precision, FLAGS.enable_xla)
        seconds = median_step_seconds(steps, FLAGS.steps)
        hf_seconds = seconds.pop("hf")
        rows.append(("HF PyTorch AdamW", "float32", batch, hf_seconds, batch / hf_seconds, 1.0,
                     flops))
        for precision, ours in seconds.items():
            rows.append(("albert-tf LAMB" + (" XLA" if FLAGS.enable_xla else ""), precision,
                         batch, ours, batch / ours, hf_seconds / ours, flops))
        print(f"batch {batch}: HF float32 {hf_seconds:.2f} s/step, ours "
              + ", ".join(f"{p} {t:.2f} s/step" for p, t in seconds.items()), flush=True)
    # The machine is shared: take the best matrix-product rate seen before and after.
    rates = {name: max(rate, rates[name]) for name, rate in measure_rates().items()}
    peak = {"float32": max(rates["float32"], rates["torch_float32"]),
            "mixed_bfloat16": rates.get("mixed_bfloat16", float("nan"))}
    print(f"MFU denominators (best product rate here, GFLOP/s): float32 "
          f"{peak['float32'] / 1e9:.1f}, bfloat16 {peak['mixed_bfloat16'] / 1e9:.1f}")
    print("\n| implementation | precision | batch | s/step | examples/s | vs HF float32 | MFU |")
    print("|---|---|---|---|---|---|---|")
    table = []
    for name, precision, batch, seconds, rate, ratio, flops in rows:
        mfu = flops / seconds / peak[precision]
        print(f"| {name} | {precision} | {batch} | {seconds:.2f} | {rate:.2f} | {ratio:.2f}x "
              f"| {100 * mfu:.0f}% |")
        table.append(machine.row(f"batch {batch}", f"{name}, {precision}", rate, "examples/s",
                                 "HF's float32", rate / ratio, f"MFU {100 * mfu:.0f}%"))
    print("written:", machine.write_results(
        "pretraining_step", f"pretraining step, ALBERT-base, batch {' / '.join(FLAGS.batch_sizes)} × "
        f"{SEQ}, LAMB, against HF PyTorch AdamW", table,
        lambda entry: entry["name"].startswith("albert-tf"),
        {"steps": FLAGS.steps, "enable_xla": FLAGS.enable_xla, "product_rates": rates}))

if __name__ == "__main__":
    app.run(main)
