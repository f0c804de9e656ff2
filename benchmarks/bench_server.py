"""What ``jarvis serve`` adds on top of the backend it fronts, measured side by side in one run.

A fast canned backend (the benchmarks' loopback server, ``loopback.py``: a 200-token JSON reply, or a
200-chunk SSE stream) runs in its own process. ``jarvis serve``'s application runs under uvicorn in another
process, over the ``openai-compat`` engine pointed at that backend. The same client (one pooled
``httpx.AsyncClient``, the same payload) then calls, interleaved round by round:

- the backend directly (the floor), and
- the jarvis server, and
- LiteLLM's proxy over the same backend, when it can be found (``nox -s bench`` installs it in a venv of
  its own, so its dependencies do not change what jarvis is measured with),

at 1, 16 and 64 concurrent clients:

- non-streamed: mean latency per request; reported as the added milliseconds and the ratio to the floor;
- streamed: the aggregate content-chunk rate; reported as the ratio to the floor (goal: >= 0.8x at 64).

Both proxies check a bearer token (the same one; the backend ignores it). LiteLLM runs with its defaults
apart from the master key and a local model-cost map (no network).

Where LiteLLM is looked for, first found wins: ``$JARVIS_BENCH_LITELLM`` (the ``litellm`` executable, as
the nox session sets it); a ``litellm`` executable next to this Python; one on ``PATH``; this Python's own
``litellm`` package (``python -m litellm.proxy.proxy_cli``). When none is found, or it does not start, the
report says why.

Run: ``python benchmarks/bench_server.py [--rounds 5] [--requests 20] [--streams 4]`` (requests and
streams are per client per round).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import multiprocessing
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple, Union

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_openai_compat import MESSAGES, N_CHUNKS
from loopback import MODEL, LoopbackServer  # the shared canned backend
from results import budget, fmt_ratio, table, write_result

CONCURRENCY = (1, 16, 64)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _jarvis(backend: str, port: int, token: str) -> None:
    """Child process: the jarvis server over the openai-compat engine."""
    import uvicorn

    from jarvis_core import create_engine
    from jarvis_server.app import create_app
    from jarvis_server.running import uvicorn_config

    engine = create_engine("openai-compat", host=backend)
    app = create_app(engine, engine_key="openai-compat", model=MODEL, default_max_tokens=256, token=token.encode())
    uvicorn.Server(uvicorn_config(app, "127.0.0.1", port, log_level="warning")).run()


def _wait(url: str, path: str, timeout: float = 60.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + path, timeout=1).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def _litellm_command() -> Union[List[str], str]:
    """How to start LiteLLM's proxy here, or why it cannot be."""
    override = os.environ.get("JARVIS_BENCH_LITELLM")
    if override:
        return [override] if os.access(override, os.X_OK) else f"$JARVIS_BENCH_LITELLM={override} is not an executable"
    here = os.path.join(os.path.dirname(sys.executable), "litellm")
    for exe in (here, shutil.which("litellm")):
        if exe and os.access(exe, os.X_OK):
            return [exe]
    if importlib.util.find_spec("litellm") is not None:
        return [sys.executable, "-m", "litellm.proxy.proxy_cli"]
    return (f"not installed (no $JARVIS_BENCH_LITELLM, no litellm next to {sys.executable} or on PATH, no litellm "
            "package in this Python); 'nox -s bench' installs it, or: pip install 'litellm[proxy]'")


def _litellm(backend: str, port: int, token: str, log: str) -> Tuple[Optional[subprocess.Popen], str]:
    """LiteLLM's proxy over ``backend`` (its output goes to ``log``), or ``None`` and why not."""
    command = _litellm_command()
    if isinstance(command, str):
        return None, command
    config = os.path.join(os.path.dirname(log), f"litellm-bench-{port}.yaml")
    with open(config, "w", encoding="utf-8") as fh:
        fh.write(f"model_list:\n  - model_name: {MODEL}\n    litellm_params:\n      model: openai/{MODEL}\n"
                 f"      api_base: {backend}/v1\n      api_key: unused\n")
    # A master key (it refuses to start without one) and the cost map it ships (it would fetch one).
    env = dict(os.environ, LITELLM_MASTER_KEY=token, LITELLM_LOCAL_MODEL_COST_MAP="True")
    with open(log, "wb") as out:
        proc = subprocess.Popen([*command, "--config", config, "--port", str(port), "--host", "127.0.0.1"],
                                stdout=out, stderr=subprocess.STDOUT, env=env)
    return proc, " ".join(command)


