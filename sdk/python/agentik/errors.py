"""Exceptions of the SDK."""

from typing import Optional

from .models import Error

__all__ = ["AgentikError", "ConnectionClosed", "Disconnected", "ConnectionLost"]


class AgentikError(Exception):
    """A refusal or failure reported by the server, or a connection that
    could not be made.

    ``code`` is the server's stable error code (``unauthorized``,
    ``not_found``, ``invalid``, ``busy``, ``unavailable``, ``llm_error``, …),
    ``details`` its human-readable explanation. For a failed turn
    ``reply_to`` is the id of the user message it answered.
    """

    def __init__(self, code: str, details: str = "", reply_to: Optional[str] = None) -> None:
        super().__init__(f"{code}: {details}" if details else code)
        self.code = code
        self.details = details
        self.reply_to = reply_to

    @classmethod
    def from_message(cls, m: Error) -> "AgentikError":
        """The exception of an ``ERROR`` message."""
        return cls(m.code, m.details, m.reply_to)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, details={self.details!r})"


class ConnectionClosed(AgentikError):
    """The connection has ended; :meth:`agentik.Client.reconnect` continues
    the same conversation on a new one. Raised by ``receive``, ``send`` and
    ``ask`` on an ended connection (code ``closed`` after :meth:`close`)."""

    def __init__(self, code: str = "closed", details: str = "the connection is closed") -> None:
        super().__init__(code, details)


class Disconnected(ConnectionClosed):
    """The server ended the connection cleanly with ``GRACEFUL_DISCONNECT``;
    ``reason`` is ``idle`` or ``shutdown`` (None if the server gave none).
    Iterating the client ends quietly instead of raising this."""

    def __init__(self, reason: Optional[str]) -> None:
        super().__init__("disconnected", f"the server disconnected ({reason or 'no reason given'})")
        self.reason = reason


class ConnectionLost(ConnectionClosed):
    """The connection broke without ``GRACEFUL_DISCONNECT`` (the server died,
    the network failed, or the server dropped this client). Code
    ``unavailable``; ``close_code`` is the WebSocket close code, if any."""

    def __init__(self, details: str, close_code: Optional[int] = None) -> None:
        super().__init__("unavailable", details)
        self.close_code = close_code
