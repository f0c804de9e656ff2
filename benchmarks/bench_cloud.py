"""CloudEngine overhead vs a raw pooled httpx client, side by side in one run (docs/contract.md §10).

    python benchmarks/bench_cloud.py [--rounds 7] [--requests 200] [--streams 20] [--chunks 200]
                                     [--stream-chunks 1000]

A minimal keep-alive HTTP/1.1 server speaking Anthropic's ``/v1/messages`` (JSON and SSE) and Gemini's
``:generateContent`` / ``:streamGenerateContent`` runs in a child process. Each round runs, in rotated order:

* non-streamed: a raw pooled ``httpx.Client`` posting the body the engine sends and decoding the JSON (the
  floor) vs ``CloudEngine.generate`` (which also builds the provider body and normalizes the answer);
* streamed (``--stream-chunks`` events per answer): a raw ``httpx.AsyncClient`` line loop with ``json.loads``
  per ``data:`` line (the floor) vs ``CloudEngine.stream_full``, each timed from the call to the end of the
  stream.

Reported: per-round ratios to the floor (median, min-max). Budgets: per request ≤ 1.1x; chunk rate ≥ 0.9x.
The server counts TCP connections, so a client that does not pool shows up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List

from results import budget, fmt_ratio, table, write_result

TEXT = " sky"


def _anthropic_bodies(chunks: int) -> Dict[str, bytes]:
    whole = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-bench",
             "content": [{"type": "text", "text": TEXT * chunks}], "stop_reason": "end_turn",
             "usage": {"input_tokens": 20, "cache_read_input_tokens": 0, "output_tokens": chunks}}
    events = [("message_start", {"type": "message_start", "message": {"model": "claude-bench", "usage": {"input_tokens": 20}}}),
              ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})]
    events += [("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": TEXT}})
               for _ in range(chunks)]
    events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
               ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": chunks}}),
               ("message_stop", {"type": "message_stop"})]
    sse = "".join(f"event: {n}\ndata: {json.dumps(d, separators=(',', ':'))}\n\n" for n, d in events)
    return {"json": json.dumps(whole).encode(), "sse": sse.encode()}


def _gemini_bodies(chunks: int) -> Dict[str, bytes]:
    usage = {"promptTokenCount": 20, "candidatesTokenCount": chunks, "totalTokenCount": 20 + chunks}
    whole = {"candidates": [{"content": {"role": "model", "parts": [{"text": TEXT * chunks}]}, "finishReason": "STOP"}],
             "usageMetadata": usage, "modelVersion": "gemini-bench"}
    lines = []
    for i in range(chunks):
        cand: Dict[str, Any] = {"content": {"role": "model", "parts": [{"text": TEXT}]}}
        if i == chunks - 1:
            cand["finishReason"] = "STOP"
        lines.append("data: " + json.dumps({"candidates": [cand], "usageMetadata": usage}, separators=(",", ":")) + "\r\n\r\n")
    return {"json": json.dumps(whole).encode(), "sse": "".join(lines).encode()}


def serve(port_out: Any, chunks: int, stream_chunks: int) -> None:
    bodies = {name: {"json": make(chunks)["json"], "sse": make(stream_chunks)["sse"]}
              for name, make in (("anthropic", _anthropic_bodies), ("gemini", _gemini_bodies))}
    connections = [0]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            connections[0] += 1
            # Headers and body go out in two writes; without this, Nagle plus the client's delayed ACK
            # adds ~40 ms to every reply and the benchmark measures TCP, not the clients.
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            super().setup()

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._send(json.dumps({"connections": connections[0]}).encode(), "application/json")

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
            provider = "gemini" if "models/" in self.path else "anthropic"
            stream = body.get("stream") or "streamGenerateContent" in self.path
            self._send(bodies[provider]["sse" if stream else "json"], "text/event-stream" if stream else "application/json")

        def _send(self, data: bytes, ctype: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


# -- the clients ----------------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--streams", type=int, default=20)
    ap.add_argument("--chunks", type=int, default=200, help="words of a non-streamed answer (default 200)")
    ap.add_argument("--stream-chunks", type=int, default=1000, help="events of a streamed answer (default 1000)")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(sys.stdout, args.chunks, args.stream_chunks)
        return

    import httpx

    from jarvis_core.types import Message
    from jarvis_engine_cloud import anthropic_wire, gemini_wire
    from jarvis_engine_cloud.engine import CloudEngine

    child = subprocess.Popen([sys.executable, __file__, "--serve", "--chunks", str(args.chunks), "--stream-chunks",
                              str(args.stream_chunks)], stdout=subprocess.PIPE, text=True)
    try:
        port = int(child.stdout.readline())
        url = f"http://127.0.0.1:{port}"
        key = "sk-bench-0000000000"
        messages = [Message.user("why is the sky blue?")]
        engine = CloudEngine(environ={}, anthropic_api_key=key, anthropic_base_url=url, gemini_api_key=key, gemini_base_url=url)
        headers = {"x-api-key": key, "anthropic-version": "2023-06-01", "x-goog-api-key": key}
        raw = httpx.Client(base_url=url, headers=headers)
        cases = {
            "anthropic": ("claude-bench", "/v1/messages", anthropic_wire.build_payload(messages, model="claude-bench", max_tokens=1024),
                          "/v1/messages"),
            "gemini": ("gemini-bench", "/v1beta/models/gemini-bench:generateContent",
                       gemini_wire.build_payload(messages, max_tokens=1024),
                       "/v1beta/models/gemini-bench:streamGenerateContent?alt=sse"),
        }

        def timed(fn: Callable[[], Any], n: int) -> float:
            start = time.perf_counter()
            for _ in range(n):
                fn()
            return (time.perf_counter() - start) / n

        async def raw_stream(path: str, body: dict, n: int) -> float:
            async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
                start = time.perf_counter()
                for _ in range(n):
                    count = 0
                    async with client.stream("POST", path, json=body) as response:
                        async for line in response.aiter_lines():
                            if line.startswith("data:"):
                                json.loads(line[5:])
                                count += 1
                    assert count >= args.stream_chunks
                return (time.perf_counter() - start) / n

        async def engine_stream(model: str, n: int) -> float:
            start = time.perf_counter()
            for _ in range(n):
                chunks = [c async for c in engine.stream_full(messages, model=model)]
                assert sum(1 for c in chunks if c.content) == args.stream_chunks and chunks[-1].finish_reason == "stop"
            elapsed = (time.perf_counter() - start) / n
            await engine.aclose()
            return elapsed

        results: Dict[str, List[float]] = {}
        for r in range(args.rounds):
            for provider, (model, path, body, stream_path) in cases.items():
                stream_body = dict(body, stream=True) if provider == "anthropic" else body
                floor_fn = lambda p=path, b=body: raw.post(p, json=b).json()  # noqa: E731
                ours_fn = lambda m=model: engine.generate(messages, model=m)  # noqa: E731
                order = [("floor", floor_fn), ("ours", ours_fn)][:: 1 if r % 2 == 0 else -1]
                t = {name: timed(fn, args.requests) for name, fn in order}
                results.setdefault(f"{provider} request ratio", []).append(t["ours"] / t["floor"])
                s_order = ["floor", "ours"][:: 1 if r % 2 == 0 else -1]
                s = {}
                for name in s_order:
                    if name == "floor":
                        s[name] = asyncio.run(raw_stream(stream_path, stream_body, args.streams))
                    else:
                        s[name] = asyncio.run(engine_stream(model, args.streams))
                results.setdefault(f"{provider} chunk-rate ratio", []).append(s["floor"] / s["ours"])
        connections = httpx.get(url + "/stats").json()["connections"]
        for name, values in results.items():
            print(f"{name:34s} median {statistics.median(values):.3f}  [{min(values):.3f}-{max(values):.3f}]")
        print(f"TCP connections opened in total: {connections} (pooled clients: a handful, not one per call)")
        med = statistics.median
        write_result(
            "cloud", "Cloud engine (Anthropic, Gemini)",
            summary=(f"`CloudEngine` against a raw pooled httpx client posting the body the engine sends, over a "
                     f"loopback server speaking Anthropic's and Gemini's APIs; {args.rounds} rounds of {args.requests} "
                     f"requests and {args.streams} streams of {args.stream_chunks} events per provider (a stream timed "
                     "from the call to its end), the two sides in alternating order; medians of per-round ratios "
                     "(min-max in brackets)."),
            tables=[table("Ratio to the floor", ["measure", "median", "min-max"],
                          [[name, fmt_ratio(med(v)), f"{min(v):.2f}-{max(v):.2f}"] for name, v in results.items()],
                          notes=[f"TCP connections opened over the whole run: {connections}."])],
            budgets=[budget(f"{name}", fmt_ratio(med(v)), "<= 1.10\u00d7" if "request" in name else ">= 0.90\u00d7",
                            med(v) <= 1.10 if "request" in name else med(v) >= 0.90) for name, v in results.items()],
            data={"request_ratio": {f"jarvis cloud ({p})": med(results[f"{p} request ratio"]) for p in cases},
                  "chunk_rate_ratio": {f"jarvis cloud ({p})": med(results[f"{p} chunk-rate ratio"]) for p in cases},
                  "connections": connections},
        )
        raw.close()
        engine.close()
    finally:
        child.kill()
        child.wait()


if __name__ == "__main__":
    sys.exit(main())
