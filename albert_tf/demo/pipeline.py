"""`make demo`: the whole pipeline on real text, every step a command a user could run alone.

vocabulary (build_vocab.py) → pretraining records (create_pretraining_data.py) → pretraining
with evaluation (run_pretraining.py) → SST-2-style fine-tuning on real movie-review sentences,
evaluation, prediction and export (run_classifier.py) → raw sentences classified by the exported
SavedModel in a fresh process (serve.py --text). Steps whose outputs exist are reused.
"""

import json
import os
import shlex
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # the demo's own output is the commands and the summary

from absl import logging

from albert_tf import cli
from albert_tf.demo import curves, data_sources, precision_choice, recipe, steps
from albert_tf.files import io_utils
from albert_tf.config import AlbertConfig
from albert_tf.glue import movie_reviews


def define_flags(flag_values):
    """The demo's flags, on `flag_values` (nothing is defined at import)."""
    define = cli.Definer(flag_values)
    define.string("data_dir", "data", "Where albert_tf.demo.data_sources puts the real data.")
    define.string("output_dir", "demo_output", "Where every artefact of the demo goes.")
    define.bool("quick", False, "A shorter run (fewer steps, less data) for CI.")

DEMO_SENTENCES = (
    "A gripping, beautifully acted story that stays with you long after the credits.",
    "A tedious, badly written mess with nothing to say.",
    "The best film of the year.",
)


def _mean_and_spread(values):
    mean = sum(values) / len(values)
    spread = (sum((value - mean) ** 2 for value in values) / (len(values) - 1)) ** 0.5 if len(values) > 1 else 0.0
    return round(mean, 4), round(spread, 4)


def pretraining_gain(metric, pretrained, random_init):
    """The fine-tuning score from the pretrained checkpoint against random initialisation,
    everything else equal: per-seed scores, mean and sample standard deviation of each, gain."""
    pretrained_mean, pretrained_spread = _mean_and_spread(pretrained)
    random_mean, random_spread = _mean_and_spread(random_init)
    return {"metric": metric, "pretrained": pretrained, "random_init": random_init,
            "pretrained_mean": pretrained_mean, "pretrained_std": pretrained_spread,
            "random_init_mean": random_mean, "random_init_std": random_spread,
            "gain": round(pretrained_mean - random_mean, 4)}


