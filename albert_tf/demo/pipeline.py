"""`make demo`: the whole pipeline on real text, every step a command a user could run alone.

vocabulary (build_vocab.py) → pretraining records (create_pretraining_data.py) → pretraining
with evaluation (run_pretraining.py) → SST-2-style fine-tuning on real movie-review sentences
from the checkpoint and from random initialisation, on all the training sentences and on each
seed's 500 (the data-efficiency comparison), evaluation, prediction and export
(run_classifier.py) → raw sentences classified by the exported SavedModel in a fresh process
(serve.py --text). Steps whose outputs exist are reused.
"""

import datetime
import json
import os
import shlex
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # the demo's own output is the commands and the summary

from absl import logging

from albert_tf import cli
from albert_tf.demo import (baselines, curves, data_sources, efficiency, machine, precision_choice, recipe,
                            steps, verdicts)
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


def pretraining_gain(metric, pretrained, random_init, majority_rate):
    """The fine-tuning score from the pretrained checkpoint against random initialisation,
    everything else equal: per-seed scores, the mean and sample standard deviation of each
    arm's runs that did not collapse to one class, and the paired comparison of
    efficiency.summary (gain, its standard error, collapses counted, verdict). The standard
    error covers fine-tuning seeds of one pretraining (`pretraining_seeds`: 1): pretraining's own
    variance is not in it."""
    rates = verdicts.one_class_rates(majority_rate)
    arms = {}
    for name, scores in (("pretrained", pretrained), ("random_init", random_init)):
        kept = verdicts.kept_scores(scores, rates)
        mean, spread = verdicts.mean_std(kept) if kept else (None, None)
        arms[f"{name}_mean"] = None if mean is None else round(mean, 4)
        arms[f"{name}_std"] = None if spread is None else round(spread, 4)
    return {"metric": metric, **efficiency.summary(pretrained, random_init, majority_rate), **arms,
            "pretraining_seeds": 1}


