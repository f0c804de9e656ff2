"""Operators: operative agents run on a schedule.

- :mod:`.schedule`: :class:`~.schedule.Schedule` (an interval such as ``60s``, or a cron expression through the
  optional ``croniter``: ``pip install 'jarvis-agents[cron]'``).
- :mod:`.scheduler`: :class:`~.scheduler.TaskScheduler`, which runs ticks, one at a time per operator, and
  records each one (failures included) without stopping.
- :mod:`.records`: what is remembered about each operator's ticks (``jarvis operators list``/``show``).
- :mod:`.cli`: ``jarvis operators run|list|show``.
"""
