"""The managed llama.cpp worker: one server process, N slots, polling API, nuke-and-repave supervision.

See ``docs/worker.md``. Importing this package starts nothing; :class:`LlamaCppWorker` does on ``start()``.
"""

from .config import RestartPolicy, TimeoutProfile, ToolLimits, WorkerConfig
from .loop_detector import LoopDetector, LoopDetectorConfig, LoopVerdict
from .signals import CONTROL_TOOLS
from .state import (
    NO_SLOT_AVAILABLE,
    NOT_READY,
    RequestHandle,
    RequestResult,
    RequestState,
    RequestStatus,
    Signal,
    ToolTraceEntry,
    WorkerState,
    WorkerStatus,
)
from .worker import LlamaCppWorker

__all__ = [
    "CONTROL_TOOLS",
    "NOT_READY",
    "NO_SLOT_AVAILABLE",
    "LlamaCppWorker",
    "LoopDetector",
    "LoopDetectorConfig",
    "LoopVerdict",
    "RequestHandle",
    "RequestResult",
    "RequestState",
    "RequestStatus",
    "RestartPolicy",
    "Signal",
    "TimeoutProfile",
    "ToolLimits",
    "ToolTraceEntry",
    "WorkerConfig",
    "WorkerState",
    "WorkerStatus",
]