class Demo:
    """`make demo` as resumable steps: each step reuses its outputs when they exist (a
    vocabulary, records, a training run whose final evaluation is written)."""

    def __init__(self, data_dir, output_dir, quick):
        self.settings = recipe.demo_settings(quick)
        self.python = sys.executable
        self.data_dir = data_dir
        self.output_dir = output_dir
        self.log_dir = os.path.join(output_dir, "logs")
        self.timings = {}
        self.glue_dir = os.path.join(output_dir, "glue")
        self.spm_model = os.path.join(output_dir, "vocab", "spm.model")
        self.records_dir = os.path.join(output_dir, "pretraining_data")
        self.pretrain_dir = os.path.join(output_dir, "pretraining")
        self.export_dir = os.path.join(output_dir, "export")
        self.config_path = os.path.join(output_dir, "albert_config.json")

    def _step(self, name, command):
        return steps.run_step(name, [self.python] + command, self.log_dir)

    def check_cpu(self):
        """Picks --cpu_replicas by the machine's cores and load (taken first, before the
        check's own products load it), and --precision by measuring this CPU
        (albert_tf.demo.precision_choice)."""
        model = self.settings["model"]
        self.cpu = machine.cpu_description()
        load_average = self.load_average = os.getloadavg()[0]
        self.replicas, self.replicas_reason = machine.pretraining_replicas(self.cpu["cores"], load_average)
        self.precision, product_seconds = precision_choice.fastest_precision(
            self.settings["pretrain_batch"] * self.settings["max_seq_length"], model["hidden_size"],
            model["intermediate_size"])
        print(f"=== CPU: {machine.describe(self.cpu)}; products at the model's shapes: "
              f"float32 {product_seconds['float32'] * 1e3:.2f} ms, bfloat16 "
              f"{product_seconds['mixed_bfloat16'] * 1e3:.2f} ms -> --precision={self.precision}; "
              f"{self.replicas_reason} -> --cpu_replicas={self.replicas}", flush=True)

    def corpus_and_vocabulary(self, paths):
        """The Brown Corpus and, for task-adaptive pretraining, the movie-review training
        sentences without labels; the SST-2 task, its 500-sentence subsets; the vocabulary."""
        settings = self.settings
        sst2_dir = os.path.join(self.glue_dir, "SST-2")
        movie_reviews.write_sst2_task(paths["movie_reviews"], sst2_dir)
        for seed in settings["finetune_seeds"]:
            efficiency.write_subset(sst2_dir, os.path.join(self.subset_dir(seed), "SST-2"),
                                    settings["efficiency_sentences"], seed)
        reviews_text = os.path.join(self.output_dir, "corpus", "movie_reviews_train.txt")
        os.makedirs(os.path.dirname(reviews_text), exist_ok=True)
        movie_reviews.write_unlabelled_train_text(paths["movie_reviews"], reviews_text)
        self.text_files = paths["brown"][:settings["brown_shards"]] + [reviews_text]
        if not os.path.exists(self.spm_model):
            self.timings["vocabulary"] = self._step("1-vocabulary", [
                "build_vocab.py", f"--input={','.join(self.text_files)}",
                f"--model_prefix={self.spm_model[:-len('.model')]}",
                f"--vocab_size={settings['vocab_size']}"])

    def subset_dir(self, seed):
        return os.path.join(self.output_dir, f"glue_n{self.settings['efficiency_sentences']}_seed{seed}")

    def pretraining_records(self):
        settings = self.settings
        self.records = [os.path.join(self.records_dir, os.path.basename(path).replace(".txt", ".tfrecord"))
                        for path in self.text_files]
        if not all(os.path.exists(path) for path in self.records):
            self.timings["pretraining data"] = self._step("2-pretraining-data", [
                "create_pretraining_data.py", f"--input_file={','.join(self.text_files)}",
                f"--output_file={','.join(self.records)}", f"--spm_model_file={self.spm_model}",
                f"--max_seq_length={settings['max_seq_length']}",
                f"--max_predictions_per_seq={settings['max_predictions_per_seq']}",
                f"--dupe_factor={settings['dupe_factor']}"])

    def pretraining(self):
        """Brown's first shard held out for the evaluation. Fine-tuning keeps the default
        dropout; pretraining, for a few epochs of a small corpus, learns faster without it (the
        same variables, so the checkpoint fits both)."""
        settings, model = self.settings, self.settings["model"]
        AlbertConfig.from_dict(model).to_json_file(self.config_path)
        pretraining_config_path = os.path.join(self.output_dir, "albert_config_pretraining.json")
        AlbertConfig.from_dict(dict(model, **settings["pretrain_model_overrides"])).to_json_file(
            pretraining_config_path)
        eval_records = self.records[:1]
        train_records = self.records[1:] if len(self.records) > 1 else self.records
        pretrain_steps = settings["pretrain_steps"]
        if not steps.finished(self.pretrain_dir, pretrain_steps):
            self.timings["pretraining"] = self._step("3-pretraining", [
                "run_pretraining.py", f"--albert_config_file={pretraining_config_path}",
                f"--input_file={','.join(train_records)}", f"--eval_input_file={','.join(eval_records)}",
                f"--output_dir={self.pretrain_dir}", "--do_train", "--do_eval",
                f"--max_seq_length={settings['max_seq_length']}",
                f"--max_predictions_per_seq={settings['max_predictions_per_seq']}",
                f"--train_batch_size={settings['pretrain_batch']}", "--eval_batch_size=64",
                f"--learning_rate={settings['pretrain_lr']}", f"--num_train_steps={pretrain_steps}",
                f"--num_warmup_steps={pretrain_steps // 10}", f"--save_checkpoints_steps={pretrain_steps // 2}",
                f"--iterations_per_loop={max(1, pretrain_steps // 20)}", f"--precision={self.precision}",
                f"--cpu_replicas={self.replicas}", f"--seed={settings['pretrain_seed']}",
                f"--max_eval_steps={settings['pretrain_eval_steps']}"])

    def fine_tuning(self):
        """Every seed from the pretrained checkpoint and from random initialisation, on all
        the training sentences and on the seed's 500-sentence subset (paired: both arms see
        the same subset); two runs at a time. Returns {size: {init: [run directories]}}."""
        settings = self.settings
        sizes = {"all": (self.glue_dir, settings["finetune_steps"]),
                 str(settings["efficiency_sentences"]): (None, settings["efficiency_steps"])}
        runs, commands = {}, []
        for size, (glue_dir, train_steps) in sizes.items():
            runs[size] = {"pretrained": [], "random_init": []}
            for seed in settings["finetune_seeds"]:
                for init in runs[size]:
                    suffix = "" if size == "all" else f"-n{size}"
                    run_dir = os.path.join(self.output_dir, "fine_tuning", f"{init}{suffix}-seed{seed}")
                    runs[size][init].append(run_dir)
                    if steps.finished(run_dir, train_steps):
                        continue
                    exported = size == "all" and init == "pretrained" and seed == settings["finetune_seeds"][0]
                    name = f"4-fine-tuning-{init.replace('_', '-')}{suffix}-seed{seed}"
                    commands.append((name, self._fine_tuning_command(
                        glue_dir or self.subset_dir(seed), run_dir, seed, train_steps,
                        self.pretrain_dir if init == "pretrained" else None,
                        self.export_dir if exported else None)))
        if commands:
            started = time.time()
            steps.run_side_by_side(commands, self.log_dir)
            self.timings["fine-tuning"] = time.time() - started
        return runs

    def _fine_tuning_command(self, glue_dir, run_dir, seed, train_steps, init_checkpoint, export_dir):
        """run_classifier.py on the movie-review task: from `init_checkpoint`, or from random
        initialisation when it is None; predicts and exports when `export_dir` is given. The
        CPU check's --precision, as pretraining (the export stays float32)."""
        settings = self.settings
        command = [
            self.python, "run_classifier.py", "--task_name=sst-2", f"--data_dir={glue_dir}",
            f"--albert_config_file={self.config_path}", f"--spm_model_file={self.spm_model}",
            f"--output_dir={run_dir}", f"--cached_dir={os.path.join(self.output_dir, 'glue_cache')}",
            "--do_train", "--do_eval", f"--seed={seed}",
            f"--max_seq_length={settings['finetune_seq_length']}",
            f"--train_batch_size={settings['finetune_batch']}", "--eval_batch_size=64",
            f"--learning_rate={settings['finetune_lr']}", f"--train_step={train_steps}",
            f"--warmup_step={train_steps // 10}", f"--save_checkpoints_steps={train_steps}",
            f"--iterations_per_loop={max(1, train_steps // 10)}", f"--precision={self.precision}"]
        command.append(f"--init_checkpoint={init_checkpoint}" if init_checkpoint else "--allow_random_init")
        if export_dir:
            command += ["--do_predict", "--predict_batch_size=64", f"--export_dir={export_dir}"]
        return command

    def classify(self):
        """The exported SavedModel classifies DEMO_SENTENCES in a fresh process."""
        command = [self.python, "serve.py", f"--export_dir={self.export_dir}"] + [
            f"--text={sentence}" for sentence in DEMO_SENTENCES]
        print(f"\n=== 5-classify\n$ {' '.join(shlex.quote(c) for c in command)}", flush=True)
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"step '5-classify' failed (exit {result.returncode}):\n{result.stderr[-4000:]}")
        return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]

    def summarize(self, runs, classifications):
        settings, output_dir = self.settings, self.output_dir
        accuracy = lambda run_dir: float(steps.read_eval_results(  # noqa: E731
            os.path.join(run_dir, "eval_results.txt"))["eval_accuracy"])
        scores = {size: {init: [accuracy(run_dir) for run_dir in run_dirs] for init, run_dirs in by_init.items()}
                  for size, by_init in runs.items()}
        majority_rate = baselines.majority_label_rate(os.path.join(self.glue_dir, "SST-2", "dev.tsv"))
        classifier_dir = runs["all"]["pretrained"][0]
        summary = {
            "command": " ".join(["python -m albert_tf.demo.pipeline", *map(shlex.quote, sys.argv[1:])]),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
            "recipe": {key: settings[key] for key in ("pretrain_steps", "pretrain_batch", "max_seq_length")},
            "artefacts": {
                "vocabulary": self.spm_model, "pretraining_records": self.records_dir,
                "pretraining_checkpoints": self.pretrain_dir, "classifier_checkpoints": classifier_dir,
                "export": self.export_dir, "logs": self.log_dir},
            "cpu": dict(self.cpu, precision=self.precision, cpu_replicas=self.replicas,
                        cpu_replicas_reason=self.replicas_reason, load_average=round(self.load_average, 2)),
            "pretraining_loss": steps.pretraining_loss(os.path.join(self.log_dir, "3-pretraining.log"))
            if "pretraining" in self.timings else {"logged_loops": 0},
            "pretraining_eval": steps.read_eval_results(os.path.join(self.pretrain_dir, "eval_results.txt")),
            "fine_tuning_eval": steps.read_eval_results(os.path.join(classifier_dir, "eval_results.txt")),
            "pretraining_gain": pretraining_gain("eval_accuracy", scores["all"]["pretrained"],
                                                 scores["all"]["random_init"], majority_rate),
            "data_efficiency": {size: dict(efficiency.summary(by_init["pretrained"], by_init["random_init"],
                                                              majority_rate),
                                           fine_tuning_steps=settings["efficiency_steps"] if size != "all"
                                           else settings["finetune_steps"])
                                for size, by_init in scores.items()},
            "classified": classifications,
            "seconds": dict({key: round(value) for key, value in self.timings.items()},
                            total=round(time.time() - self.started)),
            "tensorboard": f"tensorboard --logdir {output_dir}",
            "curves": curves.plot_runs([
                ("pretraining loss", self.pretrain_dir, ["loss", "masked_lm_loss", "sentence_order_loss"]),
                ("pretraining accuracy", self.pretrain_dir, ["masked_lm_accuracy",
                                                             "sentence_order_accuracy"]),
                ("fine-tuning (SST-2 style), seed " + str(settings["finetune_seeds"][0]),
                 [("pretrained", runs["all"]["pretrained"][0]), ("random init", runs["all"]["random_init"][0])],
                 ["loss", "accuracy"]),
            ], os.path.join(output_dir, "curves.png")),
        }
        io_utils.atomic_write_text(os.path.join(output_dir, "summary.json"), json.dumps(summary, indent=2) + "\n")
        return summary

    def run(self):
        self.started = time.time()
        paths = data_sources.fetch_all(self.data_dir)
        os.makedirs(self.log_dir, exist_ok=True)
        self.check_cpu()
        self.corpus_and_vocabulary(paths)
        self.pretraining_records()
        self.pretraining()
        runs = self.fine_tuning()
        summary = self.summarize(runs, self.classify())
        _print_summary(summary)
        return summary


