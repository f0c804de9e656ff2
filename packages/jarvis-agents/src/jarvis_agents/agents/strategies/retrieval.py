"""``retrieval_strategy``: finding stored items relevant to a tick.

- :func:`keyword_rank`: items sharing words with the query, most shared words first (newer first on a tie).
- :func:`semantic_rank`: items by cosine similarity of embeddings from an embedding backend.
- :func:`engine_embedder`: that backend from an engine's ``embed`` verb (the monitor's and the memory tools'
  default when the engine has embeddings).
- :data:`SELF_EVAL_PROMPT` and :func:`parse_selection`: the model keeps the relevant candidates.

The operative's own ``memory_search`` tool uses :func:`keyword_rank` too.
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Sequence, Tuple

if TYPE_CHECKING:
    from jarvis_core.embeddings import EmbeddingResult

__all__ = ["EMBED_CHARS", "SELF_EVAL_PROMPT", "Embedder", "candidates_prompt", "cosine", "engine_embedder", "item_text",
           "keyword_rank", "parse_selection", "semantic_rank", "words"]

Item = Tuple[str, Any]
#: An embedding backend: texts in, one vector per text out.
Embedder = Callable[[List[str]], Sequence[Sequence[float]]]
#: Characters of one text sent to an engine's ``embed`` (a small model's context holds no more).
EMBED_CHARS = 2000

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    "a an and are as at be by for from has have i in is it its me my of on or our so that the this to was we "
    "what when where which who will with you your".split())

SELF_EVAL_PROMPT = (
    "You choose which remembered items help with a task. Reply with only a JSON array of the numbers of the "
    "relevant items, for example [2, 5]; reply [] if none is relevant.")


def words(text: str) -> List[str]:
    """The lower-cased words of ``text`` worth matching (no one-letter words, no stop words), in order."""
    return [w for w in (m.lower() for m in _WORD.findall(text)) if len(w) > 1 and w not in _STOP]


def item_text(value: Any) -> str:
    """The text of a stored value: a string as is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def keyword_rank(query: str, items: Sequence[Item], top_k: int) -> List[Item]:
    """Up to ``top_k`` items sharing at least one word with ``query``: most shared words first, newer
    (later in ``items``) first on a tie."""
    wanted = set(words(query))
    if not wanted or top_k < 1:
        return []
    scored = []
    for index, (key, value) in enumerate(items):
        hits = len(wanted & set(words(f"{key} {item_text(value)}")))
        if hits:
            scored.append((-hits, -index, key, value))
    scored.sort(key=lambda s: (s[0], s[1]))
    return [(key, value) for _h, _i, key, value in scored[:top_k]]


def engine_embedder(engine: Any, model: str) -> Embedder:
    """An :data:`Embedder` calling ``engine.embed(texts, model=model)`` (each text cut to :data:`EMBED_CHARS`).

    :raises EmbeddingsNotSupportedError: at once, naming the engine, when the engine has no embeddings.
    """
    from jarvis_core.engine.base import supports_embeddings
    from jarvis_core.errors import EmbeddingsNotSupportedError

    if not supports_embeddings(engine):
        raise EmbeddingsNotSupportedError(engine_id=getattr(engine, "engine_id", "") or type(engine).__name__)

    def embed(texts: List[str]) -> Sequence[Sequence[float]]:
        result: EmbeddingResult = engine.embed([t[:EMBED_CHARS] for t in texts], model=model)
        return result.vectors

    return embed


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        raise ValueError(f"the embedding backend returned vectors of different sizes ({len(a)} and {len(b)})")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def semantic_rank(query: str, items: Sequence[Item], top_k: int, embed: Embedder,
                  min_similarity: float = 0.0) -> List[Item]:
    """Up to ``top_k`` items by cosine similarity to ``query`` (above ``min_similarity``), most similar first.
    One call of ``embed`` with the query and every item's text."""
    if not items or top_k < 1:
        return []
    vectors = list(embed([query, *(item_text(v) for _k, v in items)]))
    if len(vectors) != len(items) + 1:
        raise ValueError(f"the embedding backend returned {len(vectors)} vectors for {len(items) + 1} texts")
    scored = [(cosine(vectors[0], vec), -i, item) for i, (vec, item) in enumerate(zip(vectors[1:], items, strict=True))]
    scored = [s for s in scored if s[0] > min_similarity]
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [item for _s, _i, item in scored[:top_k]]


def candidates_prompt(task: str, items: Sequence[Item]) -> str:
    """The user message of the self-evaluation call: the task, then the numbered candidates."""
    lines = [f"{n}. {item_text(value)[:500]}" for n, (_key, value) in enumerate(items, start=1)]
    return f"Task: {task}\n\nRemembered items:\n" + "\n".join(lines)


def parse_selection(reply: str, count: int) -> Optional[List[int]]:
    """The 0-based indexes the reply keeps (a JSON array of 1-based numbers), or ``None`` when the reply holds
    no such array. Numbers out of range are ignored."""
    for match in re.finditer(r"\[[^\[\]]*\]", reply or ""):
        try:
            numbers = json.loads(match.group(0))
        except ValueError:
            continue
        if isinstance(numbers, list) and all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
            return sorted({n - 1 for n in numbers if 1 <= n <= count})
    return None
