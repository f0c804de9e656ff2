"""What ``jarvis serve`` adds on top of the backend it fronts, measured side by side in one run.

A fast canned backend (the benchmarks' loopback server, ``loopback.py``: a 200-token JSON reply, or a
200-chunk SSE stream) runs in its own process. ``jarvis serve``'s application runs under uvicorn in another
process, over the ``openai-compat`` engine pointed at that backend. The same client (the same library, the
same settings, the same payload; a pooled client per target) then calls, interleaved round by round:

- the backend directly (the floor), and
- the jarvis server, and
- LiteLLM's proxy over the same backend, when it can be found (``nox -s bench`` installs it in a venv of
  its own, so its dependencies do not change what jarvis is measured with),

at 1, 16 and 64 concurrent clients, the same number of requests and streams at every client count (split
over the clients), the targets in alternating order from round to round:

- non-streamed: mean latency per request; reported as the added milliseconds and the ratio to the floor;
- streamed: the aggregate content-chunk rate; reported as the ratio to the floor (goal: >= 0.8x at 64).

All of it twice, with two client libraries: ``aiohttp`` (when installed) and ``httpx`` (the openai SDK's).
httpx's pool looks at every connection it holds each time a request starts or ends (a ``poll()`` on each
idle one), so its CPU per stream grows with the connections a target keeps it holding, and a proxy, which
holds each request a little longer than the backend, is charged for it in the client as well as in its own
process; aiohttp's pool keeps idle connections in a queue per host and costs the same either way. The two
show the server's cost with and without that effect.

Ratios are medians of the per-round ratios, with the lowest and highest round beside them. Beside the
rates, the CPU time per request and per stream of the client (this process) and of the proxy's process
(Linux): they show where a ratio comes from independently of what else the machine was doing. With one
client nothing overlaps (the proxy reads, decodes and re-encodes a stream, then the client parses it), so
that ratio is about client CPU / (client CPU + proxy CPU); with many clients the two run side by side on
different cores and the ratio depends on a core being free for the proxy.

jarvis runs on the HTTP parser and event loop uvicorn picks in this Python (``httptools + uvloop`` with
the ``jarvis-server[fast]`` extra, which ``nox -s bench`` installs; ``h11 + asyncio`` without); the report
says which. Both proxies check a bearer token (the same one; the backend ignores it). LiteLLM runs with its
defaults apart from the master key and a local model-cost map (no network).

Where LiteLLM is looked for, first found wins: ``$JARVIS_BENCH_LITELLM`` (the ``litellm`` executable, as
the nox session sets it); a ``litellm`` executable next to this Python; one on ``PATH``; this Python's own
``litellm`` package (``python -m litellm.proxy.proxy_cli``). When none is found, or it does not start, the
report says why.

Each measurement is long enough to outlast a passing disturbance, and the floor and jarvis share the
disturbances that remain: in each round a target's streams come in 2 slices of 640 (``--slices``,
``--streams``), the floor's and jarvis's in the order A B B A, so that a drift of the machine's speed within
the round weighs on both alike; a round's rate is its chunks over its seconds, both slices together. 640
streams make about 3 s at 64 clients. (128 streams in one piece made half a second, and rounds then ranged
from 0.5x to 1.1x on this kind of machine. Slices much shorter than 640 streams measure something else:
each slice starts its 64 clients at once, where httpx's pool grows and looks at every connection it
holds; with 4 slices of 320 the floor's own httpx client spent 7.8 ms of CPU per stream at 64 clients
against 4.3 to 5.7 ms in runs of the same evening with longer slices, and its rate fell with it.) LiteLLM, about 60
times slower per stream here, gets fewer (``--peer-*``), in one piece after the others, so that it does not
take most of an hour; its rates and latencies are per second and per request all the same.

Run: ``python benchmarks/bench_server.py [--rounds 5] [--requests 640] [--streams 640] [--slices 2]
[--peer-requests 160] [--peer-streams 64]`` (requests per target, client count and round; streams per
target, client count and slice; both split over the clients).
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

from jarvis_server.running import http_stack

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
    from jarvis_server.settings import ServerSettings

    engine = create_engine("openai-compat", host=backend)
    app = create_app(engine, engine_key="openai-compat", model=MODEL, default_max_tokens=256, token=token.encode())
    # Every client of the benchmark comes from 127.0.0.1, as behind a reverse proxy: no bound per address (a
    # pool of 64 clients holds a few more connections than 64, and the default bound would close them).
    settings = ServerSettings(max_connections_per_client=0)
    uvicorn.Server(uvicorn_config(app, "127.0.0.1", port, log_level="warning", settings=settings)).run()


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
    return ("not installed (no $JARVIS_BENCH_LITELLM, no litellm next to this Python or on PATH, no litellm "
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


def _is_content(payload: Union[str, bytes]) -> bool:
    """Whether one ``data:`` payload of a chat-completion stream carries content."""
    choices = json.loads(payload)["choices"]
    return bool(choices and choices[0]["delta"].get("content"))


class HttpxClient:
    """Requests and streams through one pooled ``httpx.AsyncClient`` (the openai SDK's HTTP client)."""

    def __init__(self, token: str) -> None:
        import httpx

        # Idle connections are dropped before uvicorn's 5 s keep-alive timeout closes them under a request.
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=200, keepalive_expiry=2.0)
        self._client = httpx.AsyncClient(limits=limits, timeout=60, headers={"authorization": f"Bearer {token}"})

    async def request(self, url: str, payload: Dict[str, Any]) -> float:
        t0 = time.perf_counter()
        r = await self._client.post(url + "/v1/chat/completions", json=payload)
        _ = r.json()["choices"][0]["message"]["content"]
        return time.perf_counter() - t0

    async def stream(self, url: str, payload: Dict[str, Any]) -> int:
        count = 0
        async with self._client.stream("POST", url + "/v1/chat/completions", json=payload) as r:
            async for line in r.aiter_lines():
                if line.startswith("data: ") and line != "data: [DONE]" and _is_content(line[6:]):
                    count += 1
        assert count == N_CHUNKS, count
        return count

    async def aclose(self) -> None:
        await self._client.aclose()


