"""What :class:`~jarvis_core.sdk.Jarvis` adds for structured answers.

``j.ask(prompt, schema=Person)`` sends the ``response_format`` built from ``schema``
(:func:`jarvis_core.structured.response_format_for`) and returns the decoded answer: an instance of
``Person`` (structured with cattrs) for a type, a dict (or list) for a JSON schema or llm's concise form.
"""

from __future__ import annotations

from typing import Any, Mapping

from jarvis_core.answer import Answer
from jarvis_core.errors import StructuredOutputError
from jarvis_core.types import Completion

__all__ = ["answer_for", "structured_answer"]


def structured_answer(answer: Answer, schema: Any, response_format: Mapping[str, Any]) -> Any:
    """The decoded answer of ``answer`` as ``schema`` asks: its ``parsed`` value (decoded from ``content`` when
    the agent or engine left it unset), structured into ``schema`` when it is a type.

    :raises StructuredOutputError: the answer is not JSON, does not validate, or does not fit the type.
    """
    from jarvis_core.structured import decode_structured

    engine_id = answer.engine or ""
    value = answer.parsed
    if value is None:
        value = decode_structured(answer.content, response_format, engine_id=engine_id)
    if isinstance(schema, (str, Mapping)):
        return value
    import cattrs

    try:
        return cattrs.structure(value, schema)
    except (cattrs.BaseValidationError, TypeError, ValueError) as exc:
        problems = cattrs.transform_error(exc) if isinstance(exc, cattrs.BaseValidationError) else [str(exc)]
        raise StructuredOutputError(
            f"{engine_id or 'the engine'}: the answer does not fit {getattr(schema, '__name__', schema)}: "
            f"{'; '.join(problems)}", engine_id=engine_id, text=answer.content, problems=problems) from None


def answer_for(completion: Completion, engine_key: str, options: Mapping[str, Any]) -> Answer:
    """A direct request's :class:`Answer`; with a JSON ``response_format`` the text must decode
    (:class:`StructuredOutputError` otherwise: the SDK's typed failure, which engines leave to it)."""
    from jarvis_core.structured import with_parsed

    response_format = options.get("response_format")
    if response_format:
        completion = with_parsed(completion, response_format, engine_id=engine_key)
    return Answer.from_completion(completion, engine=engine_key)
