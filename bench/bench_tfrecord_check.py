"""The start-up check of TFRecord inputs against TensorFlow reading the same records.

`tfrecord_check.count_records` walks every frame header before training (to name a corrupt or
truncated file at once instead of hours later); this measures what that costs. Reference: one
pass of `tf.data.TFRecordDataset` over the same file (what training itself reads), in the same
invocation, round-robin. The records are 2.6 KB, about a 512-token pretraining example.

    .venv/bin/python bench/bench_tfrecord_check.py --records 100000 --repeats 5
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import machine  # noqa: E402  bench/machine.py: the script's own directory is on sys.path

import tensorflow as tf  # noqa: E402

from albert_tf.files import tfrecord_check  # noqa: E402


def _tf_count(path):
    return int(tf.data.TFRecordDataset(path, buffer_size=1 << 20).reduce(0, lambda n, _: n + 1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "records.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for _ in range(args.records):
                writer.write(b"x" * 2600)
        size_mb = os.path.getsize(path) / 1e6
        checks, reads = [], []
        for _ in range(args.repeats):
            tfrecord_check._checked.clear()  # no cache: measure the walk itself
            start = time.perf_counter()
            assert tfrecord_check.count_records(path) == args.records
            checks.append(time.perf_counter() - start)
            start = time.perf_counter()
            assert _tf_count(path) == args.records
            reads.append(time.perf_counter() - start)
    check, read = statistics.median(checks), statistics.median(reads)
    print(machine.describe())
    print(f"{args.records} records, {size_mb:.0f} MB; median of {args.repeats}, round-robin")
    print(f"start-up check: {check:.3f} s ({args.records / check:,.0f} records/s)")
    print(f"TensorFlow reading the file once: {read:.3f} s")
    print(f"check / one read: {check / read:.3f}")
    table = [machine.row("seconds for the whole file", "start-up check", check, "s",
                         "one TensorFlow pass over the same file", read,
                         f"{args.records / check:,.0f} records/s"),
             machine.row("seconds for the whole file", "one TensorFlow pass", read, "s")]
    print("written:", machine.write_results(
        "tfrecord_check", f"start-up check of TFRecord inputs, {args.records:,} records of 2.6 KB",
        table, lambda entry: "ratio" in entry,
        {"records": args.records, "megabytes": round(size_mb), "repeats": args.repeats}))

if __name__ == "__main__":
    main()
