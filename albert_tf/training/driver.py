"""Train, then evaluate checkpoints by the loop's streaming metrics: run_pretraining.py's flow
(the fine-tuning scripts share `fine_tuning.train_evaluate_predict` instead).

    driver.train_and_evaluate(task, strategy, config, do_train=True, do_eval=True,
                              eval_batch_size=64, max_eval_steps=100)

With do_train the loop trains to `config.num_train_steps` (resuming from output_dir). With
do_eval the evaluate-every-checkpoint loop evaluates the checkpoints in output_dir until the one
at num_train_steps is done (at once, after training in the same run; otherwise alongside a
separate training job), writing eval_results.txt, best_trial.txt, model.ckpt-best and TensorBoard
scalars under output_dir/eval.
"""

from albert_tf.training import evaluation, loop


def train_and_evaluate(task, strategy, config, *, do_train, do_eval, eval_batch_size=8,
                       max_eval_steps=None, only_latest=False, eval_timeout_secs=7200.0,
                       poll_seconds=5.0):
    """A `loop.Trainer` of `task` run through `evaluation.train_and_evaluate`, each checkpoint
    scored by the loop's streaming metrics; returns `(trainer, evaluation summary or None)`."""
    trainer = loop.Trainer(task, strategy, config)

    def evaluate(checkpoint_path):
        trainer.checkpoints.restore_model(checkpoint_path)
        results = trainer.evaluate(eval_batch_size, max_steps=max_eval_steps)
        trainer.write_eval_summaries(results)
        return results

    summary = evaluation.train_and_evaluate(
        trainer, evaluate, do_train, do_eval, config.num_train_steps, eval_timeout_secs,
        poll_seconds, only_latest=only_latest)
    return trainer, summary
