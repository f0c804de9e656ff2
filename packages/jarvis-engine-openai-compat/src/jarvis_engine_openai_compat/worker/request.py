"""What one request thread does: the tool loop, each turn streamed through the ``llamacpp`` engine.

The worker always streams, even though callers poll (:mod:`.stream`: progress stamps, partial output, loop
detection, the early stop on a decision request). Tool calls run under the limits of
:class:`~.config.ToolLimits`, with the request in ``TOOL_RUNNING`` meanwhile (the supervisor does not
judge a stall then: the server is idle on purpose). The thread runs one event loop for its request.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
from typing import Any, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple, Union

import attrs

from jarvis_core.engine.messages import coerce_messages
from jarvis_core.errors import (
    ConflictingOptionsError,
    ContextLengthError,
    EngineError,
    EngineHTTPError,
    InvalidOptionValueError,
    UnknownNameError,
    UsageError,
)
from jarvis_core.tools import ToolExecutor, json_mode
from jarvis_core.types import Message, MessageLike, ToolSpec, Usage

from .config import WorkerConfig
from .loop_detector import LoopDetector
from .prompts import build_bios
from .record import RequestRecord
from .signals import DECISION_REQUEST, control_tool_specs, first_decision
from .state import RequestState
from .stream import Ended, request_engine, stream_turn
from .tools import TraceBus, run_calls

__all__ = ["RequestSpec", "WorkerContext", "build_spec", "run_request"]

ENGINE_ID = "llamacpp-worker"


@attrs.frozen
class RequestSpec:
    """A submitted request, as the request thread needs it."""

    system_prompt: Optional[str]
    conversation: Tuple[Message, ...]
    tools: Tuple[ToolSpec, ...] = ()
    control_tools: Tuple[ToolSpec, ...] = ()
    tool_choice: str = "auto"
    max_tokens: int = 1024
    temperature: Optional[float] = None
    response_format: Optional[Mapping[str, Any]] = None
    now: Optional[_dt.datetime] = None


def build_spec(
    config: WorkerConfig,
    available: Sequence[ToolSpec],
    *,
    system_prompt: Optional[str],
    user_prompt: Optional[str],
    messages: Optional[Sequence[MessageLike]],
    tools: Optional[Sequence[Union[str, ToolSpec]]],
    control_tools: Union[bool, Sequence[str]],
    tool_choice: str,
    max_tokens: Optional[int],
    temperature: Optional[float],
    response_format: Optional[Mapping[str, Any]],
    now: _dt.datetime,
) -> RequestSpec:
    """Check a submission and turn it into a :class:`RequestSpec` (see ``LlamaCppWorker.submit``)."""
    if (user_prompt is None) == (messages is None):
        raise UsageError("give either user_prompt or messages (exactly one)", argument="user_prompt")
    conversation = (Message.user(user_prompt),) if user_prompt is not None else tuple(coerce_messages(messages or ()))
    by_name = {s.name: s for s in available}
    if tools is None:
        offered = tuple(by_name.values())
    else:
        names = [t.name if isinstance(t, ToolSpec) else str(t) for t in tools]
        for name in names:
            if name not in by_name:
                raise UnknownNameError("tool", name, list(by_name))
        offered = tuple(by_name[n] for n in names)
    controls = tuple(control_tool_specs(None if control_tools is True else (control_tools or ())))
    if tool_choice not in ("auto", "required", "none"):
        raise InvalidOptionValueError(ENGINE_ID, "tool_choice", "expected 'auto', 'required' or 'none'", value=tool_choice)
    if tool_choice == "none":
        offered, controls = (), ()
    if response_format is not None and (offered or controls) and config.tool_mode != "native":
        raise ConflictingOptionsError(ENGINE_ID, ["response_format", "tools"],
                                      "the json_schema (or auto) tool mode uses response_format itself; pass "
                                      "tool_choice='none' or no tools")
    if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1):
        raise InvalidOptionValueError(ENGINE_ID, "max_tokens", "expected a positive integer", value=max_tokens)
    return RequestSpec(
        system_prompt=system_prompt, conversation=conversation, tools=offered, control_tools=controls,
        tool_choice=tool_choice, max_tokens=max_tokens or config.max_tokens, temperature=temperature,
        response_format=response_format, now=now,
    )


class WorkerContext(Protocol):
    """What a request thread needs from its worker."""

    config: WorkerConfig
    executor: ToolExecutor

    @property
    def tool_mode(self) -> Optional[str]: ...

    @property
    def bus(self) -> Any: ...

    def current_server(self) -> Optional[Tuple[int, str]]: ...

    def server_died(self, generation: int) -> Optional[str]: ...


def run_request(ctx: WorkerContext, rec: RequestRecord, spec: RequestSpec, tz_name: Optional[str]) -> None:
    """Drive ``rec`` to a final state. Never raises; every failure becomes FAILED with a reason."""
    try:
        asyncio.run(_drive(ctx, rec, spec, tz_name))
    except Ended:
        pass
    except ContextLengthError as exc:
        rec.finish(RequestState.FAILED, "context_length_exceeded", str(exc))
    except EngineHTTPError as exc:
        rec.finish(RequestState.FAILED, "http_error", str(exc))
    except EngineError as exc:  # a broken stream: often the server died under it
        died = ctx.server_died(rec.generation)
        if died is not None:
            rec.finish(RequestState.FAILED, "server_crashed", died)
        else:
            rec.finish(RequestState.FAILED, "stream_error", str(exc))
    except Exception as exc:  # a bug must still end the request, never hang it
        rec.finish(RequestState.FAILED, "internal_error", f"{type(exc).__name__}: {exc}")
    finally:
        if rec.streaming or rec.awaiting_headers:
            rec.closed_early = True
        rec.end_http()


async def _drive(ctx: WorkerContext, rec: RequestRecord, spec: RequestSpec, tz_name: Optional[str]) -> None:
    server = ctx.current_server()
    if server is None:
        rec.finish(RequestState.FAILED, "server_unavailable", "the worker's server is not running (restarting?)")
        return
    generation, url = server
    engine = request_engine(url, rec, connect_timeout=ctx.config.timeouts.connect,
                            stop_on_decision=ctx.config.stop_on_decision_request, bus=ctx.bus)
    try:
        await _tool_loop(ctx, engine, generation, rec, spec, tz_name)
    finally:
        await engine.aclose()


async def _tool_loop(ctx: WorkerContext, engine: Any, generation: int, rec: RequestRecord, spec: RequestSpec,
                     tz_name: Optional[str]) -> None:
    cfg = ctx.config
    limits = cfg.tools
    json_tools = ctx.tool_mode == "json_schema"
    offered = list(spec.tools) + list(spec.control_tools)
    bios = build_bios(
        now=spec.now or _dt.datetime.now().astimezone(),
        timezone_name=tz_name,
        tools=offered,
        control_tools=bool(spec.control_tools),
        tool_budget=limits.budget,
        json_tools=json_tools,
        ctx_per_slot=cfg.ctx_per_slot,
        capability_hints=cfg.capability_hints,
        platform_guidance=cfg.platform_guidance,
    )
    system = bios if not spec.system_prompt else f"{bios}\n\n{spec.system_prompt}"
    messages: List[Message] = [Message.system(system), *spec.conversation]
    specs_by_name = {t.name: t for t in offered}
    detector = LoopDetector(cfg.loop)
    # Tool events carry the request id as their run id; the trace reads each call's outcome from them.
    executor = ctx.executor.with_run(rec.id, bus=TraceBus(ctx.bus))
    usage = Usage()
    while True:
        tools_now = offered if (offered and rec.tool_calls_left > 0) else []
        temperature = spec.temperature if spec.temperature is not None else cfg.temperature
        turn = await stream_turn(engine, rec, generation, messages, model=cfg.model_alias, temperature=temperature,
                                 max_tokens=spec.max_tokens, tools=[] if json_tools else tools_now,
                                 options=_options(rec, spec, tools_now, json_tools), detector=detector)
        if turn.usage is not None:
            usage = Usage(usage.prompt_tokens + turn.usage.prompt_tokens,
                          usage.completion_tokens + turn.usage.completion_tokens)
        with rec.lock:
            rec.usage = usage
            rec.timings = dict(turn.timings)
        calls, content = list(turn.calls), turn.content
        if json_tools and tools_now:
            # Each call gets a fresh id (types.new_call_id), never repeated across turns or requests.
            action = json_mode.parse_action(turn.content, [t.name for t in tools_now])
            calls, content = list(action.tool_calls), action.content or ""
            if action.problem:
                with rec.lock:
                    rec.detail = action.problem
        decision = turn.decision or (first_decision(calls) if cfg.stop_on_decision_request else None)
        if decision is not None:  # it ends the run: handle it first, skip the rest of the turn
            calls = [decision, *(c for c in calls if c is not decision)]
        if not calls or not tools_now:
            rec.finish(RequestState.COMPLETED, stop_reason=turn.finish_reason, content=content)
            return
        with rec.lock:
            rec.iteration += 1
            rec.tool_calls_left -= 1
            rec.budget_exhausted = rec.tool_calls_left == 0
        results, stop = await run_calls(executor, rec, calls, specs_by_name, cfg.tools,
                                        stop_on_decision=cfg.stop_on_decision_request)
        if stop:
            rec.finish(RequestState.COMPLETED, stop_reason=DECISION_REQUEST, content=content)
            return
        if rec.final:
            raise Ended
        if json_tools:
            messages.append(Message.assistant(turn.content))
            lines = [json_mode.tool_result_text(r.name, r.content) for r in results]
            messages.append(Message.user("\n".join([*lines, f"Tool turns left: {rec.tool_calls_left}."])))
        else:
            messages.append(Message.assistant(content or None, tool_calls=calls))
            note = f"\n[tool turns left: {rec.tool_calls_left}]"
            for i, r in enumerate(results):
                text = r.content + (note if i == len(results) - 1 else "")
                messages.append(Message.tool(text, r.tool_call_id, r.name))


def _options(rec: RequestRecord, spec: RequestSpec, tools_now: Sequence[ToolSpec], json_tools: bool) -> Dict[str, Any]:
    """The turn's request options: llama.cpp's slot pinning and prompt cache, and how tools are asked for."""
    options: Dict[str, Any] = {"id_slot": rec.slot, "cache_prompt": True, "return_progress": True}
    if spec.response_format is not None:
        options["response_format"] = dict(spec.response_format)
    if tools_now and json_tools:
        options["response_format"] = json_mode.response_format_for_choice(
            tools_now, spec.tool_choice, max_content_length=json_mode.content_limit(spec.max_tokens))
    elif tools_now:
        options["tool_choice"] = spec.tool_choice
    return options
