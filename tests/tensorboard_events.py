"""The scalars of a run's event files, read with TensorBoard's own reader."""

from tensorboard.backend.event_processing import event_accumulator


def read_scalars(directory):
    """{tag: [(step, value)]} of the event files directly in `directory`."""
    events = event_accumulator.EventAccumulator(str(directory), size_guidance={"scalars": 0})
    events.Reload()
    return {tag: [(event.step, event.value) for event in events.Scalars(tag)]
            for tag in events.Tags()["scalars"]}
