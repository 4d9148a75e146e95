"""What machine a benchmark ran on: every figure in RESULTS.md names its CPU model, since these
machines differ (some have AMX, some are AMD without it)."""

import os
import platform


def cpu_model():
    """The CPU's model name from /proc/cpuinfo (platform's guess elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as reader:
            for line in reader:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def describe():
    return f"CPU: {cpu_model()}, {os.cpu_count()} cores"
