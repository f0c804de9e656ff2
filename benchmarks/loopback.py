"""The benchmarks' fast loopback server: canned OpenAI-compatible and Ollama answers from a child process,
counting the TCP connections clients open.

    from loopback import LoopbackServer

    with LoopbackServer(chunks=200) as server:
        server.url            # http://127.0.0.1:PORT (OpenAI-compatible clients use server.url + "/v1")
        server.connections()  # connections accepted so far that carried a client request

Routes (a request must carry ``Content-Length``; the body is only searched for ``"stream"``):

* ``POST …/chat/completions`` (OpenAI Chat Completions): a 200-token JSON reply, or with ``"stream": true``
  an SSE stream of ``chunks`` content deltas, a finish chunk, a usage chunk and ``data: [DONE]``
  (chunked transfer encoding), as llama.cpp and vLLM send it;
* ``POST /api/chat`` (Ollama): ``chunks`` NDJSON lines and the final ``done`` line, or with
  ``"stream": false`` the whole JSON answer;
* ``GET /stats``: ``{"connections": N}``; anything else: Ollama's ``{"version": …}``.

``LoopbackServer(chunks, pace_ms=5)`` sends streams a chunk at a time, 5 ms apart, as a model server does:
then every stream of a burst holds its connection for the whole stream.

Every answer is prepared once and sent in one write, and the server parses only the request line, the
``Content-Length`` header and whether the body asks for a stream, so its own cost stays far below any
client's. It runs in its own process (not charged to the clients being measured), a thread per connection
in blocking I/O: on this kind of machine that answers a request about 50 µs sooner than an asyncio loop
(130 against 190 µs per round trip from a raw socket), and hundreds of connections at once cost only
their threads. The listen backlog is 1024, so connections opened all at once are not refused or delayed.

Connections are counted when their first request arrives, and ``/stats`` requests never count one, so
:meth:`LoopbackServer.connections` does not disturb what it measures.

Alone: ``python benchmarks/loopback.py --chunks 200`` prints the port and serves until stdin closes.
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple, Union

MODEL = "bench-model"
OPENAI_TEXT = " tok{i}"
OLLAMA_TEXT = " sky"
PROMPT_TOKENS = 20


# -- canned answers -------------------------------------------------------------------------------------
def _compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


#: A response: one write, or (paced) the pieces to write one by one.
Answer = Union[bytes, List[bytes]]


def _response(ctype: bytes, body: bytes, *, chunked: bool = False) -> bytes:
    if chunked:
        return (b"HTTP/1.1 200 OK\r\nContent-Type: " + ctype + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
                + b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")
    return b"HTTP/1.1 200 OK\r\nContent-Type: " + ctype + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body


def _stream(ctype: bytes, parts: List[bytes], *, chunked: bool, paced: bool) -> Answer:
    """A streamed response: all ``parts`` in one write, or (``paced``) one write per part."""
    if not paced:
        return _response(ctype, b"".join(parts), chunked=chunked)
    if chunked:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: " + ctype + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
        pieces = [b"%x\r\n" % len(p) + p + b"\r\n" for p in parts]
        pieces[-1] += b"0\r\n\r\n"
    else:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: " + ctype + b"\r\nContent-Length: %d\r\n\r\n" % sum(map(len, parts))
        pieces = list(parts)
    pieces[0] = head + pieces[0]
    return pieces


def openai_text(chunks: int) -> str:
    """The whole text of an OpenAI-compatible answer of ``chunks`` tokens."""
    return "".join(OPENAI_TEXT.format(i=i) for i in range(chunks))


def openai_answers(chunks: int, model: str = MODEL, *, paced: bool = False) -> Tuple[bytes, Answer]:
    """``(whole, streamed)`` HTTP responses of ``/v1/chat/completions`` (``paced``: the stream in pieces)."""
    usage = {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": chunks, "total_tokens": PROMPT_TOKENS + chunks}
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1, "model": model,
            "system_fingerprint": "fp_bench"}

    def event(delta: Dict[str, Any], finish: Optional[str] = None) -> Dict[str, Any]:
        return dict(base, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}], usage=None)

    events = [event({"role": "assistant", "content": ""})]
    events += [event({"content": OPENAI_TEXT.format(i=i)}) for i in range(chunks)]
    events += [event({}, "stop"), dict(base, choices=[], usage=usage)]
    sse = [f"data: {_compact(e)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]
    whole = {"id": "chatcmpl-bench", "object": "chat.completion", "created": 1, "model": model,
             "choices": [{"index": 0, "message": {"role": "assistant", "content": openai_text(chunks)},
                          "finish_reason": "stop"}], "usage": usage}
    return (_response(b"application/json", json.dumps(whole).encode()),
            _stream(b"text/event-stream", sse, chunked=True, paced=paced))


def ollama_answers(chunks: int, model: str = MODEL, *, paced: bool = False) -> Tuple[bytes, Answer]:
    """``(whole, streamed)`` HTTP responses of Ollama's ``/api/chat`` (``paced``: the stream in pieces)."""
    final = {"done": True, "done_reason": "stop", "total_duration": 4883583458, "load_duration": 1334875,
             "prompt_eval_count": PROMPT_TOKENS, "prompt_eval_duration": 342546000, "eval_count": chunks,
             "eval_duration": 4535599000}
    line = {"model": model, "created_at": "2025-07-07T20:22:19.184789Z",
            "message": {"role": "assistant", "content": OLLAMA_TEXT}, "done": False}
    lines = [_compact(line)] * chunks
    lines.append(_compact({"model": model, "created_at": "2025-07-07T20:22:19.219102Z",
                           "message": {"role": "assistant", "content": ""}, **final}))
    whole = {"model": model, "created_at": "2025-07-07T20:32:53.844124Z",
             "message": {"role": "assistant", "content": OLLAMA_TEXT * chunks}, **final}
    ctype = b"application/json; charset=utf-8"
    return (_response(ctype, _compact(whole).encode()),
            _stream(b"application/x-ndjson", [(line + "\n").encode() for line in lines], chunked=False, paced=paced))