class AiohttpClient:
    """Requests and streams through one ``aiohttp.ClientSession`` (its connector keeps idle connections per
    host in a queue, so what a request costs it does not grow with the connections it holds)."""

    def __init__(self, token: str) -> None:
        import aiohttp

        connector = aiohttp.TCPConnector(limit=200, keepalive_timeout=2.0)
        self._session = aiohttp.ClientSession(connector=connector, headers={"authorization": f"Bearer {token}"},
                                              timeout=aiohttp.ClientTimeout(total=60))

    async def request(self, url: str, payload: Dict[str, Any]) -> float:
        t0 = time.perf_counter()
        async with self._session.post(url + "/v1/chat/completions", json=payload) as r:
            _ = json.loads(await r.read())["choices"][0]["message"]["content"]
        return time.perf_counter() - t0

    async def stream(self, url: str, payload: Dict[str, Any]) -> int:
        count = 0
        async with self._session.post(url + "/v1/chat/completions", json=payload) as r:
            async for raw in r.content:
                line = raw.rstrip(b"\r\n")
                if line.startswith(b"data: ") and line != b"data: [DONE]" and _is_content(line[6:]):
                    count += 1
        assert count == N_CHUNKS, count
        return count

    async def aclose(self) -> None:
        await self._session.close()


Client = Union[HttpxClient, AiohttpClient]


def _client_kinds() -> Tuple[List[str], str]:
    """The client libraries to measure with (aiohttp first, when installed), and a note on any left out."""
    if importlib.util.find_spec("aiohttp") is None:
        return ["httpx"], "aiohttp left out (not installed; benchmarks/requirements.txt names it)"
    return ["aiohttp", "httpx"], ""


