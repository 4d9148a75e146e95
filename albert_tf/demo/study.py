"""`make paper`: the ALBERT paper's ablation tables in miniature, every step a command of the
project's own scripts (printed, so any cell can be rerun alone).

    python -m albert_tf.demo.study --data_dir=data --output_dir=study_output --preset=full

Pretrains the recipe's model (albert_tf/demo/recipe.py) under the paper's ablations: SOP / NSP
/ MLM only (Table 6), all-shared / not-shared layers (Table 5), embedding size E (Table 4);
evaluates each on held-out SOP and NSP pairs; fine-tunes each, and a randomly initialised model,
on movie-review sentiment and Brown part-of-speech tagging with several seeds; writes
study.md, study.json and study.png (albert_tf/demo/study_report.py). See docs/paper_study.md.
"""

import concurrent.futures
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # the study's own output is the commands

from absl import logging

from albert_tf import checkpoints, cli, errors
from albert_tf.config import AlbertConfig
from albert_tf.demo import data_sources, pipeline, precision_choice, recipe, study_cells, study_report
from albert_tf.files import io_utils
from albert_tf.glue import movie_reviews
from albert_tf.pretraining.outputs import SUMMARY_SUFFIX


def _full():
    settings = recipe.demo_settings(False)
    return {
        "vocab_size": settings["vocab_size"],
        "model": settings["model"],
        "train_shards": settings["brown_shards"] - 1,  # the last shard is held out
        "max_seq_length": settings["max_seq_length"],
        "max_predictions_per_seq": settings["max_predictions_per_seq"],
        "dupe_factor": settings["dupe_factor"],
        # Half the demo's pretraining: six models are pretrained, two at a time.
        "pretrain_steps": settings["pretrain_steps"] // 2,
        "pretrain_batch": settings["pretrain_batch"],
        "pretrain_lr": settings["pretrain_lr"],
        "pretrain_model_overrides": settings["pretrain_model_overrides"],
        "heldout_eval_steps": 200,
        "embedding_sizes": [32, 64, 128],
        "finetune_steps": 200,
        "finetune_batch": settings["finetune_batch"],
        "finetune_lr": settings["finetune_lr"],
        "finetune_seq_length": settings["finetune_seq_length"],
        "tagging_train_sentences": 4000,
        "tagging_dev_sentences": 1000,
        "seeds": [1, 2, 3],
    }


PRESETS = {
    "full": _full(),
    # Checks the machinery (CI): every cell of the full study, on a tiny model and a few steps.
    "smoke": {
        "vocab_size": 1000,
        "model": {"vocab_size": 1000, "embedding_size": 32, "hidden_size": 32,
                  "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
                  "max_position_embeddings": 64},
        "train_shards": 1,
        "max_seq_length": 64,
        "max_predictions_per_seq": 10,
        "dupe_factor": 1,
        "pretrain_steps": 10,
        "pretrain_batch": 16,
        "pretrain_lr": 0.003,
        "pretrain_model_overrides": {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0},
        "heldout_eval_steps": 4,
        "embedding_sizes": [32, 128],
        "finetune_steps": 10,
        "finetune_batch": 16,
        "finetune_lr": 1e-4,
        "finetune_seq_length": 32,
        "tagging_train_sentences": 200,
        "tagging_dev_sentences": 100,
        "seeds": [1],
        "verdicts": False,  # its numbers mean nothing: the report prints no verdict
    },
}

HELDOUT_FORMS = ("sop", "nsp")
TASKS = ("sst2", "pos")
RANDOM_INIT = "random-init"
SETTINGS_FILE = "study_settings.json"


def define_flags(flag_values):
    """The study's flags, on `flag_values` (nothing is defined at import)."""
    define = cli.Definer(flag_values)
    define.string("data_dir", "data", "Where albert_tf.demo.data_sources puts the real data.")
    define.string("output_dir", "study_output", "Where every artefact of the study goes.")
    define.string("preset", "full", "full: the study (about an hour on 2 CPU cores); smoke: "
                  "the same cells on a tiny model, to check the machinery.")


