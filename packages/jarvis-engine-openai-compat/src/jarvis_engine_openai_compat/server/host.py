"""``python -m jarvis_engine_openai_compat.server.host``: llama.cpp's server hosted by xllamacpp.

Takes the ``llama-server`` flags that :meth:`ServerSpec.command <.launch.ServerSpec.command>` produces,
serves HTTP from xllamacpp's background threads and keeps the process alive until SIGTERM or SIGINT (exit
code 0), or until its parent dies (``JARVIS_SERVER_PARENT_PID``, else the process that started it): a
crashed jarvis leaves no orphan server behind.
Exit codes: 0 stopped cleanly, 1 the server failed to start, 2 bad arguments, 3 xllamacpp is not installed.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from types import FrameType
from typing import Any, List, Optional

from jarvis_engine_openai_compat.server.config import DEFAULTS

EXTRA_HINT = "pip install 'jarvis-engine-openai-compat[embedded]'"
#: Set by :class:`~.launch.ServerProcess` to its own pid; the server exits when that process is gone.
PARENT_ENV = "JARVIS_SERVER_PARENT_PID"


def build_parser() -> argparse.ArgumentParser:
    """The accepted subset of llama-server's flags."""
    p = argparse.ArgumentParser(
        prog="python -m jarvis_engine_openai_compat.server.host",
        description="Serve a GGUF model with llama.cpp's server (through xllamacpp), OpenAI-compatible API.",
    )
    p.add_argument("-m", "--model", required=True, help="path of the GGUF model file")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("-np", "--parallel", type=int, default=DEFAULTS.slots, help="number of slots (concurrent requests)")
    p.add_argument("-c", "--ctx-size", type=int, default=None,
                   help="total context, split evenly across slots (default: the managed server's context per slot "
                        "times the slots; 0: the model's own)")
    p.add_argument("-t", "--threads", type=int, default=None)
    p.add_argument("-a", "--alias", default=None, help="model id reported by /v1/models")
    p.add_argument("--metrics", action="store_true", help="enable the Prometheus /metrics endpoint")
    p.add_argument("--jinja", action="store_true", help="use the model's Jinja chat template")
    p.add_argument("--embeddings", "--embedding", dest="embeddings", action="store_true",
                   help="serve /v1/embeddings (llama.cpp then serves embeddings only)")
    p.add_argument("--pooling", choices=("none", "mean", "cls", "last", "rank"), default=None,
                   help="how token vectors are pooled into one embedding (default: the model's)")
    unified = p.add_mutually_exclusive_group()
    unified.add_argument("--kv-unified", "-kvu", dest="kv_unified", action="store_true", default=False)
    unified.add_argument("--no-kv-unified", "-no-kvu", dest="kv_unified", action="store_false")
    return p


def _params(x: Any, args: argparse.Namespace) -> Any:
    params = x.CommonParams()
    params.model.path = args.model
    params.hostnames = [args.host]
    params.port = args.port
    params.n_parallel = args.parallel
    params.n_ctx = args.parallel * DEFAULTS.ctx_per_slot if args.ctx_size is None else args.ctx_size
    params.kv_unified = args.kv_unified
    params.endpoint_metrics = args.metrics
    params.use_jinja = args.jinja
    if args.threads:
        params.cpuparams.n_threads = args.threads
        params.cpuparams_batch.n_threads = args.threads
    if args.alias:
        params.model_alias = {args.alias}
    if args.embeddings:
        params.embedding = True
    if args.pooling:
        params.pooling_type = getattr(x.llama_pooling_type, f"LLAMA_POOLING_TYPE_{args.pooling.upper()}")
    return params


def _parent_pid() -> int:
    # The launcher says who it is: by the time this runs, a parent that died early has already been
    # replaced by init, and os.getppid() alone would not show it.
    try:
        return int(os.environ.get(PARENT_ENV, ""))
    except ValueError:
        return os.getppid()


def main(argv: Optional[List[str]] = None) -> int:
    """Run the server until told to stop. Returns the process exit code."""
    args = build_parser().parse_args(argv)
    for name in ("parallel", "port"):
        if getattr(args, name) < (1 if name == "parallel" else 0):
            print(f"error: --{name} must be positive", file=sys.stderr)
            return 2
    if not os.path.isfile(args.model):
        print(f"error: model file not found: {args.model}", file=sys.stderr)
        return 2
    try:
        import xllamacpp as x
    except ImportError as exc:
        print(f"error: the embedded llama.cpp server needs xllamacpp ({exc}); install it with: {EXTRA_HINT}",
              file=sys.stderr)
        return 3

    stop = threading.Event()
    holder: dict[str, Any] = {}

    def on_signal(_signum: int, _frame: Optional[FrameType]) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def serve() -> None:
        # Loading blocks inside C++; doing it here keeps the main thread free to react to SIGTERM meanwhile.
        try:
            holder["server"] = x.Server(_params(x, args))
        except Exception as exc:
            holder["error"] = exc
            stop.set()

    loader = threading.Thread(target=serve, name="xllamacpp-load", daemon=True)
    loader.start()
    parent = _parent_pid()
    while not stop.wait(0.5):
        if parent > 1 and os.getppid() != parent:  # our parent died; nobody is left to stop us
            break
    if "error" in holder:
        print(f"error: the llama.cpp server failed to start: {holder['error']}", file=sys.stderr)
        return 1
    server = holder.pop("server", None)
    if server is None:  # stopped while still loading: nothing to shut down in order
        sys.stdout.flush()
        os._exit(0)
    del server  # xllamacpp's destructor stops the HTTP loop and frees the model
    return 0


if __name__ == "__main__":
    sys.exit(main())
