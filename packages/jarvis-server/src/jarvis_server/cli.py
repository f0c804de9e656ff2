"""``jarvis serve``: the OpenAI-compatible API (and managed agents) over HTTP.

The engine is picked as ``jarvis ask`` picks it (``--engine``/``--engine-host``, else the config's default,
else the first healthy engine found by probing, else the embedded llama.cpp server), announced on stderr.

Security: binding anything but a loopback address needs a token (``JARVIS_SERVER_TOKEN``, or ``--token``,
which other users can see in the process list); the ``Host`` allow-list always applies (``--allow-host``
adds names). The token is never printed.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

__all__ = ["add_parser", "run"]

TOKEN_ENV = "JARVIS_SERVER_TOKEN"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``serve`` to the ``jarvis`` parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="serve an OpenAI-compatible API (and managed agents) over HTTP",
        description="Serve POST /v1/chat/completions, GET /v1/models, GET /health and /v1/managed-agents over "
        "the configured (or discovered) engine. Binding a non-loopback address needs a token.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port to bind (default 8000; 0 picks a free one)")
    p.add_argument("--token", metavar="TOKEN",
                   help=f"bearer token clients must send (prefer the {TOKEN_ENV} environment variable)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="a Host name clients may use besides loopback names and the bind address (repeatable)")
    g = p.add_argument_group("engine")
    g.add_argument("--engine", metavar="NAME", help="engine key (see 'jarvis plugins'); default: config, then discovery")
    g.add_argument("--engine-host", metavar="URL", help="address of the engine's server")
    g.add_argument("--model", metavar="ID", help="model served when a request names none; default: config, then "
                   "the first the engine offers")
    g.add_argument("--agent", metavar="NAME", help="answer chat completions through this registered agent "
                   "(a request's own 'agent' field wins)")
    g.add_argument("--max-tokens", type=int, default=1024, metavar="N",
                   help="max_tokens for requests that send none (default 1024; a request's own value is kept)")
    g.add_argument("--no-agents", action="store_true", help="do not serve /v1/managed-agents")
    g.add_argument("--db", metavar="PATH", help="managed-agents database (default: agents.db in the jarvis home)")
    return p


def _check_port(port: int) -> None:
    from jarvis_core.errors import ConfigError

    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port} is not a port number (0-65535)", key="port")


def run(args: argparse.Namespace) -> int:
    """Check the security settings, pick the engine and model, then serve until interrupted."""
    import asyncio

    import uvicorn

    from jarvis_core import commands
    from jarvis_core.aliases import resolve_alias
    from jarvis_core.config import load_config
    from jarvis_core.engine_choice import choose_engine, describe_engine, resolve_model
    from jarvis_core.errors import JarvisError
    from jarvis_core.events import default_bus
    from jarvis_core.instrumented import InstrumentedEngine
    from jarvis_core.otel import OTEL_ENV, trace_bus
    from jarvis_core.retry import with_retries
    from jarvis_core.switches import env_flag
    from jarvis_server.app import create_app, verify_front_door
    from jarvis_server.running import http_stack, uvicorn_config
    from jarvis_server.security import allowed_hosts_for, check_bind, check_token
    from jarvis_server.settings import server_settings

    _check_port(args.port)
    token = check_token(args.token or os.environ.get(TOKEN_ENV))
    check_bind(args.host, token)  # before any engine starts: refusing must be cheap
    hosts = allowed_hosts_for(args.host, args.allow_host)
    if "*" in hosts and token is None:
        raise JarvisError("--allow-host '*' turns off the DNS-rebinding guard; it needs a token")

    config = load_config()
    settings = server_settings(config)
    if args.agent:
        from jarvis_core.plugins.registry import get_registry

        get_registry().get("agent", args.agent)  # an unknown name is an error listing the installed agents
    alias = resolve_alias(config, args.model)  # an alias's engine, unless --engine names one
    choice = choose_engine(config, args.engine or (alias.engine if alias else None), host=args.engine_host,
                           announce=commands.announce)
    # [retry], then the events /metrics counts (published on the default bus)
    choice.engine = InstrumentedEngine(with_retries(choice.engine, choice.key, config, announce=commands.announce))
    if env_flag(OTEL_ENV):  # OpenTelemetry spans from the same events (jarvis-core[otel])
        trace_bus(default_bus())
    managed = None
    try:
        model = resolve_model(choice.engine, choice.key, config, args.model, announce=commands.announce)
        if not args.no_agents:
            from jarvis_server.managed.service import open_service

            managed = open_service(choice.engine, model=model, path=args.db, config=config, settings=settings,
                                   engine_key=choice.key)
        app = create_app(choice.engine, engine_key=choice.key, model=model, token=token, allowed_hosts=hosts,
                         default_max_tokens=args.max_tokens, managed=managed, agent=args.agent, config=config,
                         settings=settings)
        asyncio.run(verify_front_door(app))
        server = uvicorn.Server(uvicorn_config(app, args.host, args.port, settings=settings))
        auth = "bearer token required" if token else "no token, loopback only"
        stack = http_stack()
        if stack != "httptools + uvloop":
            stack += "; pip install 'jarvis-server[fast]' for httptools and uvloop"
        commands.announce(f"serving {describe_engine(choice.key, choice.engine)}, model {model}, on "
                        f"http://{args.host}:{args.port} ({auth}; {stack})")
        try:
            server.run()
        except SystemExit as exc:
            if exc.code not in (0, None):
                raise JarvisError(f"the server could not start on {args.host}:{args.port} (see the log above)") from None
        if not server.started:
            raise JarvisError(f"the server could not start on {args.host}:{args.port} (see the log above)")
        return 0
    finally:
        if managed is not None:
            managed.close()
        choice.engine.close()
