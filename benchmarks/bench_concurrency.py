"""Chunk rate under concurrency: N async streams at once against one fast loopback server, for jarvis's
engines, raw httpx line loops and the official async clients, side by side in one run.

    python benchmarks/bench_concurrency.py [--rounds 5] [--concurrency 1 16 64 256] [--chunks 200]
                                           [--min-chunks 12800] [--only NAME ...]

The server (``loopback.py``, its own process) answers every stream with ``--chunks`` content chunks sent in
one write: SSE for the OpenAI-compatible clients, NDJSON for the Ollama ones. Each client is one
long-lived client object, as an application holds one: the engines with ``max_connections`` set to the
widest N (what a user running that many streams sets; keep-alive follows it), the others with their
library's default connection limits:

* ``httpx SSE loop`` / ``httpx NDJSON loop``: one ``httpx.AsyncClient``, ``aiter_lines`` and ``json.loads``
  per line (the floors: what a hand-written client does);
* ``jarvis llamacpp``, ``jarvis cloud (openai)``, ``jarvis ollama``: the engines' ``stream_full``;
* ``openai.AsyncOpenAI`` and ``ollama.AsyncClient``, when installed.

A burst starts N streams together (``asyncio.gather``); each reads its stream to the end and its text is
checked. Bursts repeat until at least ``--min-chunks`` chunks were read (so one stream is not a single 2 ms
sample). Rounds are interleaved: every round runs every client at every N, in a rotated order.

Reported, medians over rounds: the aggregate chunk rate (chunks/s over the bursts' wall time), each client's
rate at N as a fraction of its own one-stream rate (goal for the engines: at least 0.8x at 256), the
engines' rate against their floor at the same N, and the TCP connections the server accepted per burst.
Connection reuse is also measured where it matters: one burst at the widest N after an idle pause longer
than httpx's keep-alive expiry, and bursts at the widest N from a second server that paces its chunks
(``--paced-chunks`` chunks ``--pace-ms`` apart), so that every stream holds its connection to the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import sys
import time
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

from loopback import MODEL, OLLAMA_TEXT, LoopbackServer, openai_text
from results import budget, fmt_ratio, table, write_result

MESSAGES = [{"role": "user", "content": "Count to two hundred."}]
GOAL = 0.8
#: Every client's timeouts, connect included: with 256 streams on one event loop a connection can wait
#: seconds for its turn, and a library's default connect timeout (5 s) would end the run, not measure it.
TIMEOUT_S = 60.0
#: Longer than httpx's default keep-alive expiry (5 s).
IDLE_S = 6.0
#: Measured bursts of paced streams per client (after one that fills the pool).
PACED_BURSTS = 2
#: client name -> (protocol, floor name, whether it is one of ours).
CLIENTS: Dict[str, Tuple[str, str, bool]] = {
    "httpx SSE loop": ("openai", "httpx SSE loop", False),
    "jarvis llamacpp": ("openai", "httpx SSE loop", True),
    "jarvis cloud (openai)": ("openai", "httpx SSE loop", True),
    "openai.AsyncOpenAI": ("openai", "httpx SSE loop", False),
    "httpx NDJSON loop": ("ollama", "httpx NDJSON loop", False),
    "jarvis ollama": ("ollama", "httpx NDJSON loop", True),
    "ollama.AsyncClient": ("ollama", "httpx NDJSON loop", False),
}

Stream = Callable[[], Awaitable[str]]


def make_clients(url: str, only: Optional[List[str]], connections: int) -> Tuple[Dict[str, Stream], List[Callable[[], Awaitable[None]]], Dict[str, str]]:
    """``(streams, closers, versions)``: one coroutine function per client that reads one whole stream and
    returns its text, what closes each client, and the peer libraries' versions (or why one is missing).
    The engines get ``max_connections=connections`` (the setting a user sets to the concurrency they run);
    the other clients keep their library's default limits."""
    import httpx

    from jarvis_core import create_engine

    streams: Dict[str, Stream] = {}
    closers: List[Callable[[], Awaitable[None]]] = []
    versions: Dict[str, str] = {"httpx": httpx.__version__}
    raw = httpx.AsyncClient(base_url=url, timeout=TIMEOUT_S)
    closers.append(raw.aclose)
    sse_body = {"model": MODEL, "messages": MESSAGES, "max_tokens": 256, "stream": True}
    ndjson_body = {"model": MODEL, "messages": MESSAGES, "stream": True, "options": {"num_predict": 256}}

    async def sse_loop() -> str:
        out = []
        async with raw.stream("POST", "/v1/chat/completions", json=sse_body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    choices = json.loads(line[6:])["choices"]
                    if choices and choices[0]["delta"].get("content"):
                        out.append(choices[0]["delta"]["content"])
        return "".join(out)

    async def ndjson_loop() -> str:
        out = []
        async with raw.stream("POST", "/api/chat", json=ndjson_body) as response:
            async for line in response.aiter_lines():
                if line:
                    text = json.loads(line)["message"]["content"]
                    if text:
                        out.append(text)
        return "".join(out)

    def engine_stream(engine: Any, model: str) -> Stream:
        async def run() -> str:
            out = []
            async for chunk in engine.stream_full(MESSAGES, model=model, max_tokens=256):
                if chunk.content:
                    out.append(chunk.content)
            return "".join(out)

        closers.append(engine.aclose)
        return run

    streams["httpx SSE loop"] = sse_loop
    streams["httpx NDJSON loop"] = ndjson_loop
    timeouts = {"timeout": TIMEOUT_S, "connect_timeout": TIMEOUT_S, "max_connections": connections}
    streams["jarvis llamacpp"] = engine_stream(create_engine("llamacpp", host=url, **timeouts), MODEL)
    cloud = create_engine("cloud", openai_api_key="sk-bench-0000000000", openai_base_url=url + "/v1", environ={},
                          **timeouts)
    streams["jarvis cloud (openai)"] = engine_stream(cloud, "openai/" + MODEL)
    streams["jarvis ollama"] = engine_stream(create_engine("ollama", host=url, **timeouts), MODEL)

    try:
        import openai
    except ImportError as exc:
        versions["openai"] = f"not installed ({exc}); left out"
    else:
        versions["openai"] = openai.__version__
        sdk = openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-bench-0000000000", max_retries=0, timeout=TIMEOUT_S)
        closers.append(sdk.close)

        async def openai_sdk() -> str:
            out = []
            stream = await sdk.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=256,
                                                       stream=True)
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    out.append(chunk.choices[0].delta.content)
            return "".join(out)

        streams["openai.AsyncOpenAI"] = openai_sdk
    try:
        import ollama
    except ImportError as exc:
        versions["ollama"] = f"not installed ({exc}); left out"
    else:
        from importlib.metadata import version

        versions["ollama"] = version("ollama")
        client = ollama.AsyncClient(host=url, timeout=TIMEOUT_S)

        async def ollama_client() -> str:
            out = []
            async for part in await client.chat(model=MODEL, messages=MESSAGES, stream=True, options={"num_predict": 256}):
                if part.message.content:
                    out.append(part.message.content)
            return "".join(out)

        async def close_ollama() -> None:
            await client._client.aclose()  # the library has no public close

        streams["ollama.AsyncClient"] = ollama_client
        closers.append(close_ollama)
    if only:
        streams = {k: v for k, v in streams.items() if k in only or CLIENTS[k][1] == k}
    return {k: streams[k] for k in CLIENTS if k in streams}, closers, versions


