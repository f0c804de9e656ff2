"""``jarvis operators``: run operative agents once or on a schedule; list and show operators.

::

    jarvis operators run OPERATOR_ID [--agent operative|monitor_operative] [--every 60s | --cron EXPR | --once]
                         [--max-ticks N] [--json] INSTRUCTION...
    jarvis operators list [--json]
    jarvis operators show OPERATOR_ID [--messages N] [--json]

Every action uses one SQLite file, ``--db`` (default ``operators.db`` in the jarvis home). ``run`` without a
schedule (or with ``--once``) runs one tick and prints the answer; with ``--every``/``--cron`` it ticks until
Ctrl-C (or ``--max-ticks``), one line per tick. Tool calls and notices go to stderr as they happen. The
engine and model are chosen as ``jarvis ask`` chooses them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Dict, List

from jarvis_core import commands
from jarvis_core.commands import finite_float, positive_int

__all__ = ["AGENTS", "add_parser", "run"]

#: The agents ``run`` can use.
AGENTS = ("operative", "monitor_operative")


def _duration(text: str) -> float:
    from jarvis_agents.operators.schedule import parse_every
    from jarvis_core.errors import ConfigError

    try:
        return parse_every(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``operators`` (and its actions) to the ``jarvis`` parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "operators", help="run operative agents once or on a schedule; list and show operators",
        description="Operators are operative agents that keep their state and conversation between runs (ticks), "
        "in one SQLite file (--db, default operators.db in the jarvis home).")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    r = actions.add_parser("run", help="run an operator once, or on a schedule until Ctrl-C",
                           description="Run OPERATOR_ID's agent with INSTRUCTION: one tick (the default, or --once), "
                           "or every --every / on --cron until interrupted.")
    r.add_argument("operator_id", metavar="OPERATOR_ID", help="the operator (letters, digits, _ . -)")
    r.add_argument("instruction", nargs="+", metavar="INSTRUCTION", help="what each tick is asked (words are joined)")
    r.add_argument("--agent", choices=AGENTS, default="operative", help="the agent (default operative)")
    when = r.add_mutually_exclusive_group()
    when.add_argument("--every", type=_duration, metavar="DURATION", help="tick every DURATION (30s, 5m, 2h, 1d)")
    when.add_argument("--cron", metavar="EXPR", help="tick on a cron expression, local time (needs "
                      "pip install 'jarvis-agents[cron]')")
    when.add_argument("--once", action="store_true", help="run one tick now and exit (the default)")
    r.add_argument("--max-ticks", type=positive_int, metavar="N", help="with --every/--cron: stop after N ticks")
    r.add_argument("--json", action="store_true", help="print each tick as one JSON object")
    g = r.add_argument_group("engine")
    g.add_argument("--engine", metavar="NAME", help="engine key (see 'jarvis plugins'); default: config, then discovery")
    g.add_argument("--host", metavar="URL", help="address of the engine's server")
    g.add_argument("--model", metavar="ID", help="model id; default: config, then the first the engine offers")
    g.add_argument("--tools", metavar="A,B", help="comma-separated registered tools, besides the operator's own "
                   "memory tools")
    g.add_argument("--temperature", type=finite_float, metavar="T", help="sampling temperature (default: the agent's)")
    g.add_argument("--max-tokens", type=positive_int, metavar="N", help="answer length limit (default: the agent's)")
    g.add_argument("--max-turns", type=positive_int, metavar="N", help="tool turns per tick (default: the agent's)")
    _db_option(r)

    lst = actions.add_parser("list", help="list the operators that have run (table; --json)",
                             description="List every operator that has ticked: agent, schedule, ticks, failures and "
                             "its last tick.")
    lst.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _db_option(lst)

    show = actions.add_parser("show", help="show an operator's state and last messages",
                              description="Show OPERATOR_ID's record, its state and the last messages of its session.")
    show.add_argument("operator_id", metavar="OPERATOR_ID")
    show.add_argument("--messages", type=positive_int, default=10, metavar="N", help="how many messages (default 10)")
    show.add_argument("--json", action="store_true", help="print JSON")
    _db_option(show)
    return p


def _db_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="PATH", help="the operators' SQLite file (default: operators.db in the jarvis home)")


def _open_store(args: argparse.Namespace) -> Any:
    from jarvis_agents.agents.operative import default_db_path
    from jarvis_core.stores import SQLiteStore

    return SQLiteStore(args.db or default_db_path())


def run(args: argparse.Namespace) -> int:
    """Run the chosen action."""
    action = {"run": _run, "list": _list, "show": _show}[args.action]
    return action(args)


# -- run --------------------------------------------------------------------------------------------
def _run(args: argparse.Namespace) -> int:
    import asyncio

    from jarvis_agents.agents.operator_memory import check_operator_id
    from jarvis_agents.operators.schedule import Schedule
    from jarvis_agents.operators.scheduler import TaskScheduler
    from jarvis_core.errors import JarvisError

    check_operator_id(args.operator_id)
    instruction = " ".join(args.instruction).strip()
    if not instruction:
        raise JarvisError('the instruction is empty: jarvis operators run ID "what to do each tick"')
    schedule = Schedule(every=args.every, cron=args.cron)  # a cron expression is checked before any engine starts
    if args.max_ticks is not None and schedule.manual:
        raise JarvisError("--max-ticks goes with --every or --cron")
    store = _open_store(args)
    try:
        with _engine(args) as (engine, model, config, registry):
            agent = _agent(args, engine, model, config, registry, store)
            scheduler = TaskScheduler(on_tick=lambda record: _print_tick(record, args, scheduled=not schedule.manual))
            scheduler.add(args.operator_id, agent, instruction, every=schedule.every, cron=schedule.cron,
                          max_ticks=args.max_ticks, on_event=commands.show_agent_event)
            if schedule.manual:
                record = asyncio.run(scheduler.tick_now(args.operator_id))
                if not record.ok and not args.json:
                    raise JarvisError(f"operator {args.operator_id!r}: the tick failed: {record.error}")
                return 0 if record.ok else 1
            commands.announce(f"operator {args.operator_id}: {schedule.describe()} (Ctrl-C to stop)")
            asyncio.run(scheduler.run())
            records = scheduler.records(args.operator_id)
            failed = sum(1 for r in records if not r.ok)
            if failed:
                commands.announce(f"{failed} of {len(records)} tick(s) failed")
            return 1 if failed else 0
    finally:
        store.close()


class _engine:
    """The engine (chosen as ``jarvis ask`` does), its model, the config and the registry; closed on exit."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.choice: Any = None

    def __enter__(self) -> Any:
        from jarvis_core.config import load_config
        from jarvis_core.engine_choice import choose_engine, resolve_model
        from jarvis_core.plugins.registry import get_registry

        config = load_config()
        registry = get_registry()
        registry.get("agent", self.args.agent)  # not installed: an error listing the installed agents
        self.choice = choose_engine(config, self.args.engine, host=self.args.host, announce=commands.announce)
        try:
            model = resolve_model(self.choice.engine, self.choice.key, config, self.args.model, announce=commands.announce)
        except BaseException:
            self.choice.engine.close()
            raise
        return self.choice.engine, model, config, registry

    def __exit__(self, *exc: object) -> None:
        self.choice.engine.close()


