"""``jarvis hardware``: CPU, RAM and GPUs as JSON, with the recommended engine and why.

Output shape::

    {"platform": "linux", "machine": "x86_64",
     "cpu": {"name": "AMD EPYC 7763", "cores": 64, "threads": 128}, "ram_gb": 503.7,
     "gpus": [{"vendor": "nvidia", "name": "NVIDIA H100 80GB HBM3", "memory_gb": 79.6, "count": 8,
               "unified": false}],
     "gpu_count": 8, "gpu_memory_gb": 636.8, "notes": [],
     "recommended_engine": "vllm", "reason": "NVIDIA datacenter GPU (...): vLLM serves it best"}

``notes`` lists vendor tools that failed or timed out (a tool that is not installed is not a note).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``hardware`` to the ``jarvis`` parser."""
    p = subparsers.add_parser(
        "hardware",
        help="detect CPU, RAM and GPUs; recommend an engine",
        description="Detect CPU, RAM and GPUs (nvidia-smi, rocm-smi, system_profiler; each with a timeout) and "
        "print them as JSON with the engine recommended for this machine.",
    )
    p.add_argument("--timeout", type=float, default=5.0, metavar="S", help="seconds per vendor tool (default 5)")
    p.add_argument("--indent", type=int, default=2, help="JSON indentation (0: one line)")
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``jarvis hardware``."""
    from jarvis_core.errors import JarvisError
    from jarvis_core.hardware import detect_hardware, explain_recommendation

    if args.timeout <= 0:
        raise JarvisError("--timeout must be a positive number of seconds")
    hw = detect_hardware(timeout=args.timeout)
    rec = explain_recommendation(hw)
    doc = {**hw.to_dict(), "recommended_engine": rec.engine, "reason": rec.reason}
    print(json.dumps(doc, indent=args.indent or None))
    return 0
