"""A stand-in for ``llama-server`` that replays a script, for the worker's native tool-loop tests.

It accepts llama-server's flags (the worker launches it as its ``binary_path``); the "model" (``-m``) is a
JSON script. It serves ``/health``, ``/slots`` and a streaming ``/v1/chat/completions`` in the OpenAI SSE
shape llama.cpp uses, and appends every chat request body to ``<script>.requests.jsonl`` so a test can see
exactly what the worker sent.

Script: ``{"turns": [[step, ...], ...]}``. The turn played is the number of assistant messages in the
request (the first turn has none). A step is ``{"content": "text"}`` (streamed a few characters per chunk),
``{"tool_call": {"name": ..., "arguments": {...}}, "fragments": n}`` (the arguments streamed in ``n``
pieces), or ``{"sleep": seconds}``. After the last step the turn finishes with ``tool_calls`` when it
streamed a call, else ``stop``.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("-m", "--model", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("-np", "--parallel", type=int, default=1)
    args, _unknown = p.parse_known_args()
    with open(args.model, encoding="utf-8") as f:
        script = json.load(f)
    log_path = args.model + ".requests.jsonl"
    log_lock = threading.Lock()
    busy = set()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a: object) -> None:
            pass

        def _json(self, status: int, obj: object) -> None:
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path.startswith("/health"):
                self._json(200, {"status": "ok"})
            elif self.path.startswith("/slots"):
                self._json(200, [{"id": i, "is_processing": i in busy} for i in range(args.parallel)])
            else:
                self._json(404, {"error": {"code": 404, "message": "not found"}})

        def _chunk(self, obj: object) -> None:
            data = f"data: {json.dumps(obj)}\n\n".encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            with log_lock, open(log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps(body) + "\n")
            turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
            steps = script["turns"][min(turn, len(script["turns"]) - 1)]
            slot = body.get("id_slot", 0)
            busy.add(slot)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "model": "scripted"}
            try:
                self._chunk({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": None}}]})
                calls = 0
                for step in steps:
                    if "sleep" in step:
                        time.sleep(step["sleep"])
                    elif "content" in step:
                        text = step["content"]
                        for i in range(0, len(text), 4):
                            self._chunk({**base, "choices": [{"index": 0, "delta": {"content": text[i:i + 4]}}]})
                    elif "tool_call" in step:
                        call = step["tool_call"]
                        args_text = json.dumps(call.get("arguments", {}))
                        n = max(1, int(step.get("fragments", 1)))
                        size = -(-len(args_text) // n)
                        head = {"index": calls, "id": f"call_{turn}_{calls}", "type": "function",
                                "function": {"name": call["name"], "arguments": ""}}
                        self._chunk({**base, "choices": [{"index": 0, "delta": {"tool_calls": [head]}}]})
                        for i in range(0, len(args_text), size):
                            frag = {"index": calls, "function": {"arguments": args_text[i:i + size]}}
                            self._chunk({**base, "choices": [{"index": 0, "delta": {"tool_calls": [frag]}}]})
                        calls += 1
                finish = "tool_calls" if calls else "stop"
                self._chunk({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                             "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
                data = b"data: [DONE]\n\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                busy.discard(slot)
                self.close_connection = True

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    print(f"scripted llama-server listening on {args.host}:{args.port}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