def _new_client(kind: str, token: str) -> Client:
    return AiohttpClient(token) if kind == "aiohttp" else HttpxClient(token)


async def _latency(client: Client, url: str, payload: Dict[str, Any], clients: int, n: int) -> float:
    async def one() -> List[float]:
        return [await client.request(url, payload) for _ in range(n)]

    times = [t for batch in await asyncio.gather(*(one() for _ in range(clients))) for t in batch]
    return statistics.mean(times)


async def _stream_all(client: Client, url: str, payload: Dict[str, Any], clients: int, n: int) -> Tuple[int, float]:
    """``n`` streams on each of ``clients`` concurrent clients: the content chunks received and the seconds."""
    async def one() -> int:
        return sum([await client.stream(url, payload) for _ in range(n)])

    t0 = time.perf_counter()
    total = sum(await asyncio.gather(*(one() for _ in range(clients))))
    return total, time.perf_counter() - t0


def _proc_cpu(pid: Optional[int]) -> Optional[float]:
    """CPU seconds (user + system) a process has used so far; ``None`` where ``/proc`` is not there."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _own_cpu() -> float:
    t = os.times()
    return t.user + t.system


#: Per target and client count, lists of per-round values: "latency" (s), "rate" (chunks/s), and the CPU
#: milliseconds per request or stream of the client ("client_req", "client_stream") and the proxy
#: ("proxy_req", "proxy_stream"; empty for the floor, or where the proxy's CPU cannot be read).
Results = Dict[str, Dict[int, Dict[str, List[float]]]]
KEYS = ("latency", "rate", "client_req", "client_stream", "proxy_req", "proxy_stream")


def _split(total: int, clients: int) -> int:
    return max(1, round(total / clients))


def _counts(args: argparse.Namespace, target: str, clients: int) -> Tuple[int, int]:
    """Requests and streams per client for ``target`` at ``clients`` concurrent clients."""
    if target == "litellm":
        return _split(args.peer_requests, clients), _split(args.peer_streams, clients)
    return _split(args.requests, clients), _split(args.streams, clients)


class _Meter:
    """CPU time of the client (this process) and of a proxy's process around one measurement."""

    def __init__(self, pid: Optional[int]) -> None:
        self._pid = pid
        self.client = 0.0
        self.proxy: Optional[float] = 0.0

    async def measure(self, work: Any) -> Any:
        own0, proxy0 = _own_cpu(), _proc_cpu(self._pid)
        out = await work
        own1, proxy1 = _own_cpu(), _proc_cpu(self._pid)
        self.client += own1 - own0
        self.proxy = None if self.proxy is None or proxy0 is None or proxy1 is None else self.proxy + proxy1 - proxy0
        return out


def _slices(names: List[str], slices: int, r: int) -> List[str]:
    """The order the targets' stream slices run in within round ``r``: A B, B A, A B, ... (ABBA: a drift of
    the machine's speed within the round weighs on each target alike), starting with B in odd rounds."""
    out: List[str] = []
    for s in range(slices):
        out += names if (s + r) % 2 == 0 else names[::-1]
    return out


