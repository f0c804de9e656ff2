"""Overhead of ``embed`` on the OpenAI-compatible wire against a raw httpx call of the same request.

A loopback server in its own process answers ``POST /v1/embeddings`` with canned bytes: 256 vectors of 576
floats (SmolLM2's width, what the embedded engine returns), about 3 MB of JSON. In the same client process,
interleaved round by round: ``LlamaCppEngine.embed`` of a batch of 256 inputs (one request, decoded into an
``EmbeddingResult``) against a raw pooled ``httpx.Client`` posting the same body and decoding the JSON into
lists of floats (the floor). Budget: at most 1.1x the floor.

Run: ``python benchmarks/bench_embeddings.py [--rounds 9] [--calls 10]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import statistics
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from results import budget, fmt_ratio, table, write_result

BATCH = 256
DIMS = 576
BUDGET = 1.10


def _reply() -> bytes:
    rng = random.Random(7)
    data = [{"object": "embedding", "index": i, "embedding": [rng.uniform(-0.1, 0.1) for _ in range(DIMS)]}
            for i in range(BATCH)]
    return json.dumps({"object": "list", "model": "m", "data": data,
                       "usage": {"prompt_tokens": BATCH * 3, "total_tokens": BATCH * 3}}).encode()


def _serve(port_out: multiprocessing.Queue[int]) -> None:
    body = _reply()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port_out.put(server.server_address[1])
    server.serve_forever()


def main() -> int:
    import httpx

    from jarvis_engine_openai_compat.engines import LlamaCppEngine

    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--calls", type=int, default=10)
    args = p.parse_args()
    ports: multiprocessing.Queue[int] = multiprocessing.Queue()
    proc = multiprocessing.Process(target=_serve, args=(ports,), daemon=True)
    proc.start()
    url = f"http://127.0.0.1:{ports.get(timeout=30)}"
    inputs = [f"input number {i}: some text to embed" for i in range(BATCH)]
    body = {"model": "m", "encoding_format": "float", "input": inputs}
    raw = httpx.Client(base_url=url, timeout=60)
    engine = LlamaCppEngine(host=url)
    raw_t, eng_t, ratios = [], [], []
    try:
        for _ in range(2):  # warm both pools
            raw.post("/v1/embeddings", json=body).json()
            engine.embed(inputs, model="m")
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            for _ in range(args.calls):
                vectors = [d["embedding"] for d in raw.post("/v1/embeddings", json=body).json()["data"]]
            t1 = time.perf_counter()
            for _ in range(args.calls):
                result = engine.embed(inputs, model="m")
            t2 = time.perf_counter()
            assert len(vectors) == len(result.embeddings) == BATCH
            raw_t.append((t1 - t0) / args.calls)
            eng_t.append((t2 - t1) / args.calls)
            ratios.append(eng_t[-1] / raw_t[-1])
    finally:
        engine.close()
        raw.close()
        proc.terminate()
    ratio = statistics.median(ratios)
    spread = f"{fmt_ratio(ratio)} ({min(ratios):.2f}-{max(ratios):.2f})"
    rows = [["raw pooled httpx.Client + json (floor)", f"{statistics.median(raw_t) * 1e3:.1f}", "1.00\u00d7"],
            ["jarvis llamacpp `embed`", f"{statistics.median(eng_t) * 1e3:.1f}", spread]]
    write_result(
        "embeddings", "Embeddings (batch of 256)",
        summary=(f"`LlamaCppEngine.embed` of {BATCH} inputs (one request; {BATCH} vectors of {DIMS} floats, about "
                 f"{len(_reply()) // 1_000_000} MB of JSON) against a raw pooled httpx client posting the same body "
                 f"and decoding the JSON, over a loopback server in its own process; {args.rounds} rounds of "
                 f"{args.calls} calls each, interleaved; the ratio is the median of per-round ratios (min-max in "
                 "brackets)."),
        tables=[table(f"Per batch of {BATCH} inputs (lower is better)", ["client", "median ms", "vs floor"], rows)],
        budgets=[budget(f"llamacpp `embed` of {BATCH} inputs / floor", fmt_ratio(ratio), f"<= {BUDGET:.2f}\u00d7",
                        ratio <= BUDGET)],
        data={"ratios": ratios, "raw_s": raw_t, "engine_s": eng_t},
    )
    print(f"embed / raw: {spread}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
