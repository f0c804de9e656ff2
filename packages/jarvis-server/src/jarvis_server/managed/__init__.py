"""Managed agents under ``/v1/managed-agents``: persistence (:mod:`.store`), the service that builds and runs
stored agents (:mod:`.service`, :mod:`.runner`), the request and response shapes (:mod:`.wire`) and the HTTP
routes (:mod:`.routes`)."""
