"""The conversation log: what ``jarvis ask`` and ``jarvis chat`` answered, kept in SQLite and searchable.

See :class:`ConversationLog` for reading it from Python, and docs/logs.md for the command line.
"""

from jarvis_core.convlog.record import LoggedResponse
from jarvis_core.convlog.settings import NO_LOG_ENV, default_log_path, log_path, logging_enabled
from jarvis_core.convlog.store import ConversationLog, new_conversation_id

__all__ = ["NO_LOG_ENV", "ConversationLog", "LoggedResponse", "default_log_path", "log_path", "logging_enabled",
           "new_conversation_id"]
