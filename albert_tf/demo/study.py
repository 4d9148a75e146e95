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
from albert_tf.demo import (baselines, data_sources, efficiency, precision_choice, recipe, steps,
                            study_cells, study_report, tries)
from albert_tf.files import io_utils
from albert_tf.glue import movie_reviews
from albert_tf.pretraining.outputs import SUMMARY_SUFFIX


def _full():
    settings = recipe.demo_settings(False)
    return {
        "vocab_size": settings["vocab_size"],
        "model": settings["model"],
        # Brown shards 0-7 (8 and 9 hold the tagging dev and test documents; 9 is the held-out
        # pretraining evaluation)
        "train_shards": len(data_sources.shards_without_tagging_eval(range(settings["brown_shards"]))),
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
        # Tagging's own hyperparameters: each arm's learning rate is chosen on the last
        # `selection_sentences` of the tagging training sentences (trained on the rest).
        "tagging": {"learning_rates": [3e-4, 1e-3, 3e-3], "steps": 800, "selection_sentences": 500},
        # Sentiment at 500 sentences and all of them, pretrained (base) against random init on
        # paired subsets; each arm's learning rate chosen on a slice of the training set.
        "efficiency": {"sizes": [500, None], "seeds": [1, 2, 3, 4, 5],
                       "learning_rates": [3e-5, 1e-4, 3e-4], "selection_sentences": 1000,
                       "steps": 200},
        "seeds": [1, 2, 3],
        "verdicts": True,
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
        "tagging": {"learning_rates": [1e-3], "steps": 10, "selection_sentences": 50},
        "efficiency": {"sizes": [50], "seeds": [1, 2], "learning_rates": [1e-4],
                       "selection_sentences": 100, "steps": 10},
        "seeds": [1],
        "verdicts": False,  # its numbers mean nothing: the report prints no verdict
    },
}

HELDOUT_FORMS = ("sop", "nsp")
TASKS = ("sst2", "pos")
RANDOM_INIT = "random-init"
ARMS = ("base", RANDOM_INIT)  # the two arms whose hyperparameters are chosen on a training slice
SETTINGS_FILE = "study_settings.json"

def size_name(size):
    return "all" if size is None else str(size)


def lr_name(learning_rate):
    return f"lr{learning_rate:g}"


def define_flags(flag_values):
    """The study's flags, on `flag_values` (nothing is defined at import)."""
    define = cli.Definer(flag_values)
    define.string("data_dir", "data", "Where albert_tf.demo.data_sources puts the real data.")
    define.string("output_dir", "study_output", "Where every artefact of the study goes.")
    define.string("preset", "full", "full: the study (its measured time is in "
                  "docs/paper_study.md); smoke: the same cells on a tiny model, to check the "
                  "machinery.")
    define.bool("tries", False, "Also run the pre-registered tries at making pretraining pay "
                "(tries.TRIES: 2 more pretrainings and 20 fine-tuning runs; `make paper` runs "
                "them).")
    define.string("note", None, "A note for study.json: how the cells were actually run (other "
                  "jobs beside them, several invocations) when not by this one command, alone.")


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


def random_init_arms(preset):
    """The random-init arms: one per architecture of the study (the base one, then one for
    each model whose config differs from the base's, named random-init-<model>), so that
    "pretraining beats random init" compares like with like."""
    found = models(preset)
    return [RANDOM_INIT] + [f"{RANDOM_INIT}-{name}" for name, spec in found.items()
                            if spec["config"] != found["base"]["config"]]


