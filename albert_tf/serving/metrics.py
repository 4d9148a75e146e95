"""Request metrics in Prometheus' text format under TF Serving's names, for its monitoring path
`/monitoring/prometheus/metrics`: `:tensorflow:serving:request_count{model_name,status}` with the
canonical status name as TF Serving labels it (OK, INVALID_ARGUMENT, NOT_FOUND, ...) and the
`:tensorflow:serving:request_latency` histogram (microseconds, as TF Serving reports it), labelled
with the entrypoint, REST or GRPC."""

import bisect
import collections
import threading

# Microsecond bucket bounds: 1 ms to 100 s.
LATENCY_BOUNDS_US = (1e3, 2.5e3, 5e3, 1e4, 2.5e4, 5e4, 1e5, 2.5e5, 5e5, 1e6, 2.5e6, 5e6, 1e7, 1e8)


def _escape(value):
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs):
    return ",".join(f'{key}="{_escape(value)}"' for key, value in pairs)


class RequestMetrics:
    """Counts and latencies of answered requests; `exposition()` renders them."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counts = collections.Counter()
        self._buckets = collections.defaultdict(lambda: [0] * (len(LATENCY_BOUNDS_US) + 1))
        self._sums = collections.Counter()

    def record(self, model_name, api, code, seconds, entrypoint="REST"):
        """One answered request: `code` is its canonical status (an errors.Code), `entrypoint`
        REST or GRPC."""
        status = code.name
        microseconds = seconds * 1e6
        with self._lock:
            self._counts[(model_name, status)] += 1
            key = (model_name, api, entrypoint)
            self._buckets[key][bisect.bisect_left(LATENCY_BOUNDS_US, microseconds)] += 1
            self._sums[key] += microseconds

    def exposition(self):
        lines = ["# TYPE :tensorflow:serving:request_count counter"]
        with self._lock:
            for (model, status), count in sorted(self._counts.items()):
                lines.append(f":tensorflow:serving:request_count"
                             f"{{{_labels([('model_name', model), ('status', status)])}}} {count}")
            lines.append("# TYPE :tensorflow:serving:request_latency histogram")
            for (model, api, entrypoint), counts in sorted(self._buckets.items()):
                base = [("model_name", model), ("API", api), ("entrypoint", entrypoint)]
                cumulative = 0
                for bound, count in zip(list(LATENCY_BOUNDS_US) + ["+Inf"], counts):
                    cumulative += count
                    le = bound if bound == "+Inf" else f"{bound:g}"
                    lines.append(f":tensorflow:serving:request_latency_bucket"
                                 f"{{{_labels(base + [('le', le)])}}} {cumulative}")
                lines.append(f":tensorflow:serving:request_latency_sum{{{_labels(base)}}} "
                             f"{self._sums[(model, api, entrypoint)]:.0f}")
                lines.append(f":tensorflow:serving:request_latency_count{{{_labels(base)}}} "
                             f"{cumulative}")
        return "\n".join(lines) + "\n"
