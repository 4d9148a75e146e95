"""The kernels of a `tf.profiler` trace, read back from its XSpace protobuf.

TensorFlow names a kernel's event `<node>:<op type>`; the executor's own bookkeeping
(`ExecutorState::Process`, ...), a whole function's event and XLA's inner fusions are left out.
An XLA-compiled kernel's run (`CpuExecutable::ExecuteAsyncOnStream`) is given with the op type
`XlaExecutable` and no node name.
The profiler costs each op a few microseconds, so many small ops look dearer than they are:
compare a profiled wall time with an unprofiled one.
"""

import glob
import os

from tensorflow.tsl.profiler.protobuf import xplane_pb2

_XLA_RUN = "CpuExecutable::ExecuteAsyncOnStream"


def kernel_events(log_dir, thread_prefix=""):
    """(thread, node, op type, milliseconds) of every kernel in the trace under `log_dir`, on
    the threads whose name starts with `thread_prefix`."""
    space = xplane_pb2.XSpace()
    with open(glob.glob(os.path.join(log_dir, "**", "*.xplane.pb"), recursive=True)[-1], "rb") as f:
        space.ParseFromString(f.read())
    for plane in space.planes:
        for line in plane.lines:
            if not line.name.startswith(thread_prefix):
                continue
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                if name == _XLA_RUN:
                    yield line.name, "", "XlaExecutable", event.duration_ps / 1e9
                    continue
                if ":" not in name or "::" in name or "__inference" in name:
                    continue
                node, op_type = name.rsplit(":", 1)
                yield line.name, node, op_type, event.duration_ps / 1e9
