"""``jarvis hardware``: CPU, RAM and GPUs, with the recommended engine and why.

By default a short summary for people::

    cpu          AMD EPYC 7763: 64 cores, 128 threads
    ram          503.7 GB
    gpus         8 x NVIDIA H100 80GB HBM3 (nvidia), 79.6 GB each
    recommended  vllm: NVIDIA datacenter GPU (...): vLLM serves it best

``--json`` prints the document, for scripts::

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
from typing import Any, Dict, List

from jarvis_core.commands import add_json_options, format_table, write_result

__all__ = ["add_parser", "render", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``hardware`` to the ``jarvis`` parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "hardware",
        help="detect CPU, RAM and GPUs; recommend an engine",
        description="Detect CPU, RAM and GPUs (nvidia-smi, rocm-smi, system_profiler; each with a timeout) and "
        "print them with the engine recommended for this machine (a summary; --json for scripts).",
    )
    p.add_argument("--timeout", type=float, default=5.0, metavar="S", help="seconds per vendor tool (default 5)")
    add_json_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``jarvis hardware``."""
    from jarvis_core.errors import UsageError
    from jarvis_core.hardware import detect_hardware, explain_recommendation

    if args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds", argument="--timeout")
    hw = detect_hardware(timeout=args.timeout)
    rec = explain_recommendation(hw)
    doc = {**hw.to_dict(), "recommended_engine": rec.engine, "reason": rec.reason}
    write_result(doc, args, render)
    return 0


def render(doc: Dict[str, Any]) -> str:
    """The ``jarvis hardware`` summary: one labelled line for the CPU, RAM, each kind of GPU, the
    recommendation and each note."""
    cpu = doc["cpu"]
    counts = ", ".join(f"{n} {what}" for n, what in ((cpu["cores"], "cores"), (cpu["threads"], "threads")) if n)
    lines: List[List[str]] = [
        ["platform", f"{doc['platform']} {doc['machine']}".strip()],
        ["cpu", ": ".join(part for part in (cpu["name"] or "unknown", counts) if part)],
        ["ram", f"{doc['ram_gb']:g} GB"],
    ]
    gpus = [_gpu(g) for g in doc["gpus"]] or ["none found"]
    if len(doc["gpus"]) > 1 and doc["gpu_memory_gb"]:
        gpus.append(f"{doc['gpu_memory_gb']:g} GB of GPU memory in all")
    lines += [["gpus" if i == 0 else "", text] for i, text in enumerate(gpus)]
    lines.append(["recommended", f"{doc['recommended_engine']}: {doc['reason']}"])
    lines += [["note", note] for note in doc["notes"]]
    return format_table(None, lines)


def _gpu(gpu: Dict[str, Any]) -> str:
    many = f"{gpu['count']} x " if gpu["count"] > 1 else ""
    if gpu["unified"]:
        memory = "memory shared with the RAM"
    elif gpu["memory_gb"] is None:
        memory = "memory unknown"
    else:
        memory = f"{gpu['memory_gb']:g} GB" + (" each" if gpu["count"] > 1 else "")
    return f"{many}{gpu['name']} ({gpu['vendor']}), {memory}"