def _tail(path: str, lines: int = 8) -> str:
    with open(path, encoding="utf-8", errors="replace") as fh:
        return "".join(fh.readlines()[-lines:]).rstrip()


async def _request(client: Any, url: str, payload: Dict[str, Any]) -> float:
    t0 = time.perf_counter()
    r = await client.post(url + "/v1/chat/completions", json=payload)
    _ = r.json()["choices"][0]["message"]["content"]
    return time.perf_counter() - t0


async def _stream(client: Any, url: str, payload: Dict[str, Any]) -> int:
    count = 0
    async with client.stream("POST", url + "/v1/chat/completions", json=payload) as r:
        async for line in r.aiter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                choices = json.loads(line[6:])["choices"]
                if choices and choices[0]["delta"].get("content"):
                    count += 1
    assert count == N_CHUNKS, count
    return count


async def _latency(client: Any, url: str, payload: Dict[str, Any], clients: int, n: int) -> float:
    async def one() -> List[float]:
        return [await _request(client, url, payload) for _ in range(n)]

    times = [t for batch in await asyncio.gather(*(one() for _ in range(clients))) for t in batch]
    return statistics.mean(times)


async def _chunk_rate(client: Any, url: str, payload: Dict[str, Any], clients: int, n: int) -> float:
    async def one() -> int:
        return sum([await _stream(client, url, payload) for _ in range(n)])

    t0 = time.perf_counter()
    total = sum(await asyncio.gather(*(one() for _ in range(clients))))
    return total / (time.perf_counter() - t0)


async def _run(targets: Dict[str, str], args: argparse.Namespace, token: str) -> Dict[str, Dict[int, Dict[str, List[float]]]]:
    import httpx

    payload = {"model": MODEL, "messages": MESSAGES, "max_tokens": 256}
    spayload = dict(payload, stream=True)
    out: Dict[str, Dict[int, Dict[str, List[float]]]] = {
        name: {c: {"latency": [], "rate": []} for c in CONCURRENCY} for name in targets}
    # Idle connections are dropped before uvicorn's 5 s keep-alive timeout closes them under a request.
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200, keepalive_expiry=2.0)
    headers = {"authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(limits=limits, timeout=60, headers=headers) as client:
        for url in targets.values():  # warm-up: pools, registry, adapters
            await _request(client, url, payload)
            await _stream(client, url, spayload)
        for _ in range(args.rounds):
            for c in CONCURRENCY:
                for name, url in targets.items():
                    out[name][c]["latency"].append(await _latency(client, url, payload, c, args.requests))
                    out[name][c]["rate"].append(await _chunk_rate(client, url, spayload, c, args.streams))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=20, help="non-streamed requests per client per round")
    ap.add_argument("--streams", type=int, default=4, help="streams per client per round")
    args = ap.parse_args()

    ctx = multiprocessing.get_context("spawn")
    backend_server = LoopbackServer(chunks=N_CHUNKS)
    backend = backend_server.url
    token = f"sk-bench-{secrets.token_hex(16)}"
    jarvis_port = _free_port()
    jarvis_proc = ctx.Process(target=_jarvis, args=(backend, jarvis_port, token), daemon=True)
    jarvis_proc.start()
    litellm_port = _free_port()
    scratch = tempfile.mkdtemp(prefix="bench-server-")
    log = os.path.join(scratch, "litellm.log")
    litellm_proc, litellm_note = _litellm(backend, litellm_port, token, log)
    targets = {"direct": backend, "jarvis": f"http://127.0.0.1:{jarvis_port}"}
    try:
        _wait(targets["jarvis"], "/health")
        if litellm_proc is not None:
            try:
                _wait(f"http://127.0.0.1:{litellm_port}", "/health/liveliness", timeout=180)
                targets["litellm"] = f"http://127.0.0.1:{litellm_port}"
            except RuntimeError:
                code = litellm_proc.poll()
                litellm_note = (f"{litellm_note} did not answer within 180 s"
                                f"{'' if code is None else f' (exited with {code})'}; its log ends:\n{_tail(log)}")
        results = asyncio.run(_run(targets, args, token))
    finally:
        jarvis_proc.terminate()
        jarvis_proc.join(5)
        backend_server.close()
        if litellm_proc is not None:
            litellm_proc.terminate()
            litellm_proc.wait(10)
        shutil.rmtree(scratch, ignore_errors=True)

    if "litellm" in targets:
        print(f"LiteLLM proxy: {litellm_note}")
    else:
        print(f"LiteLLM proxy left out: {litellm_note}")
    med = statistics.median
    print(f"{args.rounds} rounds, interleaved; {args.requests} requests and {args.streams} streams of {N_CHUNKS} chunks "
          "per client per round; medians of per-round values")
    for c in CONCURRENCY:
        floor = results["direct"][c]
        print(f"{c:>2} concurrent clients:")
        print(f"   direct   {med(floor['latency']) * 1e3:8.2f} ms/request   {med(floor['rate']):9.0f} chunks/s")
        for name in (n for n in targets if n != "direct"):
            r = results[name][c]
            lat = [x / f for x, f in zip(r["latency"], floor["latency"], strict=True)]
            added = [(x - f) * 1e3 for x, f in zip(r["latency"], floor["latency"], strict=True)]
            rate = [x / f for x, f in zip(r["rate"], floor["rate"], strict=True)]
            goal = "   (goal >= 0.80x)" if c == 64 and name == "jarvis" else ""
            print(f"   {name:<8} {med(r['latency']) * 1e3:8.2f} ms/request (+{med(added):.2f} ms, {med(lat):.2f}x)"
                  f"   {med(r['rate']):9.0f} chunks/s ({med(rate):.2f}x){goal}")
    _write(results, targets, args, litellm_note)
    return 0