def _agent(args: argparse.Namespace, engine: Any, model: str, config: Any, registry: Any, store: Any) -> Any:
    from jarvis_core.agents.factory import create_agent
    from jarvis_core.config import jarvis_home
    from jarvis_core.tools.factory import create_tool

    tools = [create_tool(k, config=config, registry=registry, engine=engine, model=model, home=jarvis_home())
             for k in commands.parse_tools(args.tools)]
    settings = {"temperature": args.temperature, "max_tokens": args.max_tokens, "max_turns": args.max_turns}
    return create_agent(args.agent, engine, model=model, config=config, registry=registry,
                        operator_id=args.operator_id, sessions=store.sessions, state=store.state, tools=tools,
                        **{k: v for k, v in settings.items() if v is not None})


def _print_tick(record: Any, args: argparse.Namespace, *, scheduled: bool) -> None:

    if args.json:
        sys.stdout.write(json.dumps(record.to_json(), ensure_ascii=False) + "\n")
    elif not scheduled:
        if record.content:
            sys.stdout.write(record.content.rstrip("\n") + "\n")
    else:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.started_at))
        what = f"ok ({record.stop_reason}): {commands.one_line(record.content)[:300]}" if record.ok else f"failed: {record.error}"
        sys.stdout.write(f"[{when}] {record.operator_id} tick {record.tick} {what}\n")
    sys.stdout.flush()