async def burst(stream: Stream, expected: str, n: int) -> float:
    """Seconds for ``n`` concurrent streams, each read to the end and checked."""
    start = time.perf_counter()
    texts = await asyncio.gather(*(stream() for _ in range(n)))
    elapsed = time.perf_counter() - start
    bad = sum(1 for t in texts if t != expected)
    if bad:
        raise SystemExit(f"{bad} of {n} concurrent streams returned the wrong text")
    return elapsed


async def measure(stream: Stream, expected: str, n: int, min_chunks: int, chunks: int,
                  server: LoopbackServer) -> Tuple[float, float]:
    """``(chunks/s, new connections per burst)`` of bursts of ``n`` concurrent streams, after one burst that
    is not counted: the pool is as the previous bursts left it, not as the other clients' turns did."""
    await burst(stream, expected, n)
    bursts = max(1, math.ceil(min_chunks / (n * chunks)))
    before = server.connections()
    elapsed = 0.0
    for _ in range(bursts):
        elapsed += await burst(stream, expected, n)
    return bursts * n * chunks / elapsed, (server.connections() - before) / bursts


async def after_idle(streams: Dict[str, Stream], expected: Dict[str, str], n: int, chunks: int,
                     server: LoopbackServer) -> Dict[str, Tuple[float, float]]:
    """``{client: (chunks/s, new connections)}`` of one burst of ``n`` streams after every client was idle
    for longer than httpx's keep-alive expiry (5 s): what a burst after a pause costs."""
    await asyncio.sleep(IDLE_S)
    out = {}
    for name, stream in streams.items():
        before = server.connections()
        elapsed = await burst(stream, expected[CLIENTS[name][0]], n)
        out[name] = (n * chunks / elapsed, float(server.connections() - before))
    return out