def models(preset):
    """{name: {"config": model dict, "data": "sop"|"nsp", "sop_weight": float, "label"}}: the
    base model (all-shared, SOP, the preset's E) and one change of it per ablation."""
    base = dict(preset["model"])
    variants = {
        "base": ({}, "sop", 1.0, f"base: all-shared, SOP, E={base['embedding_size']}"),
        "nsp": ({}, "nsp", 1.0, "NSP (--random_next_sentence data)"),
        "mlm-only": ({}, "sop", 0.0, "MLM only (--sentence_order_loss_weight=0)"),
        "not-shared": ({"num_hidden_groups": base["num_hidden_layers"]}, "sop", 1.0,
                       "not-shared (num_hidden_groups = num_hidden_layers)"),
    }
    for size in preset["embedding_sizes"]:
        if size != base["embedding_size"]:
            variants[f"E{size}"] = ({"embedding_size": size}, "sop", 1.0, f"E={size}")
    return {name: {"config": {**base, **changes}, "data": data, "sop_weight": weight, "label": label}
            for name, (changes, data, weight, label) in variants.items()}


def plan(preset):
    """{cell name: kind} of every cell, in the order they run."""
    cells = {"data-vocab": "data-vocab", "data-finetune": "data-finetune"}
    for form in HELDOUT_FORMS:
        cells[f"data-{form}"] = "data-records"
    names = list(models(preset))
    for name in names:
        cells[f"pretrain-{name}"] = "pretrain"
    for name in names:
        for form in HELDOUT_FORMS:
            cells[f"heldout-{name}-{form}"] = "heldout"
    for task in TASKS:
        for name in names + [RANDOM_INIT]:
            for seed in preset["seeds"]:
                cells[f"finetune-{task}-{name}-seed{seed}"] = f"finetune-{task}"
    return cells