# -- list and show ----------------------------------------------------------------------------------
def _when(moment: Any) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(moment)) if isinstance(moment, (int, float)) else "-"


def _list(args: argparse.Namespace) -> int:
    from jarvis_agents.operators.records import list_records

    store = _open_store(args)
    try:
        records = list_records(store.state)
    finally:
        store.close()
    if args.json:
        sys.stdout.write(json.dumps(records, indent=2, ensure_ascii=False) + "\n")
        return 0
    if not records:
        sys.stdout.write(f"no operators in {store.path}; start one with: jarvis operators run ID \"instruction\"\n")
        return 0
    rows: List[List[str]] = []
    for r in records:
        last = r.get("last") or {}
        status = "ok" if last.get("ok") else f"failed: {last.get('error') or '?'}"
        rows.append([str(r.get("operator_id")), str(r.get("agent") or "-"), str(r.get("schedule") or "-"),
                     str(r.get("ticks", 0)), str(r.get("failures", 0)), _when(last.get("started_at")),
                     commands.one_line(status)[:80]])
    sys.stdout.write(commands.format_table(["OPERATOR", "AGENT", "SCHEDULE", "TICKS", "FAILED", "LAST TICK", "LAST STATUS"],
                                  rows) + "\n")
    return 0


def _show(args: argparse.Namespace) -> int:
    from jarvis_agents.agents.operator_memory import OperatorMemory
    from jarvis_agents.operators.records import get_record
    from jarvis_core.errors import JarvisError
    from jarvis_core.types import to_dict

    store = _open_store(args)
    try:
        memory = OperatorMemory(store.state, args.operator_id)
        record = get_record(store.state, memory.operator_id)
        state = store.state.get(memory.state_key)
        count = store.sessions.count(memory.session_id)
        messages = store.sessions.tail(memory.session_id, args.messages)
        keys = [memory.short(k) for k, _v in store.state.items(memory.prefix) if k != memory.state_key]
    finally:
        store.close()
    if record is None and state is None and not count and not keys:
        raise JarvisError(f"no operator {args.operator_id!r} in {store.path}; see 'jarvis operators list'")
    if args.json:
        doc: Dict[str, Any] = {"operator_id": memory.operator_id, "record": record, "state": state,
                               "message_count": count, "messages": [to_dict(m) for m in messages], "keys": keys}
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        return 0
    sys.stdout.write(_describe(memory.operator_id, record, state, count, messages, keys))
    return 0


def _describe(operator_id: str, record: Any, state: Any, count: int, messages: List[Any], keys: List[str]) -> str:
    from jarvis_agents.agents.strategies.retrieval import item_text

    lines = [f"operator:     {operator_id}"]
    if record:
        last = record.get("last") or {}
        outcome = f"ok ({last.get('stop_reason')})" if last.get("ok") else f"failed: {last.get('error')}"
        lines += [f"agent:        {record.get('agent')}", f"schedule:     {record.get('schedule')}",
                  f"instruction:  {commands.one_line(str(record.get('instruction')))}",
                  f"ticks:        {record.get('ticks')} ({record.get('failures')} failed)",
                  f"last tick:    {_when(last.get('started_at'))} {outcome}"]
    lines += ["", "state:"]
    lines += [f"  {line}" for line in (item_text(state).splitlines() or [""])] if state is not None else ["  (none)"]
    if keys:
        lines += ["", f"other keys ({len(keys)}): " + ", ".join(keys[:20]) + (" …" if len(keys) > 20 else "")]
    lines += ["", f"last {len(messages)} of {count} message(s):"]
    for m in messages:
        text = commands.one_line(m.content or "")[:300]
        if m.tool_calls:
            calls = ", ".join(f"{c.name} {commands.one_line(c.arguments)[:120]}" for c in m.tool_calls)
            text = f"{text} [calls {calls}]".strip()
        who = f"tool {m.name}" if m.role.value == "tool" and m.name else m.role.value
        lines.append(f"  {who}: {text}")
    return "\n".join(lines) + "\n"
