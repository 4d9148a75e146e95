"""The one description of the CPU that the demo's summary, the study's report and the
benchmarks print: its model name, core count and the instruction-set flags that decide how
fast float32, bfloat16 and int8 products run."""

import os
import platform

ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16", "amx_int8")


def cpu_description(path="/proc/cpuinfo"):
    """{"model", "cores", "isa": {flag: present}} for ISA_FLAGS."""
    model, flags = platform.processor() or "unknown CPU", set()
    if os.path.exists(path):
        with open(path) as reader:
            for line in reader:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
    return {"model": model, "cores": os.cpu_count(),
            "isa": {flag: flag in flags for flag in ISA_FLAGS}}


def present_flags(cpu):
    return [flag for flag, present in cpu["isa"].items() if present]


def describe(cpu):
    """`<model>, <n> cores; avx2 avx512f ...` (the flags present)."""
    return f"{cpu['model']}, {cpu['cores']} cores; {' '.join(present_flags(cpu)) or 'no AVX2 or later'}"


# On a quiet 2-core AMD EPYC (load average 0.1-0.9) two replicas trained the demo model 1.12-1.18x
# faster than one device in float32 and 1.35-1.39x with bfloat16 products; on the same machine at
# load 8-24 they ran at 0.41-0.45x (each of their lockstep hand-offs waits for a scheduler slice).
# bench/RESULTS.md has the runs. Nothing was measured in between: a machine counts as busy once its
# one-minute load average reaches its core count (on average no core to spare).


def pretraining_replicas(cores, load_average):
    """(replicas for run_pretraining.py's --cpu_replicas, why): 2 on a machine of 2 or more
    cores whose load average is below its core count, else 1."""
    if cores < 2:
        return 1, f"{cores} core: nothing to split"
    if load_average >= cores:
        return 1, (f"load average {load_average:.2f} >= {cores} cores: replicas in lockstep "
                   "lose on a busy machine")
    return 2, (f"{cores} cores, load average {load_average:.2f} < {cores}: two data-parallel "
               "replicas use both cores better than one device's two threads")