class Study:
    """One study run: its settings, output directory and the commands of its cells."""

    def __init__(self, data_dir, output_dir, preset_name):
        self.preset_name = preset_name
        self.preset = PRESETS[preset_name]
        self.output_dir = output_dir
        self.data_dir = data_dir
        self.python = sys.executable
        self.log_dir = os.path.join(output_dir, "logs")
        self.models = models(self.preset)
        self.store = study_cells.CellStore(output_dir, plan(self.preset), workers=2)
        self.env = None  # the children's environment while cells run side by side
        self.precision = "float32"

    def _run(self, name, command):
        return pipeline._run(name, [self.python] + command, self.log_dir, self.env, self.tag(name))

    def tag(self, name):
        return f"{name}: " if self.env is not None else ""

    def side_by_side(self, jobs):
        """{key: function()} run two at a time, each child on one thread (two small runs on
        one thread each outpace one run on two: albert_tf.demo.pipeline.ONE_THREAD); returns
        {key: result} in the order of `jobs`."""
        self.env = dict(os.environ, **pipeline.ONE_THREAD)
        try:
            with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
                futures = {key: pool.submit(job) for key, job in jobs.items()}
                return {key: future.result() for key, future in futures.items()}
        finally:
            self.env = None

    def _dir(self, name):
        return self.store.cell_dir(name)

    def check_settings(self):
        """Refuses an output directory that holds cells of other settings (mixing them would
        put numbers of two different studies into one table)."""
        path = os.path.join(self.output_dir, SETTINGS_FILE)
        wanted = {"preset": self.preset_name, "settings": self.preset}
        if os.path.exists(path):
            with open(path) as reader:
                found = json.load(reader)
            if found != json.loads(json.dumps(wanted)):
                raise errors.UserInputError(
                    f"{self.output_dir} holds a study with other settings ({path}: preset "
                    f"{found.get('preset')!r}); give another --output_dir or remove it")
        else:
            io_utils.atomic_write_text(path, json.dumps(wanted, indent=2) + "\n")

    # ---- shared inputs

    def build_data(self, paths):
        preset = self.preset
        brown = paths["brown"]
        reviews_text = os.path.join(self.output_dir, "corpus", "movie_reviews_train.txt")
        os.makedirs(os.path.dirname(reviews_text), exist_ok=True)
        movie_reviews.write_unlabelled_train_text(paths["movie_reviews"], reviews_text)
        # As the demo: Brown and, for task-adaptive pretraining, the unlabelled movie-review
        # training sentences; the last Brown shard is held out.
        train_text, heldout_text = brown[:preset["train_shards"]] + [reviews_text], brown[-1:]
        self.pairs = {}
        self.store.run("data-vocab", lambda d: {"elapsed": self._run("data-vocab", [
            "build_vocab.py", f"--input={','.join(train_text)}",
            f"--model_prefix={os.path.join(d, 'spm')}", f"--vocab_size={preset['vocab_size']}"])})
        self.spm_model = os.path.join(self._dir("data-vocab"), "spm.model")
        for form in HELDOUT_FORMS:
            self.pairs[form] = self.store.run(f"data-{form}", lambda d, form=form: self._records(
                form, d, {"train": train_text, "heldout": heldout_text}))["pairs"]
        self.store.run("data-finetune", lambda d: self._finetune_data(d, paths))

    def records(self, split, form):
        return os.path.join(self._dir(f"data-{form}"), f"{split}-*.tfrecord")

    def _records(self, form, directory, text_files):
        """The training and the held-out records of `form` (sop, or nsp with
        --random_next_sentence), one command each: the held-out text is a Brown shard not
        trained on (one command would mix the two files' instances)."""
        elapsed, pairs = 0.0, {}
        for split, files in text_files.items():
            outputs = [os.path.join(directory, f"{split}-{index}.tfrecord") for index in range(len(files))]
            command = [
                "create_pretraining_data.py", f"--input_file={','.join(files)}",
                f"--output_file={','.join(outputs)}", f"--spm_model_file={self.spm_model}",
                f"--max_seq_length={self.preset['max_seq_length']}",
                f"--max_predictions_per_seq={self.preset['max_predictions_per_seq']}",
                f"--dupe_factor={self.preset['dupe_factor'] if split == 'train' else 1}"]
            command += ["--random_next_sentence"] if form == "nsp" else []
            elapsed += self._run(f"data-{form}-{split}", command)
            pairs[split] = pair_composition(outputs[0] + SUMMARY_SUFFIX)
        return {"elapsed": elapsed, "text_files": text_files, "pairs": pairs}

    def _finetune_data(self, directory, paths):
        """SST-2 from the movie reviews, and the first sentences of Brown POS train and dev."""
        sst2_files = movie_reviews.write_sst2_task(paths["movie_reviews"], os.path.join(directory, "SST-2"))
        pos_dir = os.path.join(directory, "brown_pos")
        sentences = {}
        for split, limit in (("train", self.preset["tagging_train_sentences"]),
                             ("dev", self.preset["tagging_dev_sentences"])):
            with open(paths["brown_tagging"]["pos"][split]) as reader:
                blocks = reader.read().strip().split("\n\n")[:limit]
            io_utils.atomic_write_text(os.path.join(pos_dir, f"{split}.txt"), "\n\n".join(blocks) + "\n")
            sentences[split] = len(blocks)
        return {"sst2_files": sst2_files, "brown_pos_sentences": sentences}

    # ---- pretraining and held-out evaluation

    def config_path(self, name, pretraining=False):
        """The model's config; for pretraining with the preset's overrides (no dropout), which
        change no variable, so fine-tuning reads the same checkpoint with the default dropout."""
        path = os.path.join(self.output_dir, "configs", f"{name}{'-pretraining' if pretraining else ''}.json")
        config = self.models[name]["config"] if name != RANDOM_INIT else self.models["base"]["config"]
        if pretraining:
            config = dict(config, **self.preset["pretrain_model_overrides"])
        with io_utils.atomic_path(path) as temp:
            AlbertConfig.from_dict(config).to_json_file(temp)
        return path

    def _pretraining_flags(self):
        preset = self.preset
        return [f"--max_seq_length={preset['max_seq_length']}",
                f"--max_predictions_per_seq={preset['max_predictions_per_seq']}"]

    def pretrain(self, name):
        spec, preset = self.models[name], self.preset
        steps = preset["pretrain_steps"]

        def work(directory):
            elapsed = self._run(f"pretrain-{name}", [
                "run_pretraining.py", f"--albert_config_file={self.config_path(name, pretraining=True)}",
                f"--input_file={self.records('train', spec['data'])}", f"--output_dir={directory}",
                "--do_train", "--nodo_eval", *self._pretraining_flags(),
                f"--sentence_order_loss_weight={spec['sop_weight']}",
                f"--train_batch_size={preset['pretrain_batch']}",
                f"--learning_rate={preset['pretrain_lr']}", f"--num_train_steps={steps}",
                f"--num_warmup_steps={steps // 10}", f"--save_checkpoints_steps={steps}",
                f"--iterations_per_loop={max(1, steps // 20)}", f"--precision={self.precision}",
                "--seed=1"])
            log = os.path.join(self.log_dir, f"pretrain-{name}.log")
            return {"elapsed": elapsed, "parameters": count_parameters(directory),
                    "loss": pipeline._pretraining_loss(log)}
        return self.store.run(f"pretrain-{name}", work)

    def evaluate_heldout(self, name, form):
        """The final checkpoint, copied into the cell's own directory (evaluation without
        training evaluates the checkpoints of --output_dir and writes its results there),
        evaluated on the held-out pairs of `form`."""
        cell = f"heldout-{name}-{form}"
        pretrained = self._dir(f"pretrain-{name}")
        steps = self.preset["pretrain_steps"]

        def work(directory):
            source = checkpoints.latest_checkpoint(pretrained)
            destination = os.path.join(directory, os.path.basename(source))
            print(f"\n=== {cell}\n$ cp {source}.index {source}.data-00000-of-00001 {directory}/",
                  flush=True)
            checkpoints.copy_checkpoint(source, destination)
            records = self.records("heldout", form)
            elapsed = self._run(cell, [
                "run_pretraining.py", f"--albert_config_file={self.config_path(name)}",
                f"--input_file={records}", f"--eval_input_file={records}",
                f"--output_dir={directory}", "--nodo_train", "--do_eval",
                *self._pretraining_flags(), f"--num_train_steps={steps}", "--eval_batch_size=64",
                f"--max_eval_steps={self.preset['heldout_eval_steps']}"])
            results = pipeline._read_eval_results(os.path.join(directory, "eval_results.txt"))
            return {"elapsed": elapsed, "results": {key: float(value) for key, value in results.items()}}
        return self.store.run(cell, work)

    # ---- fine-tuning

    def finetune(self, task, name, seed):
        cell = f"finetune-{task}-{name}-seed{seed}"
        preset, data = self.preset, self._dir("data-finetune")
        steps = preset["finetune_steps"]

        def work(directory):
            init = (["--allow_random_init"] if name == RANDOM_INIT
                    else [f"--init_checkpoint={self._dir(f'pretrain-{name}')}"])
            if task == "sst2":
                head = ["run_classifier.py", "--task_name=sst-2", f"--data_dir={data}",
                        f"--cached_dir={os.path.join(self.output_dir, 'glue_cache')}"]
            else:
                head = ["run_tagging.py", f"--data_dir={os.path.join(data, 'brown_pos')}"]
            elapsed = self._run(cell, head + init + [
                f"--albert_config_file={self.config_path(name)}", f"--spm_model_file={self.spm_model}",
                f"--output_dir={directory}", "--do_train", "--do_eval", f"--seed={seed}",
                f"--max_seq_length={preset['finetune_seq_length']}",
                f"--train_batch_size={preset['finetune_batch']}", "--eval_batch_size=64",
                f"--learning_rate={preset['finetune_lr']}", f"--train_step={steps}",
                f"--warmup_step={steps // 10}", f"--save_checkpoints_steps={steps}",
                f"--iterations_per_loop={max(1, steps // 10)}"])
            results = pipeline._read_eval_results(os.path.join(directory, "eval_results.txt"))
            if "eval_accuracy" not in results:
                raise RuntimeError(f"{cell}: no eval_accuracy in {directory}/eval_results.txt")
            return {"elapsed": elapsed, "accuracy": float(results["eval_accuracy"])}
        return self.store.run(cell, work)

    # ---- the whole study

    def run(self):
        start = time.time()
        os.makedirs(self.log_dir, exist_ok=True)
        self.check_settings()
        paths = {"brown": data_sources.fetch_brown(self.data_dir),
                 "movie_reviews": data_sources.fetch_movie_reviews(self.data_dir),
                 "brown_tagging": data_sources.fetch_brown_tagging(self.data_dir)}
        self.build_data(paths)
        self.precision, _ = precision_choice.fastest_precision(
            self.preset["pretrain_batch"] * self.preset["max_seq_length"],
            self.preset["model"]["hidden_size"], self.preset["model"]["intermediate_size"])
        pretrained = self.side_by_side({name: lambda name=name: self.pretrain(name)
                                        for name in self.models})
        heldout = self.side_by_side({(name, form): lambda name=name, form=form: self.evaluate_heldout(
            name, form)["results"] for name in self.models for form in HELDOUT_FORMS})
        heldout = {name: {form: heldout[name, form] for form in HELDOUT_FORMS} for name in self.models}
        seeds = self.preset["seeds"]
        finetuned = self.side_by_side({
            (task, name, seed): lambda task=task, name=name, seed=seed: self.finetune(
                task, name, seed)["accuracy"]
            for task in TASKS for name in [*self.models, RANDOM_INIT] for seed in seeds})
        finetuned = {task: {name: [finetuned[task, name, seed] for seed in seeds]
                            for name in [*self.models, RANDOM_INIT]} for task in TASKS}
        measurements = {
            "preset": self.preset_name, "settings": self.preset,
            "models": {name: {"label": spec["label"], "config": spec["config"],
                              "parameters": pretrained[name]["parameters"],
                              "pretraining_loss": pretrained[name]["loss"],
                              "heldout": heldout[name]} for name, spec in self.models.items()},
            "random_init_parameters": pretrained["base"]["parameters"],
            "pairs": self.pairs,
            "finetuning": finetuned,
            "seconds": {"this_run_wall": round(time.time() - start),
                        "all_cells": round(self.store.total_seconds()),
                        "cells": {name: round(s, 1) for name, s in self.store.seconds.items()}},
            "cells_run_now": self.store.started,
        }
        return study_report.write(measurements, self.output_dir)