def plan(preset, with_tries=False):
    """{cell name: kind} of every cell, in the order they run (`with_tries`: with the cells of
    the pre-registered tries)."""
    cells = {"data-vocab": "data-vocab", "data-finetune": "data-finetune"}
    for form in HELDOUT_FORMS:
        cells[f"data-{form}"] = "data-records"
    if with_tries:
        cells["data-tapt"] = cells["data-mlm40"] = "data-records"
    names = list(models(preset)) + ([name for name, spec in tries.TRIES.items() if spec["pretrain"]]
                                    if with_tries else [])
    for name in names:
        cells[f"pretrain-{name}"] = "pretrain"
    for name in models(preset):
        for form in HELDOUT_FORMS:
            cells[f"heldout-{name}-{form}"] = "heldout"
    for arm in ARMS:
        for learning_rate in preset["tagging"]["learning_rates"]:
            cells[f"select-pos-{arm}-{lr_name(learning_rate)}"] = "select-pos"
    efficiency = preset["efficiency"]
    for size in efficiency["sizes"]:
        for arm in ARMS:
            for learning_rate in efficiency["learning_rates"]:
                cells[f"select-sst2-n{size_name(size)}-{arm}-{lr_name(learning_rate)}"] = "select-sst2"
    for task in TASKS:
        for name in [*models(preset), *random_init_arms(preset)]:
            for seed in preset["seeds"]:
                cells[f"finetune-{task}-{name}-seed{seed}"] = f"finetune-{task}"
    for size in efficiency["sizes"]:
        for arm in ARMS + (tuple(tries.TRIES) if with_tries and size == efficiency["sizes"][0] else ()):
            for seed in efficiency["seeds"]:
                cells[f"efficiency-n{size_name(size)}-{arm}-seed{seed}"] = f"efficiency-n{size_name(size)}"
    return cells


def work_by_kind(preset):
    """{cell kind: tokens one cell of it processes}, for the ETA before a kind has run: a
    training step's tokens count once, an evaluation's a third (forward only, of forward and
    backward's three products); the data steps are left out (next to no work)."""
    sentences = preset["finetune_batch"] * preset["finetune_seq_length"]
    efficiency_steps = preset["efficiency"]["steps"]
    return {"pretrain": preset["pretrain_steps"] * preset["pretrain_batch"] * preset["max_seq_length"],
            "heldout": preset["heldout_eval_steps"] * 64 * preset["max_seq_length"] / 3,
            "select-pos": preset["tagging"]["steps"] * sentences,
            "finetune-pos": preset["tagging"]["steps"] * sentences,
            "select-sst2": efficiency_steps * sentences,
            "finetune-sst2": preset["finetune_steps"] * sentences,
            **{f"efficiency-n{size_name(size)}": efficiency_steps * sentences
               for size in preset["efficiency"]["sizes"]}}