def run_demo(data_dir, output_dir, quick):
    return Demo(data_dir, output_dir, quick).run()


def _print_summary(summary):
    print("\n=== Summary")
    cpu = summary["cpu"]
    print(f"  CPU: {machine.describe(cpu)}; --precision={cpu['precision']} (pretraining and fine-tuning), "
          f"--cpu_replicas={cpu['cpu_replicas']} for pretraining ({cpu['cpu_replicas_reason']})")
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
    print(f"  {gain['metric']} over {gain['seeds']} seeds, one pretraining (its own variance is not in "
          f"the error): {efficiency.describe('all', gain).split(': ', 1)[1]}")
    print("  data efficiency (training sentences, same subsets for both arms):")
    for size, cell in summary["data_efficiency"].items():
        print(f"    {efficiency.describe(size, cell)}")
    for item in summary["classified"]:
        print(f"  {item.get('label')!s:>4}  {item['text_a']}")
    print(f"  curves: {summary['curves']} (or {summary['tensorboard']})")
    print("  seconds: " + ", ".join(f"{step} {seconds}" for step, seconds in summary["seconds"].items()))


def run(flag_values):
    logging.set_verbosity(logging.WARNING)
    run_demo(flag_values.data_dir, flag_values.output_dir, flag_values.quick)


if __name__ == "__main__":
    cli.run_script(define_flags, run)