def pair_composition(summary_path):
    """What create_pretraining_data.py's summary says of its sentence pairs: the fraction
    labelled 1 (not in order) and how many were swapped, from another document, in order. The
    original takes the second segment from another document when a chunk holds one segment,
    SOP data included, so "SOP pairs" hold some of those, and the labels are not 50/50."""
    with open(summary_path) as reader:
        order = json.load(reader)["sentence_order"]
    return {key: order[key] for key in ("label_1_fraction", "swapped", "random_document", "in_order")}


def count_parameters(directory):
    """The encoder's parameters (`bert/...`: embeddings and transformer, as the paper counts)
    in the newest checkpoint of `directory`; the optimizer's slots and the heads are left out."""
    shapes = checkpoints.list_variables(checkpoints.latest_checkpoint(directory))
    total = 0
    for name, shape in shapes.items():
        if name.startswith("bert/") and not name.endswith(("/adam_m", "/adam_v")):
            size = 1
            for dimension in shape:
                size *= dimension
            total += size
    return total


def run(flag_values):
    logging.set_verbosity(logging.WARNING)
    if flag_values.preset not in PRESETS:
        raise errors.UserInputError(f"--preset={flag_values.preset}: expected one of "
                                    f"{', '.join(sorted(PRESETS))}")
    study = Study(flag_values.data_dir, flag_values.output_dir, flag_values.preset)
    report = study.run()
    print(f"\n{report['markdown']}\nwritten: {report['paths']}")


if __name__ == "__main__":
    cli.run_script(define_flags, run)
