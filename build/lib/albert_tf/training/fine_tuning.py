"""Steps every fine-tuning job shares, whatever its task."""

from albert_tf import checkpoints, cli


def check_init_checkpoint(init_checkpoint, allow_random_init, do_train, output_dir,
                          error_class=cli.UserInputError):
    """Training must start from a checkpoint unless --allow_random_init says otherwise (or a
    checkpoint in `output_dir` resumes the run); a given --init_checkpoint must exist."""
    if init_checkpoint:
        checkpoints.resolve_checkpoint(init_checkpoint)  # fails now, naming the path
        return
    if do_train and not allow_random_init and checkpoints.latest_checkpoint(output_dir) is None:
        raise error_class(
            "--do_train without --init_checkpoint would fine-tune a randomly initialised "
            "model (a silent cause of failed reproductions). Pass --init_checkpoint (a "
            "checkpoint prefix or a directory) or, if you mean it, --allow_random_init")