async def paced(args: argparse.Namespace, n: int) -> Dict[str, Tuple[float, float]]:
    """``{client: (new connections per burst, burst seconds)}`` for bursts of ``n`` streams from a server that
    paces its chunks like a model server, so that every stream holds its connection to the end: after one
    burst, how many connections each further burst opens (what the pool keeps for the next burst)."""
    out = {}
    with LoopbackServer(args.paced_chunks, pace_ms=args.pace_ms) as server:
        streams, closers, _ = make_clients(server.url, args.only, n)
        expected = {"openai": openai_text(args.paced_chunks), "ollama": OLLAMA_TEXT * args.paced_chunks}
        try:
            for name, stream in streams.items():
                text = expected[CLIENTS[name][0]]
                await burst(stream, text, n)
                before = server.connections()
                seconds = [await burst(stream, text, n) for _ in range(PACED_BURSTS)]
                out[name] = ((server.connections() - before) / PACED_BURSTS, statistics.median(seconds))
        finally:
            for close in closers:
                await close()
    return out


Results = Dict[str, Dict[int, Dict[str, List[float]]]]
Bursts = Dict[str, Tuple[float, float]]


async def run(server: LoopbackServer, args: argparse.Namespace) -> Tuple[Results, Bursts, Bursts, Dict[str, str]]:
    """Every round, every N, every client (rotated); then one burst at the widest N after an idle pause, and
    paced bursts at the widest N."""
    streams, closers, versions = make_clients(server.url, args.only, max(args.concurrency))
    expected = {"openai": openai_text(args.chunks), "ollama": OLLAMA_TEXT * args.chunks}
    out: Results = {name: {n: {"rate": [], "conns": []} for n in args.concurrency} for name in streams}
    try:
        for name, stream in streams.items():  # warm-up and correctness: imports, pools, adapters
            await burst(stream, expected[CLIENTS[name][0]], 16)
        names = list(streams)
        for r in range(args.rounds):
            for n in args.concurrency:
                for name in names[r % len(names):] + names[:r % len(names)]:
                    rate, conns = await measure(streams[name], expected[CLIENTS[name][0]], n, args.min_chunks,
                                                args.chunks, server)
                    out[name][n]["rate"].append(rate)
                    out[name][n]["conns"].append(conns)
            print(f"round {r + 1}/{args.rounds} done", flush=True)
        idle = await after_idle(streams, expected, max(args.concurrency), args.chunks, server)
    finally:
        for close in closers:
            await close()
    return out, idle, await paced(args, max(args.concurrency)), versions


