"""Encoder forward pass, base config, batch 8 x seq 128: this project vs HF PyTorch AlbertModel.

  .venv/bin/python bench/bench_encoder.py [--repeats 15] [--batch_size 8] [--seq_length 128]

Both models hold the same weights (ours → a checkpoint in the original layout → HF's
`load_tf_weights_in_albert`). Runs alternate between the variants (one forward pass each, in
turn) so a noisy, shared machine slows them alike; the median of each is reported with its
ratio to HF float32. Our variants: float32 and mixed_bfloat16, each as a `tf.function` with and
without XLA (`jit_compile=True`).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import machine  # noqa: E402  bench/machine.py: the script's own directory is on sys.path
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

from albert_tf import checkpoints  # noqa: E402
from albert_tf.huggingface import hf_interop  # noqa: E402
from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.modeling import encoder  # noqa: E402


def build_ours(config, policy, weights_from=None):
    keras.config.set_dtype_policy(policy)
    try:
        model = encoder.AlbertEncoder(config)
    finally:
        keras.config.set_dtype_policy("float32")
    if weights_from is not None:
        for target, source in zip(model.checkpoint_variables().values(),
                                  weights_from.checkpoint_variables().values()):
            target.assign(source)
    return model


def build_hf(config, reference, directory):
    prefix = checkpoints.write_checkpoint(os.path.join(directory, "model.ckpt-0"),
                                          reference.checkpoint_variables())
    hf_config = hf_interop.huggingface_config(
        config, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attn_implementation=None)
    model = transformers.AlbertModel(hf_config)
    return hf_interop.load_original_checkpoint(model, prefix).eval()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--model", default="base_v2")
    parser.add_argument("--only", default="", help="Comma-separated substrings: keep only our "
                        "variants whose name contains one (HF always runs), e.g. 'float32,bfloat16 xla'.")
    args = parser.parse_args()
    tf.get_logger().setLevel("ERROR")  # one tf.function per variant is intended, not retracing

    config = AlbertConfig.published(args.model)
    rng = np.random.default_rng(0)
    ids = rng.integers(5, config.vocab_size, (args.batch_size, args.seq_length)).astype(np.int32)
    inputs = {"input_ids": tf.constant(ids), "input_mask": tf.ones_like(ids),
              "segment_ids": tf.zeros_like(ids)}
    reference = build_ours(config, "float32")

    runners = {}
    outputs = {}
    for policy in ("float32", "mixed_bfloat16"):
        for jit in (False, True):
            name = f"ours {policy}{' xla' if jit else ''}"
            if args.only and not any(part in name for part in args.only.split(",")):
                continue
            model = build_ours(config, policy, reference)
            function = tf.function(lambda x, m=model: m(x)["sequence_output"], jit_compile=jit)
            runners[name] = (lambda f=function: f(inputs).numpy())
    with tempfile.TemporaryDirectory() as directory:
        hf_model = build_hf(config, reference, directory)
    torch_inputs = {"input_ids": torch.tensor(ids, dtype=torch.long),
                    "attention_mask": torch.ones(ids.shape, dtype=torch.long),
                    "token_type_ids": torch.zeros(ids.shape, dtype=torch.long)}

    def run_hf():
        with torch.inference_mode():
            return hf_model(**torch_inputs).last_hidden_state.numpy()

    runners["HF PyTorch float32"] = run_hf

    for name, run in runners.items():
        for _ in range(args.warmup):
            outputs[name] = run()
    times = {name: [] for name in runners}
    for _ in range(args.repeats):
        for name, run in runners.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)

    hf_median = statistics.median(times["HF PyTorch float32"])
    print(f"ALBERT {args.model} encoder forward, batch {args.batch_size} x seq {args.seq_length}, "
          f"median of {args.repeats} alternating runs; TF {tf.__version__}, torch {torch.__version__}, "
          f"threads: TF intra-op {tf.config.threading.get_intra_op_parallelism_threads() or 'default'}, "
          f"torch {torch.get_num_threads()}")
    print(f"{'variant':40s} {'median ms':>10s} {'vs HF f32':>10s} {'max|diff| vs HF':>16s}")
    table = []
    for name, values in times.items():
        median = statistics.median(values)
        difference = np.abs(outputs[name] - outputs["HF PyTorch float32"]).max()
        print(f"{name:40s} {median * 1000:10.1f} {median / hf_median:10.2f} {difference:16.2e}")
        table.append(machine.row("forward", name, median * 1000, "ms", "HF's float32 time",
                                 hf_median * 1000, f"max |difference| from HF {difference:.1e}"))
    print("written:", machine.write_results(
        "encoder_forward", f"encoder forward, ALBERT {args.model}, batch {args.batch_size} × "
        f"{args.seq_length}, against HF PyTorch", table, lambda entry: entry["name"].startswith("ours"),
        {"repeats": args.repeats, "warmup": args.warmup, "only": args.only}))

if __name__ == "__main__":
    main()
