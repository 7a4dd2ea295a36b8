"""JSON over HTTP to a model server, each fault a ServerError whose message says what happened and what to try.

One connection per request (a step's requests run on several threads at once); every request is bounded in time
(the address's timeout) and `cancel_in_flight` aborts those waiting, from any thread (Stop).
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from typing import Any
from urllib.parse import urlsplit

ANSWER_LIMIT = 256 * 1024 * 1024  # bytes: an answer larger than this is refused, not read


class ServerError(RuntimeError):
    """A request to the server failed; the message names the server, the request and what went wrong."""


class ServerCancelled(ServerError):
    """A request was aborted by cancel_in_flight (Stop)."""


class JsonClient:
    def __init__(self, url: str, timeout_s: float, api_key: str | None = None) -> None:
        parts = urlsplit(url)
        self.url = url
        self.timeout_s = timeout_s
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if self._https else 80)
        self._prefix = parts.path.rstrip("/")
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._lock = threading.Lock()
        self._in_flight: set[http.client.HTTPConnection] = set()
        self._aborted: set[http.client.HTTPConnection] = set()

    @property
    def in_flight(self) -> int:
        """Requests waiting for an answer now (progress shows them)."""
        with self._lock:
            return len(self._in_flight)

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self.request("POST", path, body)

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """The answer's JSON; ServerError (ServerCancelled when aborted) for anything else."""
        where = f"{method} {self.url}{path}"
        connection = self._connection()
        try:
            status, data = self._exchange(connection, method, path, body)
        except ServerError:
            raise
        except Exception as exc:  # noqa: BLE001 - every transport fault becomes one message
            if self._was_aborted(connection):
                raise ServerCancelled(f"{where}: cancelled") from None
            raise ServerError(f"{where}: {transport_message(exc, self.timeout_s)}") from None
        finally:
            self._release(connection)
        if status >= 400:
            raise ServerError(f"{where}: HTTP {status}: {error_text(data)}")
        try:
            return json.loads(data)
        except (ValueError, UnicodeDecodeError):
            raise ServerError(f"{where}: the answer is not JSON ({len(data)} bytes: {snippet(data)}); a truncated "
                              "or garbled answer, or not a model server at this address") from None

    def cancel_in_flight(self) -> None:
        """Abort every request waiting now: each raises ServerCancelled in its thread."""
        with self._lock:
            waiting = list(self._in_flight)
            self._aborted.update(waiting)
        for connection in waiting:
            sock = connection.sock
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    # -- internals --

    def _connection(self) -> http.client.HTTPConnection:
        kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        connection = kind(self._host, self._port, timeout=self.timeout_s)
        with self._lock:
            self._in_flight.add(connection)
        return connection

    def _release(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            self._in_flight.discard(connection)
            self._aborted.discard(connection)
        connection.close()

    def _was_aborted(self, connection: http.client.HTTPConnection) -> bool:
        with self._lock:
            return connection in self._aborted

    def _exchange(self, connection, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, bytes]:
        payload = None if body is None else json.dumps(body).encode()
        connection.request(method, self._prefix + path, body=payload, headers=self._headers)
        if self._was_aborted(connection):  # cancelled while connecting
            raise ConnectionAbortedError("cancelled")
        response = connection.getresponse()
        length = response.getheader("Content-Length")
        if length is not None and length.isdigit() and int(length) > ANSWER_LIMIT:
            raise ServerError(f"{method} {self.url}{path}: an answer of {int(length)} bytes (limit {ANSWER_LIMIT}): "
                              "ask for fewer alternatives")
        data = response.read(ANSWER_LIMIT + 1)
        if len(data) > ANSWER_LIMIT:
            raise ServerError(f"{method} {self.url}{path}: an answer over {ANSWER_LIMIT} bytes: ask for fewer "
                              "alternatives")
        if length is not None and length.isdigit() and len(data) < int(length):
            raise http.client.IncompleteRead(data, int(length) - len(data))
        return response.status, data


def transport_message(exc: Exception, timeout_s: float) -> str:
    """What a transport fault means, in words."""
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused: nothing listens there (start the server, or check the host and port)"
    if isinstance(exc, TimeoutError | socket.timeout):
        return f"no answer within {timeout_s:g} s (a slow or stuck server: raise the address's timeout=)"
    if isinstance(exc, http.client.IncompleteRead):
        return (f"the answer was cut off after {len(exc.partial)} bytes, {exc.expected} short (the server stopped "
                "or the connection dropped mid-answer)")
    if isinstance(exc, http.client.RemoteDisconnected | ConnectionResetError | BrokenPipeError):
        return "the server closed the connection without an answer (it stopped, crashed or restarted)"
    if isinstance(exc, socket.gaierror):
        return f"the host name does not resolve ({exc.strerror})"
    if isinstance(exc, http.client.HTTPException):
        return f"not an HTTP answer ({type(exc).__name__}: {exc})"
    return f"{type(exc).__name__}: {exc}"


def error_text(data: bytes) -> str:
    """A server's error answer in one line: its JSON error message when it has one."""
    try:
        answer = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return snippet(data) or "(no body)"
    if isinstance(answer, dict):
        error = answer.get("error", answer.get("message", answer.get("detail")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error is not None:
            return str(error)[:300]
    return snippet(data)


def snippet(data: bytes, limit: int = 120) -> str:
    text = data[:limit].decode("utf-8", errors="replace").replace("\n", " ")
    return text + ("…" if len(data) > limit else "")
