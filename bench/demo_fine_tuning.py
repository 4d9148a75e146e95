"""The flags of one of `make demo`'s fine-tuning runs (pretrained, seed 1, SST-2 from the movie
reviews) over a finished demo output directory: what the fine-tuning benchmarks run."""


import sys


def classifier_flags(demo, output_dir, train_step):
    """run_classifier.py's flags: the demo's, with `train_step` steps and one evaluation."""
    return ["--task_name=sst-2", f"--data_dir={demo}/glue",
            f"--albert_config_file={demo}/albert_config.json",
            f"--spm_model_file={demo}/vocab/spm.model", f"--output_dir={output_dir}",
            f"--cached_dir={demo}/glue_cache", "--do_train", "--do_eval", "--seed=1",
            "--max_seq_length=64", "--train_batch_size=32", "--eval_batch_size=64",
            "--learning_rate=1e-4", f"--train_step={train_step}", "--warmup_step=50",
            f"--save_checkpoints_steps={train_step}", "--iterations_per_loop=50",
            "--precision=mixed_bfloat16", f"--init_checkpoint={demo}/pretraining"]


def classifier_command(demo, output_dir, train_step):
    """The same run as a fresh `run_classifier` process of this Python."""
    return [sys.executable, "-m", "albert_tf.scripts.run_classifier",
            *classifier_flags(demo, output_dir, train_step)]