def run_demo(data_dir, output_dir, quick):
    settings = recipe.demo_settings(quick)
    python = sys.executable
    paths = data_sources.fetch_all(data_dir)
    os.makedirs(output_dir, exist_ok=True)
    log_dir = os.path.join(output_dir, "logs")
    os.makedirs(log_dir, exist_ok=True)
    timings = {}

    cpu_model, isa = precision_choice.cpu_description()
    model = settings["model"]
    precision, product_seconds = precision_choice.fastest_precision(
        settings["pretrain_batch"] * settings["max_seq_length"], model["hidden_size"],
        model["intermediate_size"])
    print(f"=== CPU: {cpu_model} ({', '.join(isa) or 'no AVX'}); products at the model's shapes: "
          f"float32 {product_seconds['float32'] * 1e3:.2f} ms, bfloat16 "
          f"{product_seconds['mixed_bfloat16'] * 1e3:.2f} ms -> --precision={precision}", flush=True)

    # The corpus: the Brown Corpus (its first shard held out for the pretraining evaluation)
    # and, for task-adaptive pretraining, the movie-review training sentences without labels.
    glue_dir = os.path.join(output_dir, "glue")
    movie_reviews.write_sst2_task(paths["movie_reviews"], os.path.join(glue_dir, "SST-2"))
    reviews_text = os.path.join(output_dir, "corpus", "movie_reviews_train.txt")
    os.makedirs(os.path.dirname(reviews_text), exist_ok=True)
    movie_reviews.write_unlabelled_train_text(paths["movie_reviews"], reviews_text)
    text_files = paths["brown"][:settings["brown_shards"]] + [reviews_text]
    vocab_prefix = os.path.join(output_dir, "vocab", "spm")
    if not os.path.exists(vocab_prefix + ".model"):
        timings["vocabulary"] = steps.run_step("1-vocabulary", [
            python, "build_vocab.py", f"--input={','.join(text_files)}",
            f"--model_prefix={vocab_prefix}", f"--vocab_size={settings['vocab_size']}"], log_dir)
    spm_model = vocab_prefix + ".model"

    records_dir = os.path.join(output_dir, "pretraining_data")
    records = [os.path.join(records_dir, os.path.basename(path).replace(".txt", ".tfrecord"))
               for path in text_files]
    if not all(os.path.exists(path) for path in records):
        timings["pretraining data"] = steps.run_step("2-pretraining-data", [
            python, "create_pretraining_data.py", f"--input_file={','.join(text_files)}",
            f"--output_file={','.join(records)}", f"--spm_model_file={spm_model}",
            f"--max_seq_length={settings['max_seq_length']}",
            f"--max_predictions_per_seq={settings['max_predictions_per_seq']}",
            f"--dupe_factor={settings['dupe_factor']}"], log_dir)

    # Fine-tuning keeps the default dropout; pretraining, for a few epochs of a small corpus,
    # learns faster without it (the same variables, so the checkpoint fits both).
    config_path = os.path.join(output_dir, "albert_config.json")
    AlbertConfig.from_dict(model).to_json_file(config_path)
    pretraining_config_path = os.path.join(output_dir, "albert_config_pretraining.json")
    AlbertConfig.from_dict(dict(model, **settings["pretrain_model_overrides"])).to_json_file(
        pretraining_config_path)
    pretrain_dir = os.path.join(output_dir, "pretraining")
    eval_records, train_records = records[:1], records[1:] if len(records) > 1 else records
    pretrain_steps = settings["pretrain_steps"]
    if not steps.finished(pretrain_dir, pretrain_steps):
        timings["pretraining"] = steps.run_step("3-pretraining", [
            python, "run_pretraining.py", f"--albert_config_file={pretraining_config_path}",
            f"--input_file={','.join(train_records)}", f"--eval_input_file={','.join(eval_records)}",
            f"--output_dir={pretrain_dir}", "--do_train", "--do_eval",
            f"--max_seq_length={settings['max_seq_length']}",
            f"--max_predictions_per_seq={settings['max_predictions_per_seq']}",
            f"--train_batch_size={settings['pretrain_batch']}", "--eval_batch_size=64",
            f"--learning_rate={settings['pretrain_lr']}", f"--num_train_steps={pretrain_steps}",
            f"--num_warmup_steps={pretrain_steps // 10}", f"--save_checkpoints_steps={pretrain_steps // 2}",
            f"--iterations_per_loop={max(1, pretrain_steps // 20)}", f"--precision={precision}",
            f"--seed={settings['pretrain_seed']}",
            f"--max_eval_steps={settings['pretrain_eval_steps']}"], log_dir)

    export_dir = os.path.join(output_dir, "export")
    runs = {"pretrained": [], "random_init": []}
    fine_tuning = []
    for seed in settings["finetune_seeds"]:
        for init in runs:
            run_dir = os.path.join(output_dir, "fine_tuning", f"{init}-seed{seed}")
            runs[init].append(run_dir)
            if not steps.finished(run_dir, settings["finetune_steps"]):
                exported = init == "pretrained" and seed == settings["finetune_seeds"][0]
                fine_tuning.append((f"4-fine-tuning-{init.replace('_', '-')}-seed{seed}", _fine_tuning_command(
                    python, settings, glue_dir, config_path, spm_model, output_dir, run_dir, seed,
                    pretrain_dir if init == "pretrained" else None, export_dir if exported else None)))
    if fine_tuning:
        started = time.time()
        steps.run_side_by_side(fine_tuning, log_dir)
        timings["fine-tuning"] = time.time() - started

    command = [python, "serve.py", f"--export_dir={export_dir}"] + [f"--text={s}" for s in DEMO_SENTENCES]
    print(f"\n=== 5-classify\n$ {' '.join(shlex.quote(c) for c in command)}", flush=True)
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"step '5-classify' failed (exit {result.returncode}):\n{result.stderr[-4000:]}")
    classifications = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]

    scores = {init: [float(steps.read_eval_results(os.path.join(run_dir, "eval_results.txt"))["eval_accuracy"])
                     for run_dir in run_dirs] for init, run_dirs in runs.items()}
    classifier_dir = runs["pretrained"][0]
    summary = {
        "artefacts": {
            "vocabulary": spm_model, "pretraining_records": records_dir,
            "pretraining_checkpoints": pretrain_dir, "classifier_checkpoints": classifier_dir,
            "export": export_dir, "logs": log_dir},
        "cpu": {"model": cpu_model, "isa": isa, "precision": precision},
        "pretraining_loss": steps.pretraining_loss(os.path.join(log_dir, "3-pretraining.log"))
        if "pretraining" in timings else {"logged_loops": 0},
        "pretraining_eval": steps.read_eval_results(os.path.join(pretrain_dir, "eval_results.txt")),
        "fine_tuning_eval": steps.read_eval_results(os.path.join(classifier_dir, "eval_results.txt")),
        "pretraining_gain": pretraining_gain("eval_accuracy", scores["pretrained"],
                                             scores["random_init"]),
        "classified": classifications,
        "seconds": {key: round(value) for key, value in timings.items()},
        "tensorboard": f"tensorboard --logdir {output_dir}",
        "curves": curves.plot_runs([
            ("pretraining loss", pretrain_dir, ["loss", "masked_lm_loss", "sentence_order_loss"]),
            ("pretraining accuracy", pretrain_dir, ["masked_lm_accuracy",
                                                    "sentence_order_accuracy"]),
            ("fine-tuning (SST-2 style), seed " + str(settings["finetune_seeds"][0]),
             [("pretrained", runs["pretrained"][0]), ("random init", runs["random_init"][0])],
             ["loss", "accuracy"]),
        ], os.path.join(output_dir, "curves.png")),
    }
    io_utils.atomic_write_text(os.path.join(output_dir, "summary.json"), json.dumps(summary, indent=2) + "\n")
    _print_summary(summary)
    return summary