async def _run(targets: Dict[str, str], pids: Dict[str, Optional[int]], args: argparse.Namespace, token: str,
               kinds: List[str]) -> Dict[str, Results]:
    payload = {"model": MODEL, "messages": MESSAGES, "max_tokens": 256}
    spayload = dict(payload, stream=True)
    out: Dict[str, Results] = {
        kind: {name: {c: {k: [] for k in KEYS} for c in CONCURRENCY} for name in targets} for kind in kinds}
    # One client per library and target, configured alike: httpx's pool looks at every connection it holds (a
    # poll() on each idle one) whenever a request starts or ends, so a target measured while another's idle
    # connections sit in the same pool would be charged for them (64 of them take a stream from 2.7 to 13.4 ms
    # of client CPU here). Within a target, the connections it keeps busy are its own cost and stay in its
    # figures.
    clients = {(kind, name): _new_client(kind, token) for kind in kinds for name in targets}
    try:
        for (_, name), client in clients.items():  # warm-up: pools, registry, adapters
            await client.request(targets[name], payload)
            await client.stream(targets[name], spayload)
        for r in range(args.rounds):
            order = list(targets) if r % 2 == 0 else list(targets)[::-1]
            for c in CONCURRENCY:
                for kind in kinds if r % 2 == 0 else kinds[::-1]:
                    for name in order:
                        nreq, _ = _counts(args, name, c)
                        meter = _Meter(pids.get(name))
                        got = out[kind][name][c]
                        got["latency"].append(await meter.measure(
                            _latency(clients[kind, name], targets[name], payload, c, nreq)))
                        got["client_req"].append(meter.client * 1e3 / (c * nreq))
                        if meter.proxy is not None and name in pids:
                            got["proxy_req"].append(meter.proxy * 1e3 / (c * nreq))
                    # Streams: the floor and jarvis in alternating slices; the peer, much slower, in one piece.
                    paired = [n for n in order if n != "litellm"]
                    plan = _slices(paired, args.slices, r) + [n for n in order if n == "litellm"]
                    totals = {name: [0, 0.0, 0] for name in targets}  # chunks, seconds, streams
                    meters = {name: _Meter(pids.get(name)) for name in targets}
                    for name in plan:
                        _, nstream = _counts(args, name, c)
                        chunks, seconds = await meters[name].measure(
                            _stream_all(clients[kind, name], targets[name], spayload, c, nstream))
                        t = totals[name]
                        t[0], t[1], t[2] = t[0] + chunks, t[1] + seconds, t[2] + c * nstream
                    for name, (chunks, seconds, streams) in totals.items():
                        got = out[kind][name][c]
                        got["rate"].append(chunks / seconds)
                        got["client_stream"].append(meters[name].client * 1e3 / streams)
                        proxy = meters[name].proxy
                        if proxy is not None and name in pids:
                            got["proxy_stream"].append(proxy * 1e3 / streams)
    finally:
        for client in clients.values():
            await client.aclose()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=640,
                    help="non-streamed requests per target, client count and round, split over the clients")
    ap.add_argument("--streams", type=int, default=640,
                    help="streams per target, client count and slice, split over the clients")
    ap.add_argument("--slices", type=int, default=2,
                    help="slices each round's streams come in, the floor's and jarvis's alternating (ABBA)")
    ap.add_argument("--peer-requests", type=int, default=160,
                    help="non-streamed requests per client count and round for LiteLLM (about 60x slower here)")
    ap.add_argument("--peer-streams", type=int, default=64,
                    help="streams per client count and round for LiteLLM")
    args = ap.parse_args()

    kinds, kinds_note = _client_kinds()
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
    pids: Dict[str, Optional[int]] = {"jarvis": jarvis_proc.pid}
    try:
        _wait(targets["jarvis"], "/health")
        if litellm_proc is not None:
            try:
                _wait(f"http://127.0.0.1:{litellm_port}", "/health/liveliness", timeout=180)
                targets["litellm"] = f"http://127.0.0.1:{litellm_port}"
                pids["litellm"] = litellm_proc.pid
            except RuntimeError:
                code = litellm_proc.poll()
                litellm_note = (f"{litellm_note} did not answer within 180 s"
                                f"{'' if code is None else f' (exited with {code})'}; its log ends:\n{_tail(log)}")
        results = asyncio.run(_run(targets, pids, args, token, kinds))
    finally:
        jarvis_proc.terminate()
        jarvis_proc.join(5)
        backend_server.close()
        if litellm_proc is not None:
            litellm_proc.terminate()
            litellm_proc.wait(10)
        shutil.rmtree(scratch, ignore_errors=True)

    stack = http_stack()
    print(f"LiteLLM proxy: {litellm_note}" if "litellm" in targets else f"LiteLLM proxy left out: {litellm_note}")
    print(f"jarvis serve runs on {stack}")
    print(f"{args.rounds} rounds, interleaved; per target, client count and round {args.requests} requests and "
          f"{args.slices} x {args.streams} streams of {N_CHUNKS} chunks in alternating slices (LiteLLM: "
          f"{args.peer_requests} and {args.peer_streams}), split over the clients; medians of per-round values "
          "[lowest..highest round]; CPU in ms per request / per stream")
    if kinds_note:
        print(kinds_note)
    rows = [row for kind in kinds for row in _rows(kind, results[kind], targets)]
    for row in rows:
        if row["name"] == "direct":
            print(f"{row['kind']} client, {row['clients']} concurrent:")
        goal = "   (goal >= 0.80x)" if row["clients"] == 64 and row["name"] == "jarvis" else ""
        vs = "" if row["name"] == "direct" else f" ({row['added_ms']:+.2f} ms, {_spread(row, 'latency_ratio')})"
        rate_vs = "" if row["name"] == "direct" else f" ({_spread(row, 'rate_ratio')}){goal}"
        print(f"   {row['name']:<8} {row['latency_ms']:8.2f} ms/request{vs}   {row['rate']:9.0f} chunks/s{rate_vs}")
        print(f"   {'':<8} CPU client {_cpu(row, 'client_req')} / {_cpu(row, 'client_stream')}"
              + ("" if row["name"] == "direct" else f", proxy {_cpu(row, 'proxy_req')} / {_cpu(row, 'proxy_stream')}"))
    _write(rows, targets, args, litellm_note, stack, kinds, kinds_note)
    return 0


