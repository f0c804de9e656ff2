"""Ollama engine overhead vs the floor, measured side by side in one run (docs/contract.md §10).

    python benchmarks/bench_ollama.py [--rounds 10] [--requests 200] [--streams 30] [--chunks 200]
                                      [--stream-chunks 1000]

The benchmarks' loopback server (``loopback.py``) answers Ollama's ``/api/chat`` from a child process (so
its CPU is not charged to the clients). Each round runs every client in a rotated order:

* non-streamed: a raw pooled ``httpx.Client`` posting the same body our engine sends and decoding the
  JSON (the floor), ``OllamaEngine.generate``, and the official ``ollama`` client when it is importable;
* streamed (``--stream-chunks`` NDJSON lines per answer, sent in one write, from a second loopback server): a
  raw ``httpx.AsyncClient`` line loop with ``json.loads`` per line (the floor), ``OllamaEngine.stream`` and
  ``stream_full``, and ``ollama.AsyncClient`` when importable. A stream's chunk rate is its chunks over the
  time from the call to its last chunk: the engines decode a whole network read before its first chunk
  comes out, which a first-to-last-chunk window would not count.

Reported: medians, and per-round ratios to the floor (median over rounds, min-max in brackets). Budgets:
per request ≤ 1.1x the floor; chunk rate of ``stream`` ≥ 1.0x and of ``stream_full`` ≥ 0.9x the floor's.
Every answer is checked; new connections per call are counted by the server.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from loopback import OLLAMA_TEXT as WORD
from loopback import LoopbackServer
from results import budget, fmt_ratio, table, write_result

MODEL = "llama3.2"
MESSAGES = [{"role": "user", "content": "why is the sky blue?"}]


# -- clients ----------------------------------------------------------------------------------------
def _median_us(samples: List[float]) -> float:
    return statistics.median(samples) * 1e6


class Bench:
    def __init__(self, url: str, stream_url: str, args: argparse.Namespace) -> None:
        import httpx

        from jarvis_engine_ollama.engine import OllamaEngine

        self.url, self.stream_url, self.args = url, stream_url, args
        self.expected = WORD * args.chunks
        self.stream_expected = WORD * args.stream_chunks
        self.engine = OllamaEngine(host=url)
        self.stream_engine = OllamaEngine(host=stream_url)
        self.floor = httpx.Client(base_url=url, timeout=30)
        self.afloor: Optional[httpx.AsyncClient] = None
        # The floor sends exactly the body the engine sends.
        req = self.engine._request(MESSAGES, MODEL, None, 256, None, {}, stream=False)
        self.body = req.body
        self.stream_body = {**req.body, "stream": True}
        try:
            import ollama
        except ImportError:
            ollama = None
        self.ollama = ollama
        self.ollama_client = ollama.Client(host=url) if ollama else None
        self.ollama_async: Any = None

    def connections(self) -> int:
        return int(self.floor.get("/stats").json()["connections"])

    def stream_connections(self) -> int:
        return int(self.floor.get(self.stream_url + "/stats").json()["connections"])

    # non-streamed -------------------------------------------------------------------------------
    def floor_request(self) -> str:
        return self.floor.post("/api/chat", json=self.body).json()["message"]["content"]

    def engine_request(self) -> str:
        return self.engine.generate(MESSAGES, model=MODEL, max_tokens=256).content

    def ollama_request(self) -> str:
        return self.ollama_client.chat(model=MODEL, messages=MESSAGES, options=self.body["options"]).message.content

    # streamed ------------------------------------------------------------------------------------
    async def floor_stream(self, marks: List[float]) -> str:
        out = []
        async with self.afloor.stream("POST", "/api/chat", json=self.stream_body) as r:
            async for line in r.aiter_lines():
                if line:
                    text = json.loads(line)["message"]["content"]
                    if text:
                        marks.append(time.perf_counter())
                        out.append(text)
        return "".join(out)

    async def engine_stream(self, marks: List[float]) -> str:
        out = []
        async for text in self.stream_engine.stream(MESSAGES, model=MODEL, max_tokens=256):
            marks.append(time.perf_counter())
            out.append(text)
        return "".join(out)

    async def engine_stream_full(self, marks: List[float]) -> str:
        out = []
        async for chunk in self.stream_engine.stream_full(MESSAGES, model=MODEL, max_tokens=256):
            if chunk.content:
                marks.append(time.perf_counter())
                out.append(chunk.content)
        return "".join(out)

    async def ollama_stream(self, marks: List[float]) -> str:
        out = []
        async for part in await self.ollama_async.chat(model=MODEL, messages=MESSAGES, options=self.body["options"],
                                                       stream=True):
            text = part.message.content
            if text:
                marks.append(time.perf_counter())
                out.append(text)
        return "".join(out)


def run(args: argparse.Namespace) -> int:
    with LoopbackServer(chunks=args.chunks) as server, LoopbackServer(chunks=args.stream_chunks) as streams:
        return _measure(Bench(server.url, streams.url, args), args)


def _measure(b: Bench, args: argparse.Namespace) -> int:
    import httpx

    sync_clients: Dict[str, Callable[[], str]] = {"httpx floor": b.floor_request, "jarvis generate": b.engine_request}
    if b.ollama:
        sync_clients["ollama client"] = b.ollama_request
    per_round: Dict[str, List[float]] = {k: [] for k in sync_clients}
    conns: Dict[str, int] = {k: 0 for k in sync_clients}
    for name, fn in sync_clients.items():  # warm-up and correctness
        for _ in range(20):
            assert fn() == b.expected, f"{name} returned the wrong text"
    names = list(sync_clients)
    for r in range(args.rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            fn = sync_clients[name]
            before = b.connections()
            samples = []
            for _ in range(args.requests):
                t0 = time.perf_counter()
                fn()
                samples.append(time.perf_counter() - t0)
            conns[name] += b.connections() - before
            per_round[name].append(statistics.median(samples))

    async def streams() -> Tuple[Dict[str, List[float]], Dict[str, List[float]], Dict[str, int]]:
        b.afloor = httpx.AsyncClient(base_url=b.stream_url, timeout=30)
        if b.ollama:
            b.ollama_async = b.ollama.AsyncClient(host=b.stream_url)
        clients = {"httpx line loop": b.floor_stream, "jarvis stream": b.engine_stream,
                   "jarvis stream_full": b.engine_stream_full}
        if b.ollama:
            clients["ollama client"] = b.ollama_stream
        rate: Dict[str, List[float]] = {k: [] for k in clients}
        total: Dict[str, List[float]] = {k: [] for k in clients}
        sconns: Dict[str, int] = {k: 0 for k in clients}
        for name, fn in clients.items():
            for _ in range(5):
                assert await fn([]) == b.stream_expected, f"{name} streamed the wrong text"
        keys = list(clients)
        for r in range(args.rounds):
            for name in keys[r % len(keys):] + keys[: r % len(keys)]:
                rates, totals = [], []
                before = b.stream_connections()
                for _ in range(args.streams):
                    marks: List[float] = []
                    t0 = time.perf_counter()
                    await clients[name](marks)
                    totals.append(time.perf_counter() - t0)
                    rates.append(len(marks) / (marks[-1] - t0))
                sconns[name] += b.stream_connections() - before
                rate[name].append(statistics.median(rates))
                total[name].append(statistics.median(totals))
        await b.afloor.aclose()
        await b.stream_engine.aclose()
        return rate, total, sconns

    rate, total, sconns = asyncio.run(streams())
    print(f"# bench_ollama: {args.rounds} rounds; {args.requests} requests and {args.streams} streams of "
          f"{args.chunks} chunks per client per round; python {sys.version.split()[0]}; "
          f"ollama client {'v' + b.ollama.__version__ if b.ollama and hasattr(b.ollama, '__version__') else ('present' if b.ollama else 'not installed (skipped)')}")
    print("\n## non-streamed request (lower is better; budget: jarvis <= 1.10x floor)")
    floor = per_round["httpx floor"]
    ok = True
    for name in sync_clients:
        ratios = [x / f for x, f in zip(per_round[name], floor, strict=True)]
        med = statistics.median(ratios)
        print(f"{name:20s} median {statistics.median(per_round[name]) * 1e6:8.1f} us   ratio {med:5.2f}x "
              f"[{min(ratios):.2f}-{max(ratios):.2f}]   new conns/request {conns[name] / (args.rounds * args.requests):.3f}")
        if name == "jarvis generate" and med > 1.10:
            ok = False
    print("\n## streamed (chunk rate from the call to the last chunk: higher is better; budgets: jarvis stream "
          ">= 1.00x, stream_full >= 0.90x the floor)")
    frate, ftotal = rate["httpx line loop"], total["httpx line loop"]
    for name in rate:
        rr = [x / f for x, f in zip(rate[name], frate, strict=True)]
        tr = [x / f for x, f in zip(total[name], ftotal, strict=True)]
        print(f"{name:20s} {statistics.median(rate[name]) / 1e3:7.1f}k chunks/s   rate ratio {statistics.median(rr):5.2f}x "
              f"[{min(rr):.2f}-{max(rr):.2f}]   stream total {statistics.median(total[name]) * 1e3:6.2f} ms "
              f"({statistics.median(tr):.2f}x)   new conns/stream {sconns[name] / (args.rounds * args.streams):.3f}")
        if (name == "jarvis stream" and statistics.median(rr) < 1.00) or (
                name == "jarvis stream_full" and statistics.median(rr) < 0.90):
            ok = False
    print(f"\nbudgets: {'met' if ok else 'NOT met'}")
    b.engine.close()
    b.floor.close()
    _write(args, b, sync_clients, per_round, conns, rate, total, sconns)
    return 0


#: How the report's plots name the clients of this benchmark (beside the other benchmarks' clients).
_PLOT_NAMES = {"jarvis generate": "jarvis ollama", "jarvis stream": "jarvis ollama stream",
               "jarvis stream_full": "jarvis ollama stream_full", "ollama client": "ollama.Client",
               "httpx floor": "httpx", "httpx line loop": "httpx"}


def _write(args: argparse.Namespace, b: Bench, sync_clients: Dict[str, Any], per_round: Dict[str, List[float]],
           conns: Dict[str, int], rate: Dict[str, List[float]], total: Dict[str, List[float]],
           sconns: Dict[str, int]) -> None:
    """The result for the report (``results.py``): the same figures as the printout."""
    med = statistics.median
    if b.ollama:
        from importlib.metadata import version as dist_version

        version = dist_version("ollama")
    else:
        version = ""

    def label(name: str) -> str:
        return f"ollama client {version} (peer)".replace("  ", " ") if name == "ollama client" else name

    def spread(values: List[float], floor: List[float]) -> Tuple[float, str]:
        ratios = [x / f for x, f in zip(values, floor, strict=True)]
        return med(ratios), f"{fmt_ratio(med(ratios))} ({min(ratios):.2f}-{max(ratios):.2f})"

    requests, streams = args.rounds * args.requests, args.rounds * args.streams
    req_rows, stream_rows = [], []
    req_ratio: Dict[str, float] = {}
    rate_ratio: Dict[str, float] = {}
    for name in sync_clients:
        req_ratio[name], cell = spread(per_round[name], per_round["httpx floor"])
        req_rows.append([label(name), f"{med(per_round[name]) * 1e6:.0f}", cell, f"{conns[name] / requests:.3f}"])
    for name in rate:
        rate_ratio[name], cell = spread(rate[name], rate["httpx line loop"])
        stream_rows.append([label(name), f"{med(rate[name]) / 1e3:.1f}k", cell,
                            f"{med(total[name]) * 1e3:.2f}", f"{sconns[name] / streams:.3f}"])
    write_result(
        "ollama", "Ollama engine",
        summary=(f"`OllamaEngine` against a raw pooled httpx client sending the same body, and the official `ollama` "
                 f"client, over a loopback server in its own process; {args.rounds} rounds of {args.requests} requests "
                 f"and {args.streams} streams of {args.stream_chunks} NDJSON lines per client, clients in rotated order; "
                 "a stream's chunk rate counts from the call to its last chunk; ratios are medians of per-round "
                 "ratios (min-max in brackets)."),
        tables=[table("Per non-streamed request (lower is better)",
                      ["client", "median \u00b5s", "vs floor", "new conns/request"], req_rows),
                table(f"Stream chunk rate, {args.stream_chunks} chunks per stream (from the call to the last chunk; "
                      "higher is better)",
                      ["client", "chunks/s", "vs floor", "stream total ms", "new conns/stream"], stream_rows)],
        budgets=[budget("jarvis `generate` / floor", fmt_ratio(req_ratio["jarvis generate"]), "<= 1.10\u00d7",
                        req_ratio["jarvis generate"] <= 1.10),
                 budget("jarvis `stream` chunk rate / floor", fmt_ratio(rate_ratio["jarvis stream"]), ">= 1.00\u00d7",
                        rate_ratio["jarvis stream"] >= 1.00),
                 budget("jarvis `stream_full` chunk rate / floor", fmt_ratio(rate_ratio["jarvis stream_full"]),
                        ">= 0.90\u00d7", rate_ratio["jarvis stream_full"] >= 0.90)],
        data={"request_us": {_PLOT_NAMES.get(k, k): med(per_round[k]) * 1e6 for k in sync_clients},
              "request_ratio": {_PLOT_NAMES.get(k, k): v for k, v in req_ratio.items()},
              "chunk_rate_ratio": {_PLOT_NAMES.get(k, k): v for k, v in rate_ratio.items()}, "ollama_version": version},
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--streams", type=int, default=30)
    parser.add_argument("--chunks", type=int, default=200, help="words of the non-streamed answer (default 200)")
    parser.add_argument("--stream-chunks", type=int, default=1000, help="lines per streamed answer (default 1000)")
    args = parser.parse_args()
    gc.collect()
    os.environ.pop("OLLAMA_HOST", None)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