def _fine_tuning_command(python, settings, glue_dir, config_path, spm_model, output_dir, run_dir,
                         seed, init_checkpoint, export_dir):
    """run_classifier.py on the movie-review task: from `init_checkpoint`, or from random
    initialisation when it is None; predicts and exports when `export_dir` is given."""
    steps = settings["finetune_steps"]
    command = [
        python, "run_classifier.py", "--task_name=sst-2", f"--data_dir={glue_dir}",
        f"--albert_config_file={config_path}", f"--spm_model_file={spm_model}",
        f"--output_dir={run_dir}", f"--cached_dir={os.path.join(output_dir, 'glue_cache')}",
        "--do_train", "--do_eval", f"--seed={seed}",
        f"--max_seq_length={settings['finetune_seq_length']}",
        f"--train_batch_size={settings['finetune_batch']}", "--eval_batch_size=64",
        f"--learning_rate={settings['finetune_lr']}", f"--train_step={steps}",
        f"--warmup_step={steps // 10}", f"--save_checkpoints_steps={steps}",
        f"--iterations_per_loop={max(1, steps // 10)}"]
    command.append(f"--init_checkpoint={init_checkpoint}" if init_checkpoint else "--allow_random_init")
    if export_dir:
        command += ["--do_predict", "--predict_batch_size=64", f"--export_dir={export_dir}"]
    return command


def _print_summary(summary):
    print("\n=== Summary")
    for name, path in summary["artefacts"].items():
        print(f"  {name:24s} {path}")
    loss = summary["pretraining_loss"]
    if loss["logged_loops"]:
        print(f"  pretraining loss:  {loss['first']:.3f} at step {loss['first_step']} -> "
              f"{loss['last']:.3f} at step {loss['last_step']}")
    print("  pretraining eval (held-out records):  " + ", ".join(
        f"{k}={v}" for k, v in summary["pretraining_eval"].items()))
    print("  fine-tuning eval (the exported run):  " + ", ".join(
        f"{k}={v}" for k, v in summary["fine_tuning_eval"].items()))
    gain = summary["pretraining_gain"]
    print(f"  {gain['metric']} over {len(gain['pretrained'])} seeds: pretrained "
          f"{gain['pretrained_mean']:.4f} ± {gain['pretrained_std']:.4f}, random init "
          f"{gain['random_init_mean']:.4f} ± {gain['random_init_std']:.4f}: gain {gain['gain']:+.4f}")
    for item in summary["classified"]:
        print(f"  {item.get('label')!s:>4}  {item['text_a']}")
    print(f"  curves: {summary['curves']} (or {summary['tensorboard']})")


def run(flag_values):
    logging.set_verbosity(logging.WARNING)
    run_demo(flag_values.data_dir, flag_values.output_dir, flag_values.quick)


if __name__ == "__main__":
    cli.run_script(define_flags, run)
