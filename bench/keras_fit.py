"""`AlbertTextClassifier.fit` on strings against `run_classifier.py` on the same file: time per
training example.

Both train the same model (`albert_tf/configs/albert_tiny_cpu.json`, an 8k SentencePiece model
trained on `make data`'s Brown Corpus, the same randomly initialised checkpoint), in float32, at
max_seq_length 64 and batch 32, on the same `train.tsv` (the SST-2 layout of `make data`'s movie
reviews), with the same optimizer (the original AdamW, constant rate) and length buckets. Each
tool runs as a fresh process for a short and a long training (`--epochs`, e.g. 1 and 3 epochs;
run_classifier.py the same number of examples in steps of 32); the time per example is the
difference of the two times over the difference of the examples, so start-up, tokenization
(up front in both), tracing and the final checkpoint cancel. Runs alternate between the tools,
round-robin `--repeats` times, on a machine that may be shared; the median of each tool's
figures is taken. Each run's time is taken twice: wall seconds, and the CPU seconds the process
used (user + system, from the kernel's accounting of the child): on a shared machine the wall
time mostly measures the other jobs, the CPU time the work itself. Writes
`bench/results/keras_fit.json` after each round (`machine.write_results`).

    .venv/bin/python bench/keras_fit.py [--repeats=3] [--epochs=1,3]
"""

import csv
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from absl import app, flags  # noqa: E402

import machine  # noqa: E402  bench/machine.py: the script's own directory is on sys.path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(REPO, "albert_tf", "configs", "albert_tiny_cpu.json")
MAX_SEQ_LENGTH = 64
BATCH_SIZE = 32
CLOCKS = ("cpu", "wall")  # the process's CPU seconds (user + system), and wall seconds
LEARNING_RATE = 5e-5

flags.DEFINE_string("work_dir", os.path.join(REPO, "bench", "out", "keras_fit"),
                    "Scratch folder: vocabulary, task files, preset, run outputs.")
flags.DEFINE_string("results_name", "keras_fit", "Writes bench/results/<this>.json.")
flags.DEFINE_list("epochs", ["1", "3"], "The short and the long training, in epochs.")
flags.DEFINE_integer("repeats", 3, "Round-robin rounds.", lower_bound=1)
flags.DEFINE_integer("examples", 2000, "Training examples: the first rows of SST-2's train.tsv.",
                     lower_bound=BATCH_SIZE)
flags.DEFINE_integer("keras_child_epochs", 0, "Internal: run the Keras side for this many "
                     "epochs in this process.")
FLAGS = flags.FLAGS


def prepare(work_dir):
    """The vocabulary, the task folder and the preset folder (made once, then reused)."""
    from albert_tf import checkpoints
    from albert_tf.config import AlbertConfig
    from albert_tf.demo import data_sources
    from albert_tf.glue import movie_reviews
    from albert_tf.modeling import encoder
    from albert_tf.text import vocab
    import keras

    os.makedirs(work_dir, exist_ok=True)
    data = data_sources.fetch_all(os.path.join(REPO, "data"))
    spm = os.path.join(work_dir, "8k.model")
    if not os.path.exists(spm):
        vocab.train_albert_spm(data["brown"], spm[: -len(".model")], vocab_size=8000)
    full_dir = os.path.join(work_dir, "sst2_full")
    movie_reviews.write_sst2_task(data["movie_reviews"], full_dir)
    task_dir = os.path.join(work_dir, "glue_data", "SST-2")  # the first --examples rows
    os.makedirs(task_dir, exist_ok=True)
    for split in ("train", "dev", "test"):
        with open(os.path.join(full_dir, f"{split}.tsv"), encoding="utf-8") as reader:
            lines = reader.readlines()[: FLAGS.examples + 1]
        with open(os.path.join(task_dir, f"{split}.tsv"), "w", encoding="utf-8") as writer:
            writer.writelines(lines)
    preset = os.path.join(work_dir, "preset")
    if not os.path.exists(os.path.join(preset, "checkpoint")):
        os.makedirs(preset, exist_ok=True)
        config = AlbertConfig.from_json_file(CONFIG)
        config.to_json_file(os.path.join(preset, "albert_config.json"))
        shutil.copyfile(spm, os.path.join(preset, "30k-clean.model"))
        keras.utils.set_random_seed(0)
        checkpoints.write_checkpoint(os.path.join(preset, "model.ckpt-0"),
                                     dict(encoder.AlbertEncoder(config).checkpoint_variables(),
                                          global_step=0))
    return spm, os.path.join(task_dir, "train.tsv"), preset