class Study:
    """One study run: its settings, output directory and the commands of its cells."""

    def __init__(self, data_dir, output_dir, preset_name, with_tries=False, note=None):
        self.preset_name = preset_name
        self.note = note
        self.preset = PRESETS[preset_name]
        self.tries = with_tries
        self.output_dir = output_dir
        self.data_dir = data_dir
        self.python = sys.executable
        self.log_dir = os.path.join(output_dir, "logs")
        self.models = models(self.preset)
        self.store = study_cells.CellStore(output_dir, plan(self.preset, with_tries), workers=2,
                                           work_by_kind=work_by_kind(self.preset))
        self.env = None  # the children's environment while cells run side by side
        self.precision = "float32"

    def _run(self, name, command):
        return steps.run_step(name, [self.python] + command, self.log_dir, self.env, self.tag(name))

    def tag(self, name):
        return f"{name}: " if self.env is not None else ""

    def side_by_side(self, jobs):
        """{key: function()} run two at a time, each child on one thread (two small runs on
        one thread each outpace one run on two: albert_tf.demo.steps.ONE_THREAD); returns
        {key: result} in the order of `jobs`."""
        self.env = dict(os.environ, **steps.ONE_THREAD)
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
        # training sentences. The shards holding the tagging dev and test documents are never
        # trained on (what the tagging evaluates stays held out); the last, the tagging test
        # documents, is the held-out pretraining evaluation.
        train_shards = data_sources.shards_without_tagging_eval(brown)[:preset["train_shards"]]
        train_text, heldout_text = train_shards + [reviews_text], brown[-1:]
        self.pairs = {}
        self.store.run("data-vocab", lambda d: {"elapsed": self._run("data-vocab", [
            "build_vocab.py", f"--input={','.join(train_text)}",
            f"--model_prefix={os.path.join(d, 'spm')}", f"--vocab_size={preset['vocab_size']}"])})
        self.spm_model = os.path.join(self._dir("data-vocab"), "spm.model")
        for form in HELDOUT_FORMS:
            self.pairs[form] = self.store.run(f"data-{form}", lambda d, form=form: self._records(
                form, d, {"train": train_text, "heldout": heldout_text}))["pairs"]
        if self.tries:
            self.store.run("data-tapt", lambda d: self._records(
                "tapt", d, {"train": [reviews_text]},
                ["--dupe_factor=" + str(preset["dupe_factor"] * tries.TAPT_OVERSAMPLING)]))
            self.store.run("data-mlm40", lambda d: self._records(
                "mlm40", d, {"train": train_text},
                [f"--{flag}={value}" for flag, value in tries.MLM40.items()]))
        self.finetune_data = self.store.run("data-finetune", lambda d: self._finetune_data(d, paths))

    def records(self, split, form):
        return os.path.join(self._dir(f"data-{form}"), f"{split}-*.tfrecord")

    def _records(self, form, directory, text_files, extra=()):
        """The training and the held-out records of `form` (sop, or nsp with
        --random_next_sentence), one command each: the held-out text is a Brown shard not
        trained on (one command would mix the two files' instances). `extra` flags replace
        the preset's."""
        elapsed, pairs = 0.0, {}
        for split, files in text_files.items():
            outputs = [os.path.join(directory, f"{split}-{index}.tfrecord") for index in range(len(files))]
            flags = {"max_seq_length": self.preset["max_seq_length"],
                     "max_predictions_per_seq": self.preset["max_predictions_per_seq"],
                     "dupe_factor": self.preset["dupe_factor"] if split == "train" else 1}
            flags.update(flag[2:].split("=", 1) for flag in extra)
            command = [
                "create_pretraining_data.py", f"--input_file={','.join(files)}",
                f"--output_file={','.join(outputs)}", f"--spm_model_file={self.spm_model}",
                *[f"--{flag}={value}" for flag, value in flags.items()]]
            command += ["--random_next_sentence"] if form == "nsp" else []
            elapsed += self._run(f"data-{form}-{split}", command)
            pairs[split] = pair_composition(outputs[0] + SUMMARY_SUFFIX)
        return {"elapsed": elapsed, "text_files": text_files, "pairs": pairs}

    def _finetune_data(self, directory, paths):
        """SST-2 from the movie reviews, its paired training subsets and selection slices;
        the first sentences of Brown POS train and dev, the tagging selection split (the last
        sentences of train held out of it), and the baselines a model must beat."""
        sst2_dir = os.path.join(directory, "SST-2")
        sst2_files = movie_reviews.write_sst2_task(paths["movie_reviews"], sst2_dir)
        efficiency_settings = self.preset["efficiency"]
        for size in efficiency_settings["sizes"]:
            efficiency.write_subset(sst2_dir, os.path.join(directory, f"sst2-select-n{size_name(size)}", "SST-2"),
                                    size, 0, dev_rows=efficiency_settings["selection_sentences"])
            for seed in efficiency_settings["seeds"]:
                efficiency.write_subset(sst2_dir, os.path.join(
                    directory, f"sst2-n{size_name(size)}-seed{seed}", "SST-2"), size, seed)
        sentences = {}
        blocks = {}
        for split, limit in (("train", self.preset["tagging_train_sentences"]),
                             ("dev", self.preset["tagging_dev_sentences"])):
            with open(paths["brown_tagging"]["pos"][split]) as reader:
                blocks[split] = reader.read().strip().split("\n\n")[:limit]
            sentences[split] = len(blocks[split])
        held = self.preset["tagging"]["selection_sentences"]
        for name, split_blocks in (("brown_pos", blocks),
                                   ("brown_pos_select", {"train": blocks["train"][:-held],
                                                         "dev": blocks["train"][-held:]})):
            for split, texts in split_blocks.items():
                io_utils.atomic_write_text(os.path.join(directory, name, f"{split}.txt"),
                                           "\n\n".join(texts) + "\n")
        pos_dir = os.path.join(directory, "brown_pos")
        return {"sst2_files": sst2_files, "brown_pos_sentences": sentences,
                "baselines": {
                    "sst2": {"majority_label": baselines.majority_label_rate(sst2_files["dev"])},
                    "pos": baselines.tagging_baselines(os.path.join(pos_dir, "train.txt"),
                                                       os.path.join(pos_dir, "dev.txt"))}}

    # ---- pretraining and held-out evaluation

    def config_path(self, name, pretraining=False):
        """The model's config; for pretraining with the preset's overrides (no dropout), which
        change no variable, so fine-tuning reads the same checkpoint with the default dropout."""
        path = os.path.join(self.output_dir, "configs", f"{name}{'-pretraining' if pretraining else ''}.json")
        architecture = name[len(RANDOM_INIT) + 1:] if name.startswith(f"{RANDOM_INIT}-") else name
        config = self.models[architecture]["config"] if architecture in self.models else self.models["base"]["config"]
        if pretraining:
            config = dict(config, **self.preset["pretrain_model_overrides"])
        with io_utils.atomic_path(path) as temp:
            AlbertConfig.from_dict(config).to_json_file(temp)
        return path

    def _pretraining_flags(self, max_predictions=None):
        preset = self.preset
        return [f"--max_seq_length={preset['max_seq_length']}",
                f"--max_predictions_per_seq={max_predictions or preset['max_predictions_per_seq']}"]

    def _pretraining_input(self, name):
        """(input files, --max_predictions_per_seq, --sentence_order_loss_weight) of a model
        or a pretraining try."""
        if name == "tapt":
            return f"{self.records('train', 'sop')},{self.records('train', 'tapt')}", None, 1.0
        if name == "mlm40":
            return self.records("train", "mlm40"), tries.MLM40["max_predictions_per_seq"], 0.0
        spec = self.models[name]
        return self.records("train", spec["data"]), None, spec["sop_weight"]

    def pretrain(self, name):
        preset = self.preset
        pretrain_steps = preset["pretrain_steps"]
        input_files, max_predictions, sop_weight = self._pretraining_input(name)

        def work(directory):
            elapsed = self._run(f"pretrain-{name}", [
                "run_pretraining.py", f"--albert_config_file={self.config_path(name, pretraining=True)}",
                f"--input_file={input_files}", f"--output_dir={directory}",
                "--do_train", "--nodo_eval", *self._pretraining_flags(max_predictions),
                f"--sentence_order_loss_weight={sop_weight}",
                f"--train_batch_size={preset['pretrain_batch']}",
                f"--learning_rate={preset['pretrain_lr']}", f"--num_train_steps={pretrain_steps}",
                f"--num_warmup_steps={pretrain_steps // 10}", f"--save_checkpoints_steps={pretrain_steps}",
                f"--iterations_per_loop={max(1, pretrain_steps // 20)}", f"--precision={self.precision}",
                "--seed=1"])
            log = os.path.join(self.log_dir, f"pretrain-{name}.log")
            return {"elapsed": elapsed, "parameters": count_parameters(directory),
                    "loss": steps.pretraining_loss(log)}
        return self.store.run(f"pretrain-{name}", work)

    def evaluate_heldout(self, name, form):
        """The final checkpoint, copied into the cell's own directory (evaluation without
        training evaluates the checkpoints of --output_dir and writes its results there),
        evaluated on the held-out pairs of `form`."""
        cell = f"heldout-{name}-{form}"
        pretrained = self._dir(f"pretrain-{name}")
        pretrain_steps = self.preset["pretrain_steps"]

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
                *self._pretraining_flags(), f"--num_train_steps={pretrain_steps}", "--eval_batch_size=64",
                f"--max_eval_steps={self.preset['heldout_eval_steps']}"])
            results = steps.read_eval_results(os.path.join(directory, "eval_results.txt"))
            return {"elapsed": elapsed, "results": {key: float(value) for key, value in results.items()}}
        return self.store.run(cell, work)

    # ---- fine-tuning

    def finetune(self, cell, task, name, seed, data, learning_rate, train_steps, extra_flags=()):
        """One fine-tuning run of `task` from model `name` (RANDOM_INIT: random weights) on
        `data` (a directory holding SST-2/, or run_tagging.py's train.txt and dev.txt), with
        `extra_flags` for the script; its dev accuracy. `name` random-init-<model>: random
        weights of that model's architecture."""
        preset = self.preset

        def work(directory):
            init = (["--allow_random_init"] if name.startswith(RANDOM_INIT)
                    else [f"--init_checkpoint={self._dir(f'pretrain-{name}')}"])
            if task == "sst2":
                head = ["run_classifier.py", "--task_name=sst-2", f"--data_dir={data}",
                        f"--cached_dir={os.path.join(self.output_dir, 'glue_cache')}"]
            else:
                head = ["run_tagging.py", f"--data_dir={data}"]
            elapsed = self._run(cell, head + init + [
                f"--albert_config_file={self.config_path(name)}", f"--spm_model_file={self.spm_model}",
                f"--output_dir={directory}", "--do_train", "--do_eval", f"--seed={seed}",
                f"--max_seq_length={preset['finetune_seq_length']}",
                f"--train_batch_size={preset['finetune_batch']}", "--eval_batch_size=64",
                f"--learning_rate={learning_rate}", f"--train_step={train_steps}",
                f"--warmup_step={train_steps // 10}", f"--save_checkpoints_steps={train_steps}",
                f"--iterations_per_loop={max(1, train_steps // 10)}", *extra_flags])
            results = steps.read_eval_results(os.path.join(directory, "eval_results.txt"))
            if "eval_accuracy" not in results:
                raise RuntimeError(f"{cell}: no eval_accuracy in {directory}/eval_results.txt")
            return {"elapsed": elapsed, "accuracy": float(results["eval_accuracy"])}
        return self.store.run(cell, work)["accuracy"]

    def select(self, task, size=None):
        """{arm: {"scores": {learning rate: accuracy}, "chosen": learning rate}}: each arm of
        ARMS trained on the training set without its selection slice and scored on that slice
        (seed 1); dev is never looked at."""
        data = self._dir("data-finetune")
        if task == "pos":
            settings, prefix = self.preset["tagging"], "select-pos"
            directory, train_steps = os.path.join(data, "brown_pos_select"), settings["steps"]
        else:
            settings, prefix = self.preset["efficiency"], f"select-sst2-n{size_name(size)}"
            directory, train_steps = os.path.join(data, f"sst2-select-n{size_name(size)}"), settings["steps"]
        jobs = {(arm, learning_rate): lambda arm=arm, learning_rate=learning_rate: self.finetune(
            f"{prefix}-{arm}-{lr_name(learning_rate)}", task, arm, 1, directory, learning_rate, train_steps)
            for arm in ARMS for learning_rate in settings["learning_rates"]}
        scores = self.side_by_side(jobs)
        result = {}
        for arm in ARMS:
            by_rate = {learning_rate: scores[arm, learning_rate] for learning_rate in settings["learning_rates"]}
            result[arm] = {"scores": {f"{rate:g}": score for rate, score in by_rate.items()},
                           "chosen": max(by_rate, key=by_rate.get)}
        return result

    def run_efficiency(self, chosen):
        """The data-efficiency grid (and, with --tries, the tries' arms at the smallest size):
        {size name: {arm: [accuracy per seed]}}."""
        settings, data = self.preset["efficiency"], self._dir("data-finetune")
        arms = {}
        for size in settings["sizes"]:
            for arm in ARMS:
                arms[size, arm] = (arm, chosen[size][arm]["chosen"], settings["steps"], ())
            if self.tries and size == settings["sizes"][0]:
                base_rate = chosen[size]["base"]["chosen"]
                for name, spec in tries.TRIES.items():
                    arms[size, name] = (name if spec["pretrain"] else "base", base_rate,
                                        int(settings["steps"] * spec.get("steps_fraction", 1.0)),
                                        tuple(spec.get("fine_tuning_flags", ())))
        jobs = {(size, arm, seed): lambda size=size, arm=arm, seed=seed: self.finetune(
            f"efficiency-n{size_name(size)}-{arm}-seed{seed}", "sst2", arms[size, arm][0], seed,
            os.path.join(data, f"sst2-n{size_name(size)}-seed{seed}"), *arms[size, arm][1:])
            for (size, arm) in arms for seed in settings["seeds"]}
        scores = self.side_by_side(jobs)
        grid = {}
        for (size, arm) in arms:
            grid.setdefault(size_name(size), {})[arm] = [scores[size, arm, seed] for seed in settings["seeds"]]
        return grid

    # ---- the whole study

    def run(self):
        start = time.time()
        self.load_average = os.getloadavg()[0]
        os.makedirs(self.log_dir, exist_ok=True)
        self.check_settings()
        paths = {"brown": data_sources.fetch_brown(self.data_dir),
                 "movie_reviews": data_sources.fetch_movie_reviews(self.data_dir),
                 "brown_tagging": data_sources.fetch_brown_tagging(self.data_dir)}
        self.build_data(paths)
        self.precision, _ = precision_choice.fastest_precision(
            self.preset["pretrain_batch"] * self.preset["max_seq_length"],
            self.preset["model"]["hidden_size"], self.preset["model"]["intermediate_size"])
        names = [name for name, kind in self.store.planned.items() if kind == "pretrain"]
        pretrained = self.side_by_side({name[len("pretrain-"):]: lambda name=name: self.pretrain(
            name[len("pretrain-"):]) for name in names})
        heldout = self.side_by_side({(name, form): lambda name=name, form=form: self.evaluate_heldout(
            name, form)["results"] for name in self.models for form in HELDOUT_FORMS})
        heldout = {name: {form: heldout[name, form] for form in HELDOUT_FORMS} for name in self.models}
        selection = {"pos": self.select("pos")}
        for size in self.preset["efficiency"]["sizes"]:
            selection[f"sst2-n{size_name(size)}"] = self.select("sst2", size)
        seeds, data = self.preset["seeds"], self._dir("data-finetune")
        tagging = self.preset["tagging"]

        arms = [*self.models, *random_init_arms(self.preset)]

        def main_run(task, name, seed):
            arm = RANDOM_INIT if name.startswith(RANDOM_INIT) else "base"
            if task == "pos":
                return self.finetune(f"finetune-pos-{name}-seed{seed}", "pos", name, seed,
                                     os.path.join(data, "brown_pos"), selection["pos"][arm]["chosen"],
                                     tagging["steps"])
            return self.finetune(f"finetune-sst2-{name}-seed{seed}", "sst2", name, seed, data,
                                 self.preset["finetune_lr"], self.preset["finetune_steps"])
        finetuned = self.side_by_side({
            (task, name, seed): lambda task=task, name=name, seed=seed: main_run(task, name, seed)
            for task in TASKS for name in arms for seed in seeds})
        finetuned = {task: {name: [finetuned[task, name, seed] for seed in seeds] for name in arms}
                     for task in TASKS}
        grid = self.run_efficiency({size: selection[f"sst2-n{size_name(size)}"]
                                    for size in self.preset["efficiency"]["sizes"]})
        measurements = {
            # --note is stored beside the command, not in it: it changes no cell
            "command": " ".join(["python -m albert_tf.demo.study",
                                 *(arg for arg in sys.argv[1:] if not arg.startswith("--note"))]),
            "date": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime(start)),
            "load_average_at_start": round(self.load_average, 2),
            "note": self.note,
            "preset": self.preset_name, "settings": self.preset,
            "models": {name: {"label": spec["label"], "config": spec["config"],
                              "parameters": pretrained[name]["parameters"],
                              "pretraining_loss": pretrained[name]["loss"],
                              "heldout": heldout[name]} for name, spec in self.models.items()},
            "random_init_parameters": pretrained["base"]["parameters"],
            "pairs": self.pairs,
            "baselines": self.finetune_data["baselines"],
            "selection": selection,
            "finetuning": finetuned,
            "efficiency": grid,
            "tries": sorted(tries.TRIES) if self.tries else None,
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
    study = Study(flag_values.data_dir, flag_values.output_dir, flag_values.preset, flag_values.tries,
                  flag_values.note)
    report = study.run()
    print(f"\n{report['markdown']}\nwritten: {report['paths']}")


if __name__ == "__main__":
    cli.run_script(define_flags, run)