# -- the server (child process) ------------------------------------------------------------------------
class _Answers:
    def __init__(self, chunks: int, pace: float) -> None:
        self.pace = pace
        self.openai = openai_answers(chunks, paced=pace > 0)
        self.ollama = ollama_answers(chunks, paced=pace > 0)
        self.version = _response(b"application/json; charset=utf-8", b'{"version":"0.12.6"}')
        self.connections = 0
        self.lock = threading.Lock()

    def reply(self, head: bytes, body: bytes) -> Answer:
        path = head.split(b" ", 2)[1] if head.count(b" ") >= 2 else b""
        flat = body.replace(b" ", b"")
        if path.endswith(b"/chat/completions"):
            return self.openai[b'"stream":true' in flat]
        if path == b"/api/chat":
            return self.ollama[b'"stream":false' not in flat]
        if path == b"/stats":
            return _response(b"application/json", _compact({"connections": self.connections}).encode())
        return self.version


def _handle(conn: socket.socket, answers: _Answers) -> None:
    """One connection: requests one after another, each answered with one write (a paced stream: one write
    per piece, ``answers.pace`` seconds apart)."""
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    counted = False
    buf = b""
    with conn:
        while True:
            end = buf.find(b"\r\n\r\n")
            while end < 0:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
                end = buf.find(b"\r\n\r\n")
            head = buf[:end]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            start = end + 4
            while len(buf) < start + length:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
            body, buf = buf[start:start + length], buf[start + length:]
            if not counted and not head.startswith(b"GET /stats "):
                counted = True
                with answers.lock:
                    answers.connections += 1
            answer = answers.reply(head, body)
            if isinstance(answer, bytes):
                conn.sendall(answer)
                continue
            for i, piece in enumerate(answer):
                if i:
                    time.sleep(answers.pace)
                conn.sendall(piece)


def serve(chunks: int, host: str = "127.0.0.1", port: int = 0, pace_ms: float = 0.0) -> None:
    """Serve until stdin closes; print the port first (one line)."""
    answers = _Answers(chunks, pace_ms / 1000)
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(1024)
    print(listener.getsockname()[1], flush=True)

    def accept() -> None:
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=_handle, args=(conn, answers), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    sys.stdin.read()


# -- the client side ---------------------------------------------------------------------------------------
class LoopbackServer:
    """The server in a child process; a context manager (``close()`` stops it)."""

    def __init__(self, chunks: int = 200, pace_ms: float = 0.0) -> None:
        self.chunks = chunks
        self.proc = subprocess.Popen([sys.executable, __file__, "--chunks", str(chunks), "--pace-ms", str(pace_ms)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.strip().isdigit():
            self.close()
            raise RuntimeError(f"the loopback server did not start (it printed {line!r})")
        self.port = int(line)
        self.url = f"http://127.0.0.1:{self.port}"

    def connections(self) -> int:
        """TCP connections accepted so far that carried a client request."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("GET", "/stats")
            return int(json.loads(conn.getresponse().read())["connections"])
        finally:
            conn.close()

    def close(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> LoopbackServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=200, help="tokens per answer (default 200)")
    ap.add_argument("--port", type=int, default=0, help="port (default: a free one, printed)")
    ap.add_argument("--pace-ms", type=float, default=0.0,
                    help="send streams a chunk at a time, this many ms apart, as a model server does (default: "
                         "the whole stream in one write)")
    args = ap.parse_args(argv)
    serve(args.chunks, port=args.port, pace_ms=args.pace_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