def _spread(values: List[float]) -> str:
    return f"{fmt_ratio(statistics.median(values))} ({min(values):.2f}-{max(values):.2f})"


def _print_table(t: Dict[str, Any]) -> None:
    print(f"\n## {t['caption']}")
    rows = [t["headers"], *t["rows"]]
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(t["headers"]))]
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def report(results: Results, idle: Bursts, slow: Bursts, versions: Dict[str, str], args: argparse.Namespace) -> int:
    med = statistics.median
    ns = args.concurrency
    one, widest = ns[0], max(ns)
    print(f"# bench_concurrency: {args.rounds} rounds; streams of {args.chunks} chunks; at least {args.min_chunks} "
          f"chunks per client per N per round; python {sys.version.split()[0]}; "
          + ", ".join(f"{k} {v}" for k, v in versions.items()))
    rate_rows, scale_rows, floor_rows, conn_rows = [], [], [], []
    scaling: Dict[str, Dict[int, List[float]]] = {}
    budgets = []
    machine: List[str] = []
    for name, per_n in results.items():
        rate_rows.append([name, *(f"{med(per_n[n]['rate']) / 1e3:.1f}k" for n in ns)])
        scaling[name] = {n: [x / base for x, base in zip(per_n[n]["rate"], per_n[one]["rate"], strict=True)]
                         for n in ns}
        scale_rows.append([name, *(_spread(scaling[name][n]) for n in ns[1:])])
        conn_rows.append([name, *(f"{med(per_n[n]['conns']):.1f}" for n in ns),
                          f"{idle[name][1]:.0f}", f"{idle[name][0] / 1e3:.1f}k",
                          f"{slow[name][0]:.0f}"])
        floor = CLIENTS[name][1]
        if floor != name and floor in results:
            floor_rows.append([name, floor, *(_spread([x / f for x, f in zip(per_n[n]["rate"], results[floor][n]["rate"],
                                                                                strict=True)]) for n in ns)])
        if CLIENTS[name][2] and widest != one:
            kept = med(scaling[name][widest])
            budgets.append(budget(f"{name}: chunk rate at {widest} concurrent streams / its rate at {one}",
                                  fmt_ratio(kept), f">= {fmt_ratio(GOAL)}", kept >= GOAL))
            if floor in results:
                against = med([x / f for x, f in zip(per_n[widest]["rate"], results[floor][widest]["rate"], strict=True)])
                machine.append(f"{name} keeps {fmt_ratio(kept)} of its one-stream rate at N={widest}, where its floor "
                               f"({floor}) keeps {fmt_ratio(med(scaling[floor][widest]))}; at N={widest} it runs at "
                               f"{fmt_ratio(against)} the floor's rate.")
    heads = [f"N={n}" for n in ns]
    tables = [
        table(f"Aggregate chunk rate (chunks/s) with N streams of {args.chunks} chunks at once (median over rounds)",
              ["client", *heads], rate_rows),
        table(f"Rate at N as a fraction of the same client's rate at N={one} (median, min-max over rounds); "
              f"goal for jarvis engines: at least {fmt_ratio(GOAL)} at N={widest}", ["client", *heads[1:]], scale_rows,
              notes=[*machine, "A floor is a bare line loop on httpx's own pool: what it loses at high N is the machine "
                     "(the loopback server's threads and the client share 2 cores, and one event loop wakes hundreds "
                     "of tasks) plus httpx's pool, whose cost grows with the streams in flight; the engines run on "
                     "aiohttp under httpx's transport seam (jarvis_core.engine.pool), whose pool does not. Where an engine keeps less than its "
                     "floor, the difference is its own per-stream cost."]),
        table("Rate against the floor at the same N (median, min-max of per-round ratios)",
              ["client", "floor", *heads], floor_rows),
        table(f"New TCP connections per burst of N streams (pool warm from a burst at the same N); one burst of "
              f"{widest} after {IDLE_S:g} s idle; bursts of {widest} paced streams ({args.paced_chunks} chunks "
              f"{args.pace_ms:g} ms apart), pool warm",
              ["client", *heads, f"after idle, N={widest}", "its chunks/s", f"paced, N={widest}"],
              conn_rows,
              notes=["With each stream sent in one write the client, not the server, sets the pace: streams hardly "
                     "overlap on the wire, so a few connections serve a whole burst. A paced stream holds its "
                     "connection to the end, as with a model server: then a burst needs a connection per stream, "
                     "and the pool keeps only its keep-alive limit for the next one (httpx: 20 per client, dropped "
                     "after 5 s idle; the openai SDK: 100; the engines: max_connections, here the widest N). After "
                     "an idle pause every stream opens a connection."]),
    ]
    for t in tables:
        _print_table(t)
    print()
    for b in budgets:
        print(f"{b['what']}: {b['value']} (goal {b['budget']}) {'met' if b['met'] else 'NOT met'}")
    write_result(
        "concurrency", "Concurrent streams",
        summary=(f"N async streams at once (N = {', '.join(map(str, ns))}), each {args.chunks} content chunks sent "
                 "in one write by a loopback server in its own process (SSE for the OpenAI-compatible clients, "
                 "NDJSON for the Ollama ones); one long-lived client object per library, the engines with "
                 f"max_connections={max(ns)} (docs/config.md), the others with their library's default connection "
                 f"limits, all with {TIMEOUT_S:g} s timeouts (connect included). Each point is one uncounted burst, then bursts until {args.min_chunks} "
                 f"chunks; {args.rounds} interleaved rounds, clients in rotated order. Floors: raw httpx line loops "
                 "(`aiter_lines` + `json.loads`). Peers, same run: "
                 + ", ".join(f"{k} {v}" for k, v in versions.items()) + "."),
        tables=tables, budgets=budgets,
        data={"concurrency": ns, "chunks": args.chunks, "versions": versions, "idle_seconds": IDLE_S,
              "paced": {"chunks": args.paced_chunks, "pace_ms": args.pace_ms,
                        "conns_per_burst": {k: v[0] for k, v in slow.items()},
                        "burst_seconds": {k: v[1] for k, v in slow.items()}},
              "clients": {name: {"ours": CLIENTS[name][2], "floor": CLIENTS[name][1],
                                 "rate": {str(n): med(per_n[n]["rate"]) for n in ns},
                                 "kept": {str(n): med(scaling[name][n]) for n in ns},
                                 "conns_per_burst": {str(n): med(per_n[n]["conns"]) for n in ns},
                                 "after_idle": {"rate": idle[name][0], "conns": idle[name][1]}}
                          for name, per_n in results.items()}},
    )
    return 0 if all(b["met"] for b in budgets) or not args.strict else 1


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64, 256],
                    help="stream counts; the first is the base of the scaling ratios (default 1 16 64 256)")
    ap.add_argument("--chunks", type=int, default=200, help="content chunks per stream (default 200)")
    ap.add_argument("--min-chunks", type=int, default=12800, help="chunks per client per N per round (default 12800)")
    ap.add_argument("--paced-chunks", type=int, default=20, help="chunks per paced stream (default 20)")
    ap.add_argument("--pace-ms", type=float, default=5.0, help="ms between a paced stream's chunks (default 5)")
    ap.add_argument("--only", nargs="+", choices=list(CLIENTS), help="these clients (and their floors) only")
    ap.add_argument("--strict", action="store_true", help="exit 1 when an engine keeps less than 0.8x at the widest N")
    args = ap.parse_args(argv)
    with LoopbackServer(args.chunks) as server:
        results, idle, slow, versions = asyncio.run(run(server, args))
    return report(results, idle, slow, versions, args)


if __name__ == "__main__":
    sys.exit(main())