def _med(xs: List[float]) -> Optional[float]:
    return statistics.median(xs) if xs else None


def _rows(kind: str, results: Results, targets: Dict[str, str]) -> List[Dict[str, Any]]:
    """One row per client count and target for one client library: medians, per-round ratio spreads, CPU per
    item."""
    rows = []
    for c in CONCURRENCY:
        floor = results["direct"][c]
        for name in targets:
            r = results[name][c]
            lat = [x / f for x, f in zip(r["latency"], floor["latency"], strict=True)]
            rate = [x / f for x, f in zip(r["rate"], floor["rate"], strict=True)]
            added = [(x - f) * 1e3 for x, f in zip(r["latency"], floor["latency"], strict=True)]
            rows.append({
                "kind": kind, "clients": c, "name": name, "latency_ms": statistics.median(r["latency"]) * 1e3,
                "rate": statistics.median(r["rate"]), "added_ms": statistics.median(added),
                "latency_ratio": (statistics.median(lat), min(lat), max(lat)),
                "rate_ratio": (statistics.median(rate), min(rate), max(rate)),
                **{k: _med(r[k]) for k in KEYS[2:]},
            })
    return rows


def _spread(row: Dict[str, Any], key: str) -> str:
    med, lo, hi = row[key]
    return f"{med:.2f}x [{lo:.2f}..{hi:.2f}]"


def _cpu(row: Dict[str, Any], key: str) -> str:
    return "?" if row[key] is None else f"{row[key]:.2f}"


LABELS = {"direct": "backend directly (floor)", "jarvis": "jarvis serve", "litellm": "LiteLLM proxy (peer)"}


