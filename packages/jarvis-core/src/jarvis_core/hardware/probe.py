"""``detect_hardware``: run the vendor tools (each with a timeout) and psutil, then parse what they print.

Nothing runs at import time. A tool that is not installed means "no GPU of that vendor"; a tool that
fails or times out adds a note to :attr:`HardwareInfo.notes` instead of raising, so ``jarvis hardware``
always answers, and says what it could not find out.
"""

from __future__ import annotations

import os
import platform as _platform
import shutil
import signal
import subprocess
import sys
from typing import Callable, List, Optional, Sequence, Tuple

from jarvis_core.hardware.info import GPUInfo, HardwareInfo, group_gpus
from jarvis_core.hardware.parse import (
    NVIDIA_QUERY,
    ROCM_QUERY,
    SYSTEM_PROFILER_QUERY,
    parse_cpuinfo_model,
    parse_nvidia_smi,
    parse_rocm_smi,
    parse_system_profiler,
)

__all__ = ["DEFAULT_TIMEOUT", "current_platform", "detect_hardware", "run_tool"]

#: Seconds each vendor tool may take.
DEFAULT_TIMEOUT = 5.0

_GIB = 1024**3


def current_platform() -> str:
    """``"linux"``, ``"darwin"``, ``"windows"`` or another ``sys.platform`` value."""
    return "windows" if sys.platform.startswith("win") else ("linux" if sys.platform.startswith("linux") else sys.platform)


def run_tool(argv: Sequence[str], *, timeout: float) -> Tuple[Optional[str], Optional[str]]:
    """Run a tool and return ``(stdout, problem)``.

    ``(None, None)``: the tool is not installed. ``(None, "...")``: it failed or timed out (the problem in
    words). A timed-out tool is killed together with any children it started, so a stuck driver query
    never hangs jarvis.
    """
    exe = shutil.which(argv[0])
    if exe is None:
        return None, None
    posix = os.name == "posix"
    try:
        proc = subprocess.Popen(
            [exe, *argv[1:]], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, errors="replace", start_new_session=posix,
        )
    except OSError as exc:
        return None, f"{argv[0]} could not be started: {exc.strerror or exc}"
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc, posix)
        proc.communicate()
        return None, f"{argv[0]} did not answer within {timeout:g}s and was stopped"
    if proc.returncode != 0:
        first = next((line.strip() for line in (err or out).splitlines() if line.strip()), "")
        return None, f"{argv[0]} exited with status {proc.returncode}" + (f": {first[:200]}" if first else "")
    return out, None


def _kill(proc: subprocess.Popen[str], posix: bool) -> None:
    try:
        if posix:
            os.killpg(proc.pid, signal.SIGKILL)  # the whole session: the tool and anything it spawned
        else:  # pragma: no cover - Windows
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


def _cpu_name(plat: str, timeout: float) -> str:
    if plat == "linux":
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
                name = parse_cpuinfo_model(fh.read())
            if name:
                return name
        except OSError:
            pass
    elif plat == "darwin":
        out, _ = run_tool(("sysctl", "-n", "machdep.cpu.brand_string"), timeout=timeout)
        if out and out.strip():
            return out.strip()
    return _platform.processor() or _platform.machine()


def _gpus(plat: str, timeout: float) -> Tuple[List[GPUInfo], List[str]]:
    gpus: List[GPUInfo] = []
    notes: List[str] = []
    probes: List[Tuple[Sequence[str], Callable[[str], List[GPUInfo]]]] = []
    if plat == "darwin":
        probes.append((SYSTEM_PROFILER_QUERY, parse_system_profiler))
    else:
        probes.append((NVIDIA_QUERY, parse_nvidia_smi))
        if plat == "linux":
            probes.append((ROCM_QUERY, parse_rocm_smi))
    for argv, parse in probes:
        out, problem = run_tool(argv, timeout=timeout)
        if problem:
            notes.append(problem)
        if out is not None:
            gpus.extend(parse(out))
    return gpus, notes


def detect_hardware(*, timeout: float = DEFAULT_TIMEOUT, platform: Optional[str] = None) -> HardwareInfo:
    """Describe this machine: CPU and RAM (psutil), and every GPU the vendor tools report.

    NVIDIA GPUs come from ``nvidia-smi`` (all of them, not only the first), AMD GPUs from ``rocm-smi``
    (Linux), Apple GPUs from ``system_profiler`` (macOS). Each tool runs at most ``timeout`` seconds.

    :param platform: pretend to be this platform (``"linux"``, ``"darwin"``, ``"windows"``); for tests.
    """
    import psutil  # here, not at import time: importing jarvis_core.hardware stays cheap

    plat = platform or current_platform()
    gpus, notes = _gpus(plat, timeout)
    try:
        ram_gb = round(psutil.virtual_memory().total / _GIB, 1)
    except (OSError, RuntimeError) as exc:  # pragma: no cover - exotic sandboxes
        ram_gb = 0.0
        notes.append(f"RAM size unavailable: {exc}")
    return HardwareInfo(
        platform=plat,
        machine=_platform.machine(),
        cpu_name=_cpu_name(plat, timeout),
        cpu_cores=psutil.cpu_count(logical=False),
        cpu_threads=psutil.cpu_count(logical=True),
        ram_gb=ram_gb,
        gpus=group_gpus(gpus),
        notes=tuple(notes),
    )
