"""HTTP plumbing on top of the core's :class:`~jarvis_core.engine.http.HTTPEngine` that local servers need.

**Stale keep-alive connections.** llama.cpp's server closes the connection after every streamed response
(while announcing ``keep-alive: timeout=5``) and idles connections out after 5 s, exactly httpx's own pool
expiry. A request sent on such a pooled connection fails with "server disconnected without sending a
response" although the server is fine. When a request fails that way *before any byte of a response
arrived*, it is sent once more, on a fresh connection: chat requests have no side effects, and a server
that is really gone fails the second attempt too (refused: :class:`~jarvis_core.errors.EngineConnectionError`).

**Raw streamed bodies.** :meth:`KeepAliveHTTPEngine.astream_response` yields the ``httpx.Response`` itself,
so a hot streaming loop can read whole network chunks (``aiter_bytes``) instead of one line per async hop.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, AsyncIterator, Mapping, Optional

import httpx

from jarvis_core.engine.http import HTTPEngine, translate_transport_error
from jarvis_core.errors import EngineError, StreamError

__all__ = ["KeepAliveHTTPEngine"]

# Failures that, before any response byte, mean "this pooled connection was already closed by the server".
_STALE = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
_JSON_HEADERS = {"content-type": "application/json"}


class KeepAliveHTTPEngine(HTTPEngine):
    """:class:`HTTPEngine` whose requests survive a server closing idle or streamed keep-alive connections."""

    def _request(self, client: Any, method: str, path: str, json_body: Any, timeout: Optional[float],
                 params: Optional[Mapping[str, Any]], accept: Optional[str] = None) -> httpx.Request:
        headers = dict(_JSON_HEADERS) if json_body is not None else {}
        if accept:
            headers["accept"] = accept
        return client.build_request(
            method, path, params=params, headers=headers,
            content=json.dumps(json_body).encode() if json_body is not None else None,
            timeout=self._timeout(timeout) if timeout is not None else httpx.USE_CLIENT_DEFAULT,
        )

    def send_fresh(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` (streamed); once more on a new connection if the pooled one was already dead."""
        try:
            try:
                return self.client.send(request, stream=True)
            except _STALE:
                return self.client.send(request, stream=True)
        except httpx.TransportError as exc:
            raise translate_transport_error(exc, engine_id=self.engine_id, url=str(request.url)) from None

    async def asend_fresh(self, request: httpx.Request) -> httpx.Response:
        """Async twin of :meth:`send_fresh`."""
        client = self.aclient
        try:
            try:
                return await client.send(request, stream=True)
            except _STALE:
                return await client.send(request, stream=True)
        except httpx.TransportError as exc:
            raise translate_transport_error(exc, engine_id=self.engine_id, url=str(request.url)) from None

    def _decoded(self, response: httpx.Response, path: str, model: Optional[str]) -> Any:
        self._raise_for_status(response, model=model)
        try:
            return response.json()
        except ValueError:
            raise StreamError(f"{self.engine_id}: {path} answered with invalid JSON: {response.text[:200]!r}",
                              engine_id=self.engine_id) from None

    def request_json(self, method: str, path: str, *, json_body: Any = None, timeout: Optional[float] = None,
                     model: Optional[str] = None, params: Optional[Mapping[str, Any]] = None) -> Any:
        """Send a request on the pooled client and return the decoded JSON body, or raise a typed error."""
        response = self.send_fresh(self._request(self.client, method, path, json_body, timeout, params))
        try:
            response.read()
        except httpx.TransportError as exc:
            raise self.broken(exc, path) from None
        finally:
            response.close()
        return self._decoded(response, path, model)

    async def arequest_json(self, method: str, path: str, *, json_body: Any = None, timeout: Optional[float] = None,
                            model: Optional[str] = None, params: Optional[Mapping[str, Any]] = None) -> Any:
        """Async twin of :meth:`request_json`."""
        response = await self.asend_fresh(self._request(self.aclient, method, path, json_body, timeout, params))
        try:
            await response.aread()
        except httpx.TransportError as exc:
            raise self.broken(exc, path) from None
        finally:
            await response.aclose()
        return self._decoded(response, path, model)

    @contextlib.asynccontextmanager
    async def astream_response(self, path: str, json_body: Any, *, model: Optional[str] = None
                               ) -> AsyncIterator[httpx.Response]:
        """POST ``json_body`` for a streamed answer and yield the response; error statuses raise first.

        Leaving the block closes the response (which is how a caller cancels a generation on most servers).
        """
        response = await self.asend_fresh(self._request(self.aclient, "POST", path, json_body, None, None,
                                                        accept="text/event-stream"))
        try:
            if response.status_code >= 400:
                await response.aread()
                self._raise_for_status(response, model=model)
            yield response
        finally:
            await response.aclose()

    def broken(self, exc: Exception, path: str) -> EngineError:
        """The typed error for a transport failure after the response started: a :class:`StreamError`."""
        err = translate_transport_error(exc, engine_id=self.engine_id, url=self.base_url + path)
        if isinstance(err, StreamError):
            return err
        return StreamError(f"{self.engine_id}: the reply from {self.base_url}{path} broke off: {err}",
                           engine_id=self.engine_id)

    def health(self) -> bool:
        """GET :attr:`health_path` within ``health_timeout``; True on a 2xx. Never raises."""
        try:
            response = self.send_fresh(self._request(self.client, "GET", self.health_path, None,
                                                     self.health_timeout, None))
        except EngineError:
            return False
        try:
            response.read()
        except (httpx.HTTPError, OSError):
            return False
        finally:
            response.close()
        return response.status_code < 300