def _write(results: Dict[str, Dict[int, Dict[str, List[float]]]], targets: Dict[str, str], args: argparse.Namespace,
           litellm_note: str) -> None:
    """The result for the report (``results.py``): the same figures as the printout."""
    med = statistics.median
    rows = []
    ratios: Dict[str, Dict[int, Dict[str, float]]] = {}
    for c in CONCURRENCY:
        floor = results["direct"][c]
        rows.append([f"{c}", "backend directly (floor)", f"{med(floor['latency']) * 1e3:.2f}", "", "1.00\u00d7",
                     f"{med(floor['rate']) / 1e3:.1f}k", "1.00\u00d7"])
        for name in (n for n in targets if n != "direct"):
            r = results[name][c]
            lat = med([x / f for x, f in zip(r["latency"], floor["latency"], strict=True)])
            added = med([(x - f) * 1e3 for x, f in zip(r["latency"], floor["latency"], strict=True)])
            rate = med([x / f for x, f in zip(r["rate"], floor["rate"], strict=True)])
            ratios.setdefault(name, {})[c] = {"latency": lat, "rate": rate, "added_ms": added}
            label = "jarvis serve" if name == "jarvis" else "LiteLLM proxy (peer)"
            rows.append([f"{c}", label, f"{med(r['latency']) * 1e3:.2f}", f"+{added:.2f}", fmt_ratio(lat),
                         f"{med(r['rate']) / 1e3:.1f}k", fmt_ratio(rate)])
    kept = ratios["jarvis"][64]["rate"] if 64 in CONCURRENCY else None
    write_result(
        "server", "jarvis serve",
        summary=("`jarvis serve` (uvicorn, the openai-compat engine) in front of a canned backend, against calling "
                 "the backend directly with the same pooled httpx client, and LiteLLM's proxy over the same backend "
                 f"when it is installed; {args.rounds} interleaved rounds of {args.requests} requests and "
                 f"{args.streams} streams of {N_CHUNKS} chunks per concurrent client. LiteLLM: "
                 + (litellm_note if "litellm" in targets else f"left out: {litellm_note}") + "."),
        tables=[table("Per concurrent client count: mean request latency and aggregate stream chunk rate",
                      ["clients", "target", "ms/request", "added ms", "latency vs floor", "chunks/s", "rate vs floor"],
                      rows)],
        budgets=[budget("jarvis serve chunk rate at 64 concurrent streams / the backend's", fmt_ratio(kept),
                        ">= 0.80\u00d7", kept >= 0.8)] if kept is not None else [],
        data={"ratios": ratios},
    )


if __name__ == "__main__":
    sys.exit(main())