def read_task_file(path):
    with open(path, encoding="utf-8", newline="") as reader:
        rows = list(csv.reader(reader, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [row[0] for row in rows], [row[1] for row in rows]


def keras_child(epochs):
    """The Keras side, as a user writes it."""
    import albert_tf
    texts, labels = read_task_file(os.path.join(FLAGS.work_dir, "glue_data", "SST-2", "train.tsv"))
    model = albert_tf.AlbertTextClassifier.from_preset(os.path.join(FLAGS.work_dir, "preset"),
                                                       num_classes=2, max_seq_length=MAX_SEQ_LENGTH)
    model.fit(texts, labels, batch_size=BATCH_SIZE, epochs=epochs, verbose=0)


def keras_command(epochs):
    return [sys.executable, os.path.abspath(__file__), f"--work_dir={FLAGS.work_dir}",
            f"--keras_child_epochs={epochs}"]


def classifier_command(spm, preset, steps, output_dir):
    return [sys.executable, os.path.join(REPO, "run_classifier.py"), "--task_name=sst-2",
            f"--data_dir={os.path.join(FLAGS.work_dir, 'glue_data')}",
            f"--cached_dir={os.path.join(FLAGS.work_dir, 'cache')}",
            f"--output_dir={output_dir}", f"--albert_config_file={CONFIG}",
            f"--spm_model_file={spm}", f"--init_checkpoint={preset}", "--do_train",
            f"--max_seq_length={MAX_SEQ_LENGTH}", f"--train_batch_size={BATCH_SIZE}",
            f"--train_step={steps}", "--warmup_step=0", f"--learning_rate={LEARNING_RATE}",
            f"--save_checkpoints_steps={10 * steps}", "--precision=float32"]


def run_seconds(command):
    """{"wall": seconds, "cpu": CPU seconds} of one run of `command` (its children's CPU included)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO, CUDA_VISIBLE_DEVICES="")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"{command[1]} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return {"wall": seconds,
            "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}


def main(_):
    if FLAGS.keras_child_epochs:
        keras_child(FLAGS.keras_child_epochs)
        return
    spm, train_file, preset = prepare(FLAGS.work_dir)
    examples = len(read_task_file(train_file)[0])
    short, long = (int(epochs) for epochs in FLAGS.epochs)
    steps = {epochs: math.ceil(epochs * examples / BATCH_SIZE) for epochs in (short, long)}
    per_example = {clock: {"keras_fit": [], "run_classifier": []} for clock in CLOCKS}
    rounds = []
    for round_index in range(FLAGS.repeats):
        seconds = {}
        order = ["keras_fit", "run_classifier"]
        if round_index % 2:
            order.reverse()
        for epochs in (short, long):
            for tool in order:
                if tool == "keras_fit":
                    command = keras_command(epochs)
                else:
                    output_dir = os.path.join(FLAGS.work_dir, "runs", f"r{round_index}-{epochs}")
                    shutil.rmtree(output_dir, ignore_errors=True)
                    command = classifier_command(spm, preset, steps[epochs], output_dir)
                seconds[(tool, epochs)] = run_seconds(command)
        for clock in CLOCKS:
            keras = (seconds[("keras_fit", long)][clock] - seconds[("keras_fit", short)][clock]) / (
                (long - short) * examples)
            script = (seconds[("run_classifier", long)][clock]
                      - seconds[("run_classifier", short)][clock]) / ((steps[long] - steps[short]) * BATCH_SIZE)
            per_example[clock]["keras_fit"].append(keras)
            per_example[clock]["run_classifier"].append(script)
            print(f"round {round_index + 1}, {clock}: keras fit {keras * 1e3:.3f} ms/example, "
                  f"run_classifier {script * 1e3:.3f} ms/example, ratio {keras / script:.3f}; "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
        rounds.append({f"{tool} {epochs} epochs": {clock: round(value[clock], 2) for clock in CLOCKS}
                       for (tool, epochs), value in seconds.items()})
        write_results(per_example, rounds, examples, short, long, steps)


def results_table(per_example):
    """Each round's time per example by each clock, Keras against run_classifier.py, and the
    medians."""
    table = []
    for clock, times in per_example.items():
        rounds = [machine.row(f"{clock} time, round {index + 1}", "AlbertTextClassifier.fit",
                              1e3 * keras, "ms/example", "run_classifier.py", 1e3 * script)
                  for index, (keras, script) in enumerate(zip(times["keras_fit"], times["run_classifier"]))]
        ratios = [entry["ratio"] for entry in rounds]
        table += rounds + [machine.row(
            f"{clock} time, median of {len(rounds)} rounds", "AlbertTextClassifier.fit",
            1e3 * statistics.median(times["keras_fit"]), "ms/example", "run_classifier.py",
            1e3 * statistics.median(times["run_classifier"]),
            f"ratio per round {statistics.median(ratios):.2f}, {min(ratios):.2f}–{max(ratios):.2f}")]
    return table


def write_results(per_example, rounds, examples, short, long, steps):
    """The results file of the rounds so far (rewritten after each one)."""
    return machine.write_results(
        FLAGS.results_name, "AlbertTextClassifier.fit on strings against run_classifier.py, time per "
        "training example, tiny model, float32", results_table(per_example),
        lambda entry: "median" in entry["what"],
        {"config": "albert_tf/configs/albert_tiny_cpu.json", "precision": "float32",
         "max_seq_length": MAX_SEQ_LENGTH, "batch_size": BATCH_SIZE,
         "train_file": "the first rows of the SST-2 train.tsv of make data's movie reviews",
         "train_examples": examples, "epochs": [short, long],
         "run_classifier_steps": [steps[short], steps[long]], "seconds_per_round": rounds})

if __name__ == "__main__":
    app.run(main)
