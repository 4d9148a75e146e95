"""A PNG of a run's training and evaluation curves, for a user without TensorBoard.

Reads the event files the training loop writes (`<output_dir>` for training, `<output_dir>/eval`
for evaluation) with TensorBoard's own reader and draws each metric's two curves on one panel.
"""

import os

from tensorboard.backend.event_processing import plugin_event_accumulator
from tensorboard.util import tensor_util

from albert_tf.files import io_utils


def read_scalars(directory):
    """{tag: ([steps], [values])} of the scalar summaries in the event files directly in
    `directory` ({} if none). The loop writes TF2 summaries (tensors with the scalars plugin's
    metadata), which TensorBoard's plugin-aware reader returns as tensors."""
    if not os.path.isdir(directory):
        return {}
    events = plugin_event_accumulator.EventAccumulator(directory, size_guidance={"tensors": 0})
    events.Reload()
    curves = {}
    for tag in events.PluginTagToContent("scalars"):
        points = events.Tensors(tag)
        curves[tag] = ([point.step for point in points],
                       [float(tensor_util.make_ndarray(point.tensor_proto)) for point in points])
    return curves


def plot_runs(panels, path):
    """`panels`: [(title, runs, [tags])], `runs` a run directory or [(label, run directory)]
    drawn on the same axes (the demo's pretrained and random-init fine-tuning); writes one PNG
    (atomically) with a panel each, training as a line and evaluation as points. Returns `path`."""
    import matplotlib
    matplotlib.use("Agg")  # no display needed
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.6),
                                   squeeze=False)
    for axis, (title, runs, tags) in zip(axes[0], panels):
        for label, run_dir in ([("", runs)] if isinstance(runs, str) else runs):
            prefix = f"{label} " if label else ""
            train, evaluation = read_scalars(run_dir), read_scalars(os.path.join(run_dir, "eval"))
            for tag in tags:
                if tag in train:
                    axis.plot(*train[tag], label=f"{prefix}train {tag}")
                if tag in evaluation:
                    axis.plot(*evaluation[tag], "o--", label=f"{prefix}eval {tag}")
        axis.set_title(title)
        axis.set_xlabel("step")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    figure.tight_layout()
    with io_utils.atomic_path(path) as temp:
        figure.savefig(temp, format="png", dpi=100)
    pyplot.close(figure)
    return path
