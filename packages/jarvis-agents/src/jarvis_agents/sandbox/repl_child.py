"""The child side of the persistent Python REPL; standard library only.

The parent (:mod:`~jarvis_agents.sandbox.repl`) does not import this module: it sends its source as the
code of a sandbox job, so it runs under the same bootstrap, limits, user, environment and working
directory as every sandboxed run. ``sys.argv[1]`` is a JSON object of settings: ``fds`` (the descriptors
to read from and write to the parent), ``max_output_chars``, ``functions`` (which of ``llm_query``,
``llm_batch`` and ``tool_call`` to define) and ``final`` (whether ``FINAL``/``FINAL_VAR`` exist).

The channel is JSON lines on those two descriptors, never on stdout, so nothing the code prints can
corrupt it. Parent to child: ``{"op": "exec", "id", "code"}``, ``{"op": "define", "id", "values"}`` and
``{"op": "reply", "id", "ok", "value" | "error"}``. Child to parent: ``{"op": "ready", "pid"}``,
``{"op": "call", "id", "fn", "args"}`` (the cell waits for the reply) and ``{"op": "done", "id", "ok",
"output", "error", "truncated", "final"}``.

Every cell runs in one ``__main__`` namespace, so variables persist. What a cell prints (stdout and
stderr, in order) is kept up to ``max_output_chars``. An exception, ``exit()`` included, ends the cell
with its traceback and the REPL goes on.
"""

import builtins
import io
import json
import os
import sys
import threading
import traceback
import typing


class _Final(BaseException):
    """Raised by ``FINAL``: ends the cell at once (``except Exception`` in the model's code cannot stop it)."""

    def __init__(self, value: object) -> None:
        super().__init__()
        self.value = value


class _Capture(io.TextIOBase):
    """A capped text sink for ``print``: the first ``cap`` characters are kept, the rest only counted."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        text = str(text)
        room = self.cap - self.kept
        if room > 0:
            piece = text[:room]
            self.parts.append(piece)
            self.kept += len(piece)
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def text(self) -> str:
        out = "".join(self.parts)
        if self.dropped:
            out += f"\n[output truncated: {self.dropped} more characters not shown]"
        return out


class _Channel:
    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.reader = os.fdopen(read_fd, "rb", buffering=0)
        self.writer = os.fdopen(write_fd, "wb", buffering=0)
        self.buffer = b""
        self.lock = threading.Lock()
        self.next_id = 0

    def send(self, message: dict[str, typing.Any]) -> None:
        data = (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[self.writer.write(view):]

    def receive(self) -> dict[str, typing.Any]:
        while b"\n" not in self.buffer:
            chunk = self.reader.read(65536)
            if not chunk:
                raise SystemExit(0)  # the parent closed the channel: the run is over
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        message: dict[str, typing.Any] = json.loads(line)
        return message

    def request(self, fn: str, args: dict[str, typing.Any]) -> typing.Any:
        """One call to the parent; the cell blocks until the answer (calls from threads take turns)."""
        with self.lock:
            self.next_id += 1
            self.send({"op": "call", "id": self.next_id, "fn": fn, "args": args})
            reply = self.receive()
        if not reply.get("ok"):
            raise RuntimeError(reply.get("error") or fn + " failed")
        return reply.get("value")


def _helpers(channel: _Channel, functions: typing.Collection[str], final: bool) -> dict[str, typing.Any]:
    helpers: dict[str, typing.Any] = {}

    def llm_query(prompt: object) -> typing.Any:
        """Ask the sub-model ``prompt`` (a str); returns its answer as a str."""
        return channel.request("llm_query", {"prompt": str(prompt)})

    def llm_batch(prompts: typing.Iterable[object]) -> typing.Any:
        """Ask the sub-model every prompt of a list, concurrently; returns the answers in the same order."""
        return channel.request("llm_batch", {"prompts": [str(p) for p in prompts]})

    def tool_call(name: object, **arguments: typing.Any) -> typing.Any:
        """Run the agent's tool ``name`` with keyword arguments; returns its output as a str."""
        return channel.request("tool_call", {"name": str(name), "arguments": arguments})

    for fn in (llm_query, llm_batch, tool_call):
        if fn.__name__ in functions:
            helpers[fn.__name__] = fn
    if final:
        def FINAL(value: object) -> typing.NoReturn:
            """End the run with ``value`` as the answer."""
            raise _Final(value)

        def FINAL_VAR(name: str) -> typing.NoReturn:
            """End the run with the value of the variable called ``name``."""
            namespace = helpers["__namespace__"]
            if name not in namespace:
                raise NameError(f"FINAL_VAR: no variable named {name!r}")
            raise _Final(namespace[name])

        helpers["FINAL"] = FINAL
        helpers["FINAL_VAR"] = FINAL_VAR
    return helpers


def _run_cell(code: str, namespace: dict[str, typing.Any], cap: int) -> dict[str, typing.Any]:
    capture = _Capture(cap)
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = capture
    result: dict[str, typing.Any] = {"ok": True, "error": "", "final": None}
    try:
        exec(compile(code, "<cell>", "exec"), namespace)
    except _Final as done:
        value = done.value
        result["final"] = {"value": value if isinstance(value, str) else str(value)}
    except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the REPL goes on
        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
        if isinstance(exc, SystemExit):
            code = "" if exc.code is None else repr(exc.code)
            message = f"SystemExit: exit({code}) ends nothing here; the REPL and its variables are kept"
        else:
            message = "".join(traceback.format_exception(type(exc), exc, tb)).rstrip()
        result.update(ok=False, error=message[-4000:])
    finally:
        sys.stdout, sys.stderr = saved
    result["output"] = capture.text()
    result["truncated"] = bool(capture.dropped)
    return result


def main() -> None:
    settings = json.loads(sys.argv[1])
    read_fd, write_fd = settings["fds"]
    channel = _Channel(read_fd, write_fd)
    namespace: dict[str, typing.Any] = {"__name__": "__main__", "__builtins__": builtins}
    helpers = _helpers(channel, set(settings.get("functions") or ()), bool(settings.get("final")))
    helpers["__namespace__"] = namespace
    namespace.update({k: v for k, v in helpers.items() if not k.startswith("__")})
    cap = int(settings.get("max_output_chars") or 10000)
    channel.send({"op": "ready", "pid": os.getpid()})
    while True:
        message = channel.receive()
        op = message.get("op")
        if op == "exec":
            result = _run_cell(message.get("code") or "", namespace, cap)
        elif op == "define":
            namespace.update(message.get("values") or {})
            result = {"ok": True, "error": "", "final": None, "output": "", "truncated": False}
        else:
            result = {"ok": False, "error": f"unknown operation {op!r}", "final": None, "output": "",
                      "truncated": False}
        result.update(op="done", id=message.get("id"))
        channel.send(result)


if __name__ == "__main__":
    main()
