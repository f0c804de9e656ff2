"""Overhead of the OpenAI-compatible engines against floors measured side by side (docs/contract.md §10).

The benchmarks' loopback server (``loopback.py``) runs in its own process and answers
``/v1/chat/completions`` with canned bytes (a 200-token JSON reply; a second one a 1000-chunk SSE stream sent
in one write, chunked encoding, ``[DONE]`` and usage chunk included). In the same client process,
interleaved round by round:

- per request: ``LlamaCppEngine.generate`` vs a raw pooled ``httpx.Client`` posting the same payload and
  decoding the JSON (budget: at most 1.1x), and the official ``openai.OpenAI`` client when it is installed
  (a peer, not budgeted);
- per stream chunk: ``stream_full`` and ``stream`` vs a raw ``httpx.AsyncClient`` line loop that parses
  each ``data:`` line (budgets: at least 0.9x and 1.0x the chunk rate). A stream's chunk rate is its chunks
  over the time from the call to its last chunk: the engines decode a whole network read before its first
  chunk comes out, which a first-to-last-chunk window would not count;
- TCP connections the server accepted for N generate calls and for N streams (budget: 1 each).

Run: ``python benchmarks/bench_openai_compat.py [--rounds 9] [--requests 300] [--streams 40]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time

from loopback import MODEL, LoopbackServer
from results import budget, fmt_ratio, table, write_result

N_CHUNKS = 200
#: Chunks per streamed answer: long enough that the per-chunk cost, not the request, sets the rate.
STREAM_CHUNKS = 1000
#: Budgets of the chunk rate against the floor.
STREAM_BUDGETS = {"stream_full": 0.90, "stream": 1.00}


# -- the client side -----------------------------------------------------------------------------------
MESSAGES = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Count to two hundred."}]


def bench_requests(engine, raw, payload: dict, n: int, block: int = 10, sdk=None) -> tuple:
    """Mean seconds per request for the raw client, the engine and the openai SDK (``None`` without it),
    alternating in blocks of ``block``."""
    t_raw = t_eng = t_sdk = 0.0
    done = 0
    while done < n:
        t0 = time.perf_counter()
        for _ in range(block):
            _ = raw.post("/v1/chat/completions", json=payload).json()["choices"][0]["message"]["content"]
        t1 = time.perf_counter()
        for _ in range(block):
            _ = engine.generate(MESSAGES, model=MODEL, max_tokens=256).content
        t2 = time.perf_counter()
        if sdk is not None:
            for _ in range(block):
                _ = sdk.chat.completions.create(model=MODEL, messages=MESSAGES, temperature=0.7,
                                                max_tokens=256).choices[0].message.content
        t3 = time.perf_counter()
        t_raw += t1 - t0
        t_eng += t2 - t1
        t_sdk += t3 - t2
        done += block
    return t_raw / done, t_eng / done, (t_sdk / done if sdk is not None else None)


async def _raw_stream(aclient, payload: dict) -> tuple:
    count = 0
    first = last = time.perf_counter()
    async with aclient.stream("POST", "/v1/chat/completions", json=payload) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                data = line[6:]
                if data == "[DONE]":
                    continue
                obj = json.loads(data)
                choices = obj["choices"]
                if choices and choices[0]["delta"].get("content"):
                    count += 1
                    last = time.perf_counter()
    return count, last - first


async def _engine_stream(engine, full: bool) -> tuple:
    count = 0
    first = last = time.perf_counter()
    if full:
        gen = engine.stream_full(MESSAGES, model=MODEL, max_tokens=256)
        async for chunk in gen:
            if chunk.content:
                count += 1
                last = time.perf_counter()
    else:
        async for _text in engine.stream(MESSAGES, model=MODEL, max_tokens=256):
            count += 1
            last = time.perf_counter()
    return count, last - first


async def bench_streams(engine, aclient, payload: dict, n: int) -> dict:
    spans: dict = {"raw": [], "stream_full": [], "stream": []}
    for _ in range(n):
        c, span = await _raw_stream(aclient, payload)
        assert c == STREAM_CHUNKS, c
        spans["raw"].append(span)
        c, span = await _engine_stream(engine, True)
        assert c == STREAM_CHUNKS, c
        spans["stream_full"].append(span)
        c, span = await _engine_stream(engine, False)
        assert c == STREAM_CHUNKS, c
        spans["stream"].append(span)
    return {k: STREAM_CHUNKS / statistics.median(v) for k, v in spans.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--streams", type=int, default=40)
    args = ap.parse_args()

    import httpx

    from jarvis_core.engine.openai_wire import build_chat_payload
    from jarvis_engine_openai_compat.engines import LlamaCppEngine

    server = LoopbackServer(chunks=N_CHUNKS)
    streams = LoopbackServer(chunks=STREAM_CHUNKS)
    url = server.url
    try:
        engine = LlamaCppEngine(host=url)
        stream_engine = LlamaCppEngine(host=streams.url)
        # The raw floor sends exactly the engine's payload (backend defaults included).
        payload = build_chat_payload(MESSAGES, model=MODEL, temperature=0.7, max_tokens=256)
        stream_payload = build_chat_payload(MESSAGES, model=MODEL, temperature=0.7, max_tokens=256, stream=True)
        raw = httpx.Client(base_url=url)
        engine.generate(MESSAGES, model=MODEL, max_tokens=256)  # warm-up (registry, adapter cache)
        raw.post("/v1/chat/completions", json=payload).json()
        try:
            import openai
        except ImportError:
            sdk, sdk_version = None, "not installed"
        else:
            sdk, sdk_version = openai.OpenAI(base_url=url + "/v1", api_key="sk-bench", max_retries=0), openai.__version__
            sdk.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=256)

        req_raw, req_eng, req_sdk, rates = [], [], [], {"raw": [], "stream_full": [], "stream": []}

        async def stream_rounds() -> None:
            aclient = httpx.AsyncClient(base_url=streams.url)
            await _raw_stream(aclient, stream_payload)
            await _engine_stream(stream_engine, True)
            for _ in range(args.rounds):
                r_raw, r_eng, r_sdk = bench_requests(engine, raw, payload, args.requests, sdk=sdk)
                req_raw.append(r_raw)
                req_eng.append(r_eng)
                req_sdk.append(r_sdk)
                for k, v in (await bench_streams(stream_engine, aclient, stream_payload, args.streams)).items():
                    rates[k].append(v)
            await aclient.aclose()
            await stream_engine.aclose()

        asyncio.run(stream_rounds())
        raw.close()

        # Connections: fresh engine, N calls each way, count what the server accepted.
        n = 50
        before = server.connections()  # /stats probes are not counted
        counter = LlamaCppEngine(host=url)
        for _ in range(n):
            counter.generate(MESSAGES, model=MODEL, max_tokens=256)
        counter.close()
        conns_generate = server.connections() - before

        async def count_streams() -> None:
            eng = LlamaCppEngine(host=url)
            for _ in range(n):
                async for _chunk in eng.stream_full(MESSAGES, model=MODEL, max_tokens=256):
                    pass
            for _ in range(n):
                async for _text in eng.stream(MESSAGES, model=MODEL, max_tokens=256):
                    pass
            await eng.aclose()

        before = server.connections()
        asyncio.run(count_streams())
        conns_stream = server.connections() - before
    finally:
        server.close()
        streams.close()

    # Headline ratios are medians of per-round ratios: both sides of a round ran interleaved under the same load.
    med = statistics.median
    ratios = [e / r for r, e in zip(req_raw, req_eng, strict=True)]
    print(f"per request ({args.rounds} rounds x {args.requests}, alternating blocks of 10; medians):")
    print(f"  raw httpx.Client + json   {med(req_raw) * 1e6:8.1f} us")
    print(f"  LlamaCppEngine.generate   {med(req_eng) * 1e6:8.1f} us   ratio {med(ratios):.3f}x   (budget <= 1.10x)")
    print(f"  per-round ratios: {', '.join(f'{x:.3f}' for x in ratios)}")
    sdk_ratios = [s / r for r, s in zip(req_raw, req_sdk, strict=True)] if sdk is not None else []
    if sdk_ratios:
        print(f"  openai.OpenAI {sdk_version:<11} {med(req_sdk) * 1e6:8.1f} us   ratio {med(sdk_ratios):.3f}x")
    raw_rate = med(rates["raw"])
    print(f"stream chunk rate, from the call to the last chunk ({args.rounds} rounds x {args.streams} streams x "
          f"{STREAM_CHUNKS} chunks, interleaved; medians):")
    print(f"  raw AsyncClient line loop {raw_rate:10.0f} chunks/s ({1e6 / raw_rate:.2f} us/chunk)")
    for key in ("stream_full", "stream"):
        per_round = [e / r for r, e in zip(rates["raw"], rates[key], strict=True)]
        rate = med(rates[key])
        print(f"  engine.{key:<19} {rate:10.0f} chunks/s ({1e6 / rate:.2f} us/chunk)   ratio {med(per_round):.3f}x"
              f"   (budget >= {STREAM_BUDGETS[key]:.2f}x)   per round: {', '.join(f'{x:.3f}' for x in per_round)}")
    print(f"TCP connections opened: {conns_generate} for {n} generate calls; {conns_stream} for {2 * n} streams"
          " (budget: 1 each)")
    stream_ratios = {key: [e / r for r, e in zip(rates["raw"], rates[key], strict=True)] for key in ("stream_full", "stream")}

    def spread(values: list) -> str:
        return f"{fmt_ratio(med(values))} ({min(values):.2f}-{max(values):.2f})"

    request_rows = [["raw pooled httpx.Client + json (floor)", f"{med(req_raw) * 1e6:.0f}", "1.00\u00d7"],
                    ["jarvis llamacpp `generate`", f"{med(req_eng) * 1e6:.0f}", spread(ratios)]]
    if sdk_ratios:
        request_rows.append([f"openai.OpenAI {sdk_version} (peer)", f"{med(req_sdk) * 1e6:.0f}", spread(sdk_ratios)])
    write_result(
        "openai_compat", "OpenAI-compatible engines (llamacpp)",
        summary=(f"`LlamaCppEngine` against a raw pooled httpx client sending the same payload, over a loopback "
                 f"server in its own process; {args.rounds} rounds of {args.requests} requests (alternating blocks "
                 f"of 10) and {args.streams} streams of {STREAM_CHUNKS} chunks, interleaved; a stream's chunk rate "
                 "counts from the call to its last chunk; ratios are medians of per-round ratios (min-max in "
                 "brackets)."),
        tables=[
            table("Per non-streamed request (lower is better)", ["client", "median \u00b5s", "vs floor"], request_rows),
            table(f"Stream chunk rate, {STREAM_CHUNKS} chunks per stream (from the call to the last chunk; higher "
                  "is better)", ["client", "chunks/s", "vs floor"],
                  [["raw httpx.AsyncClient line loop (floor)", f"{raw_rate / 1e3:.1f}k", "1.00\u00d7"],
                   *([f"jarvis llamacpp `{key}`", f"{med(rates[key]) / 1e3:.1f}k", spread(stream_ratios[key])]
                     for key in ("stream_full", "stream"))]),
            table("TCP connections opened", ["calls", "connections"],
                  [[f"{n} `generate`", str(conns_generate)], [f"{2 * n} streams", str(conns_stream)]]),
        ],
        budgets=[budget("llamacpp `generate` / floor", fmt_ratio(med(ratios)), "<= 1.10\u00d7", med(ratios) <= 1.10),
                 *(budget(f"llamacpp `{key}` chunk rate / floor", fmt_ratio(med(v)),
                          f">= {fmt_ratio(STREAM_BUDGETS[key])}", med(v) >= STREAM_BUDGETS[key])
                   for key, v in stream_ratios.items()),
                 budget("connections for the generate calls / the streams", f"{conns_generate} / {conns_stream}",
                        "1 / 1", conns_generate <= 1 and conns_stream <= 1)],
        data={"request_us": {"floor": med(req_raw) * 1e6, "jarvis llamacpp": med(req_eng) * 1e6,
                             **({"openai.OpenAI": med(req_sdk) * 1e6} if sdk_ratios else {})},
              "request_ratio": {"jarvis llamacpp": med(ratios), **({"openai.OpenAI": med(sdk_ratios)} if sdk_ratios else {})},
              "chunk_rate_ratio": {f"jarvis llamacpp {k}": med(v) for k, v in stream_ratios.items()}},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
