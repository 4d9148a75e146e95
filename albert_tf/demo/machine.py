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