def _write(rows: List[Dict[str, Any]], targets: Dict[str, str], args: argparse.Namespace, litellm_note: str,
           stack: str, kinds: List[str], kinds_note: str) -> None:
    """The result for the report (``results.py``): the same figures as the printout."""
    cells = []
    ratios: Dict[str, Dict[str, Dict[int, Dict[str, Any]]]] = {}
    for row in rows:
        floor = row["name"] == "direct"
        lat, rate = row["latency_ratio"], row["rate_ratio"]
        cells.append([
            row["kind"], str(row["clients"]), LABELS[row["name"]], f"{row['latency_ms']:.2f}",
            "" if floor else f"{row['added_ms']:+.2f}",
            "1.00\u00d7" if floor else f"{fmt_ratio(lat[0])} ({lat[1]:.2f}\u2013{lat[2]:.2f})",
            f"{row['rate'] / 1e3:.1f}k",
            "1.00\u00d7" if floor else f"{fmt_ratio(rate[0])} ({rate[1]:.2f}\u2013{rate[2]:.2f})",
            f"{_cpu(row, 'client_req')} / {_cpu(row, 'client_stream')}",
            "" if floor else f"{_cpu(row, 'proxy_req')} / {_cpu(row, 'proxy_stream')}",
        ])
        if not floor:
            ratios.setdefault(row["kind"], {}).setdefault(row["name"], {})[row["clients"]] = {
                "latency": lat[0], "latency_range": list(lat[1:]), "rate": rate[0], "rate_range": list(rate[1:]),
                "added_ms": row["added_ms"], **{k: row[k] for k in KEYS[2:]}}
    budgets = []
    for kind in kinds:
        kept = ratios[kind]["jarvis"].get(64)
        if kept is not None:
            budgets.append(budget(
                f"jarvis serve chunk rate at 64 concurrent streams / the backend's ({kind} client)",
                f"{fmt_ratio(kept['rate'])} ({kept['rate_range'][0]:.2f}\u2013{kept['rate_range'][1]:.2f})",
                ">= 0.80\u00d7", kept["rate"] >= 0.8))
    write_result(
        "server", "jarvis serve",
        summary=(f"`jarvis serve` (uvicorn on {stack}, the openai-compat engine) in front of a canned backend, "
                 "against calling the backend directly with the same client, and LiteLLM's proxy over the same "
                 f"backend when it is installed. Two client libraries, each with a pooled client per target "
                 f"configured alike: {' and '.join(kinds)}{f' ({kinds_note})' if kinds_note else ''}. "
                 f"{args.rounds} rounds, libraries and targets in alternating order, of {args.requests} requests "
                 f"and {args.slices} \u00d7 {args.streams} streams of {N_CHUNKS} chunks per library, target and "
                 "client count, the floor's and jarvis's stream slices alternating (A B B A ...; LiteLLM: "
                 f"{args.peer_requests} requests and {args.peer_streams} streams in one piece), split over the "
                 "clients. Ratios are medians of the per-round ratios (lowest\u2013highest round in brackets). "
                 "LiteLLM: " + (litellm_note if "litellm" in targets else f"left out: {litellm_note}") + "."),
        tables=[table(
            "Per client library and concurrent client count: mean request latency, aggregate stream chunk rate, "
            "and CPU per request / per stream",
            ["library", "clients", "target", "ms/request", "added ms", "latency vs floor", "chunks/s",
             "rate vs floor", "client CPU ms", "proxy CPU ms"],
            cells,
            notes=["CPU: milliseconds of CPU time per non-streamed request / per stream of the benchmark's client "
                   "and of the proxy's process, medians over rounds; they do not depend on what else the machine "
                   "was running the way the rates do.",
                   "With one client nothing overlaps: the proxy reads, decodes and re-encodes each stream before the "
                   "client parses it, so the rate ratio is about client CPU / (client CPU + proxy CPU). With many "
                   "clients the client and the proxy work side by side on different cores, and the ratio depends "
                   "on a core being free for the proxy.",
                   "httpx's pool looks at every connection it holds whenever a request starts or ends, so its CPU "
                   "per stream grows with the connections a target keeps it holding; aiohttp's does not. A proxy "
                   "holds each request a little longer than the backend, so under httpx it is charged twice: in "
                   "its own CPU and in the client's (compare the client CPU columns)."])],
        budgets=budgets,
        data={"ratios": ratios, "http_stack": stack, "libraries": kinds},
    )


if __name__ == "__main__":
    sys.exit(main())
