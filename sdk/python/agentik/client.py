"""An asyncio client of the WebSocket chat protocol.

One connection is one conversation: :func:`connect` opens it (a new
conversation, or ``conversation_id=`` to attach) and returns once the server
has sent ``STATUS``. ``send`` posts ``USER_MESSAGE``; the answer streams as
:class:`~agentik.models.TextChunk` deltas and ends with
:class:`~agentik.models.End`. ``async for message in client`` reads the
server's messages in order; ``ask`` sends and gathers one whole answer.
"""

import asyncio
import importlib
import json
import logging
import random
import urllib.parse
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Awaitable, Callable, Dict, Generator, Iterable, List, Mapping, Optional, Type, Union

from websockets.exceptions import ConnectionClosed as _WSClosed
from websockets.exceptions import WebSocketException as _WSException

from .errors import AgentikError, ConnectionClosed, ConnectionLost, Disconnected
from .models import (
    Approval,
    ApprovalRequest,
    BusyPolicy,
    End,
    Error,
    GracefulDisconnect,
    Interrupt,
    Message,
    ServerMessage,
    Status,
    TextChunk,
    UnknownMessage,
    UserMessage,
    parse_server_message,
)

# websockets >= 13 has the asyncio implementation in websockets.asyncio;
# 10-12 have only the one now called "legacy", as websockets.client. The
# import goes through importlib so that mypy accepts it with either.
try:
    _ws_client: Any = importlib.import_module("websockets.asyncio.client")
    _LEGACY_WEBSOCKETS = False
except ImportError:
    _ws_client = importlib.import_module("websockets.client")
    _LEGACY_WEBSOCKETS = True
_ws_connect: Any = _ws_client.connect

__all__ = ["Client", "Answer", "connect", "ws_url", "agent_prefix", "DEFAULT_PREFIX"]

log = logging.getLogger("agentik")

DEFAULT_PREFIX = "/agentik"
"""Where the default agent is mounted (``/agentik/ws``, ``/agentik/conversations``)."""

# Codes worth retrying in reconnect: the server is restarting, unreachable
# or asks to come back later. Anything else (unauthorized, not_found,
# invalid, …) will not change by waiting.
_RETRYABLE = frozenset({"unavailable", "rate_limited"})

Received = Union[ServerMessage, UnknownMessage]

OnApproval = Callable[[ApprovalRequest], Union[bool, Approval, Awaitable[Union[bool, Approval]]]]
"""What :meth:`Client.ask` calls for a tool call that waits for approval."""


def agent_prefix(agent: Optional[str]) -> str:
    """The path prefix of an agent: ``/agentik`` for the default agent (None),
    ``/agents/{agent}`` for a named one."""
    if agent is None:
        return DEFAULT_PREFIX
    if not agent:
        raise ValueError("agent must be a non-empty id (or None for the default agent)")
    return "/agents/" + urllib.parse.quote(agent, safe="")


def ws_url(
    url: str,
    *,
    agent: Optional[str] = None,
    conversation_id: Optional[str] = None,
    title: Optional[str] = None,
    temporal: bool = False,
    events: Iterable[str] = (),
) -> str:
    """The WebSocket endpoint for ``url``.

    ``url`` is the server (``http://localhost:8080``, ``ws://…``, ``https://…``
    and ``wss://…`` all work), optionally with the path prefix it is mounted
    under behind a proxy; the endpoint is ``{prefix}/agentik/ws``, or
    ``{prefix}/agents/{agent}/ws`` for a named agent. A URL whose path already
    ends in ``/ws`` is taken as the endpoint itself (then ``agent`` must be
    None).
    """
    u = urllib.parse.urlsplit(url)
    schemes = {"http": "ws", "ws": "ws", "https": "wss", "wss": "wss"}
    if u.scheme not in schemes or not u.netloc:
        raise ValueError(f"not a server URL: {url!r} (want http://host:port or ws://host:port)")
    path = u.path.rstrip("/")
    if path.endswith("/ws"):
        if agent is not None:
            raise ValueError("give either the endpoint URL (…/ws) or agent=, not both")
    else:
        path = path + agent_prefix(agent) + "/ws"
    query = urllib.parse.parse_qsl(u.query, keep_blank_values=True)
    if conversation_id:
        query.append(("conversation_id", conversation_id))
    else:
        if title:
            query.append(("title", title))
        if temporal:
            query.append(("temporal", "true"))
    ev = [e for e in events]
    if ev:
        query.append(("events", ",".join(ev)))
    return urllib.parse.urlunsplit((schemes[u.scheme], u.netloc, path, urllib.parse.urlencode(query), ""))


@dataclass
class Answer:
    """One answer gathered by :meth:`Client.ask`.

    ``text`` is the answer; ``tokens_used`` and ``reason`` come from its
    ``END``; ``events`` holds the other messages of the turn (tool calls and
    results, reasoning, messages this SDK does not know). ``str(answer)`` is
    the text.
    """

    text: str
    tokens_used: int
    reason: Optional[str]
    events: List[Received] = field(default_factory=list)

    def __str__(self) -> str:
        return self.text


class Client:
    """A connection to one conversation of an agentik server.

    Construct it and ``await client.connect()``, or use :func:`connect`.
    Send and receive may run concurrently with each other; receive from one
    task at a time (``async for``, ``receive`` and ``ask`` all receive).
    Read promptly: while unread messages pile up the connection is not read
    and pings go unanswered, and the server drops a client that stalls for
    too long.
    """

    def __init__(
        self,
        url: str = "http://localhost:8080",
        *,
        token: Optional[str] = None,
        conversation_id: Optional[str] = None,
        agent: Optional[str] = None,
        title: Optional[str] = None,
        temporal: bool = False,
        events: Iterable[str] = (),
        headers: Optional[Mapping[str, str]] = None,
        open_timeout: float = 10.0,
        max_message_bytes: int = 64 << 20,
    ) -> None:
        self._url = url
        self._token = token
        self._conversation_id = conversation_id
        self._agent = agent
        self._title = title
        self._temporal = temporal
        self._events = list(events)
        self._headers = dict(headers or {})
        self._open_timeout = open_timeout
        self._max_size = max_message_bytes
        ws_url(url, agent=agent)  # a bad URL fails here, not at connect

        self._ws: Any = None
        self._ended: Optional[ConnectionClosed] = None
        self._goodbye: Optional[GracefulDisconnect] = None
        self.status: Optional[Status] = None
        """The ``STATUS`` of the current connection (None before connect)."""
        self.tokens_used = 0
        """Total ``tokens_used`` of every ``END`` this client has received."""
        self.disconnect_reason: Optional[str] = None
        """``idle`` or ``shutdown`` once the server has said
        ``GRACEFUL_DISCONNECT`` on the current connection."""

    # --- state ---------------------------------------------------------------

    @property
    def conversation_id(self) -> Optional[str]:
        """The conversation of this client (known once connected)."""
        if self.status is not None and self.status.conversation_id:
            return self.status.conversation_id
        return self._conversation_id

    @property
    def url(self) -> str:
        """The WebSocket endpoint this client connects to."""
        return ws_url(
            self._url,
            agent=self._agent,
            conversation_id=self.conversation_id,
            title=self._title,
            temporal=self._temporal,
            events=self._events,
        )

    @property
    def open(self) -> bool:
        """Whether the connection is open (connected and not ended)."""
        return self._ws is not None

    # --- connecting ------------------------------------------------------------

    async def connect(self) -> Status:
        """Opens the connection and waits for ``STATUS``.

        Raises :class:`AgentikError`: ``unauthorized`` (missing or bad
        token), ``not_found`` (no such conversation, not yours, or no such
        agent), ``invalid`` (bad options), ``unavailable`` (unreachable, or
        shutting down).
        """
        if self._ws is not None:
            raise RuntimeError("already connected")
        return await self._open()

    async def _open(self) -> Status:
        uri = self.url
        headers = dict(self._headers)
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        try:
            if _LEGACY_WEBSOCKETS:
                ws = await _ws_connect(uri, extra_headers=headers, max_size=self._max_size, open_timeout=self._open_timeout)
            else:
                ws = await _ws_connect(uri, additional_headers=headers, max_size=self._max_size, open_timeout=self._open_timeout)
        except (_WSException, OSError, asyncio.TimeoutError) as e:
            raise _handshake_error(e) from e
        try:
            first = await asyncio.wait_for(ws.recv(), self._open_timeout)
            msg = parse_server_message(first)
        except (_WSClosed, asyncio.TimeoutError, ValueError, TypeError) as e:
            await _close_quietly(ws)
            raise AgentikError("unavailable", f"no STATUS from the server: {e!r}") from e
        if isinstance(msg, Error):
            # A refusal after the upgrade (not_found, invalid, …): ERROR, then
            # the server closes with 1008.
            await _close_quietly(ws)
            raise AgentikError.from_message(msg)
        if not isinstance(msg, Status):
            await _close_quietly(ws)
            raise AgentikError("unavailable", f"expected STATUS, got {msg.type}")
        self._ws = ws
        self._ended = None
        self._goodbye = None
        self.disconnect_reason = None
        self.status = msg
        return msg

    async def reconnect(
        self,
        *,
        timeout: Optional[float] = None,
        initial_delay: float = 0.1,
        max_delay: float = 5.0,
    ) -> Status:
        """Connects again to the same conversation.

        The current connection, if any, is closed first. While the server is
        unreachable or restarting (``unavailable``, ``rate_limited``) it
        retries after a delay that doubles from ``initial_delay`` up to
        ``max_delay`` (with jitter), for at most ``timeout`` seconds (None:
        until cancelled). A refusal for good (``unauthorized``,
        ``not_found``, …) is raised at once. Messages stored while
        disconnected are in the conversation's history (REST API); a turn
        still running streams its answer so far as one ``TEXT_CHUNK``.
        """
        await self.close()
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        delay = initial_delay
        attempt = 0
        while True:
            attempt += 1
            try:
                if deadline is None:
                    return await self._open()
                return await asyncio.wait_for(self._open(), max(deadline - loop.time(), 0.001))
            except asyncio.TimeoutError:
                raise AgentikError("unavailable", f"reconnect gave up after {timeout}s ({attempt} attempts)") from None
            except AgentikError as e:
                if e.code not in _RETRYABLE:
                    raise
                last = e
            wait = delay * random.uniform(0.5, 1.0)
            if deadline is not None and loop.time() + wait > deadline:
                raise AgentikError(last.code, f"reconnect gave up after {attempt} attempts: {last.details}") from last
            log.info("agentik: reconnect attempt %d failed (%s: %s); retrying in %.2fs", attempt, last.code, last.details, wait)
            await asyncio.sleep(wait)
            delay = min(delay * 2, max_delay)

    async def close(self) -> None:
        """Closes the connection normally. Idempotent."""
        ws = self._ws
        if ws is None:
            return
        self._ws = None
        if self._ended is None:
            self._ended = ConnectionClosed()
        await _close_quietly(ws)

    async def __aenter__(self) -> "Client":
        if self._ws is None:
            await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.close()

    # --- sending ---------------------------------------------------------------

    async def send(self, text: str, *, if_busy: Optional[BusyPolicy] = None) -> None:
        """Sends ``USER_MESSAGE``. A refusal (``busy``, ``invalid``, …) comes
        back as an ``ERROR`` message."""
        await self._write(UserMessage(text=text, if_busy=if_busy))

    async def interrupt(self) -> None:
        """Asks the server to cancel the running turn; its ``END`` (reason
        ``interrupted``) follows."""
        await self._write(Interrupt())

    async def approve(self, call_id: str, *, arguments: Optional[Mapping[str, Any]] = None, reason: Optional[str] = None) -> None:
        """Approves the waiting tool call ``call_id`` (an
        :class:`~agentik.models.ApprovalRequest`'s), optionally with edited
        ``arguments`` (a JSON object the tool's schema accepts) that replace
        the call's. Nothing comes back on success: the turn goes on. A
        refusal comes back as an ``ERROR``: ``invalid`` (bad arguments),
        ``not_found`` (no such call waits here), ``conflict`` (answered
        already, expired, or denied by an interrupt)."""
        await self._write(Approval(call_id=call_id, approved=True, reason=reason,
                                   arguments=None if arguments is None else dict(arguments)))

    async def deny(self, call_id: str, reason: Optional[str] = None) -> None:
        """Denies the waiting tool call ``call_id``; the model gets the error
        result "denied by the user: <reason>" and the turn goes on. Refusals
        as for :meth:`approve`."""
        await self._write(Approval(call_id=call_id, approved=False, reason=reason))

    async def _write(self, m: Message) -> None:
        ws = self._ws
        if ws is None:
            raise self._ended or ConnectionClosed("closed", "not connected")
        try:
            await ws.send(m.to_json())
        except _WSClosed as e:
            raise self._lost(ws, e) from e

    # --- receiving -------------------------------------------------------------

    async def receive(self) -> Received:
        """The next server message, whatever it is (``ERROR`` and
        ``GRACEFUL_DISCONNECT`` included). Raises :class:`ConnectionClosed`
        once the connection has ended: :class:`Disconnected` after
        ``GRACEFUL_DISCONNECT``, :class:`ConnectionLost` when it broke."""
        ws = self._ws
        if ws is None:
            raise self._ended or ConnectionClosed("closed", "not connected")
        try:
            raw = await ws.recv()
        except _WSClosed as e:
            raise self._lost(ws, e) from e
        if not isinstance(raw, str):
            await self._drop(ws, ConnectionLost("the server sent a binary frame; the protocol is JSON text"))
            raise self._ended  # type: ignore[misc]
        try:
            msg = parse_server_message(raw)
        except ValueError as e:
            await self._drop(ws, ConnectionLost(f"the server sent a frame this SDK cannot read: {e}"))
            raise self._ended from e  # type: ignore[misc]
        if isinstance(msg, End):
            self.tokens_used += msg.tokens_used
        elif isinstance(msg, GracefulDisconnect):
            self._goodbye = msg
            self.disconnect_reason = msg.reason
        return msg

    def __aiter__(self) -> "Client":
        return self

    async def __anext__(self) -> Received:
        """The next message for ``async for``: ``ERROR`` is raised as
        :class:`AgentikError` (the connection stays usable: iterate again to
        go on), ``GRACEFUL_DISCONNECT`` ends the iteration cleanly (then
        :meth:`reconnect` continues), a broken connection raises
        :class:`ConnectionLost`."""
        try:
            msg = await self.receive()
        except Disconnected:
            raise StopAsyncIteration
        except ConnectionLost:
            raise
        except ConnectionClosed:
            raise StopAsyncIteration
        if isinstance(msg, Error):
            raise AgentikError.from_message(msg)
        if isinstance(msg, GracefulDisconnect):
            await self._drop(self._ws, Disconnected(msg.reason))
            raise StopAsyncIteration
        return msg

    async def ask(
        self,
        text: str,
        *,
        if_busy: Optional[BusyPolicy] = None,
        on_approval: Optional[OnApproval] = None,
    ) -> Answer:
        """Sends ``text`` and gathers the answer up to its ``END``.

        A failed turn (``ERROR`` with ``reply_to``, then ``END``) raises its
        :class:`AgentikError` once the ``END`` has arrived, so the connection
        is ready for the next question; a refused message (``busy``,
        ``invalid``, …) raises at once. Use it when nothing else reads this
        client, on a conversation with no other turn running.

        A tool call that waits for approval is passed to ``on_approval``
        (a function or coroutine function of the
        :class:`~agentik.models.ApprovalRequest`) and answered with what it
        returns: ``True`` approves, ``False`` denies, an
        :class:`~agentik.models.Approval` says it all (reason, edited
        arguments). Without ``on_approval`` the request is one of the
        answer's ``events`` and ``ask`` waits until someone answers it
        elsewhere (another connection, REST, …).
        """
        await self.send(text, if_busy=if_busy)
        parts: List[str] = []
        events: List[Received] = []
        failure: Optional[AgentikError] = None
        while True:
            msg = await self.receive()
            if isinstance(msg, TextChunk):
                parts.append(msg.text)
            elif isinstance(msg, End):
                if failure is not None:
                    raise failure
                return Answer("".join(parts), msg.tokens_used, msg.reason, events)
            elif isinstance(msg, Error):
                if msg.reply_to is None:
                    raise AgentikError.from_message(msg)
                if failure is None:
                    failure = AgentikError.from_message(msg)
            elif isinstance(msg, GracefulDisconnect):
                await self._drop(self._ws, Disconnected(msg.reason))
                raise self._ended  # type: ignore[misc]
            else:
                events.append(msg)
                if isinstance(msg, ApprovalRequest) and on_approval is not None:
                    await self._answer(msg, on_approval)

    async def _answer(self, req: ApprovalRequest, on_approval: OnApproval) -> None:
        verdict = on_approval(req)
        if asyncio.iscoroutine(verdict):
            verdict = await verdict
        if isinstance(verdict, Approval):
            if verdict.call_id != req.call_id:
                raise ValueError(f"on_approval answered {verdict.call_id!r} for the call {req.call_id!r}")
            await self._write(verdict)
        elif isinstance(verdict, bool):
            await self._write(Approval(call_id=req.call_id, approved=verdict))
        else:
            raise TypeError(f"on_approval must return a bool or an Approval, not {type(verdict).__name__}")

    # --- internals -----------------------------------------------------------

    def _lost(self, ws: Any, e: _WSClosed) -> ConnectionClosed:
        """The exception for ws having closed, recording it if ws is current."""
        if ws is not self._ws:
            return self._ended or ConnectionClosed()  # closed or replaced by us
        self._ws = None
        rcvd = getattr(e, "rcvd", None)
        if self._goodbye is not None:
            self._ended = Disconnected(self._goodbye.reason)
        else:
            code = getattr(rcvd, "code", None)
            reason = getattr(rcvd, "reason", "") or ""
            details = "the connection was lost"
            if code is not None:
                details += f" (close {code}{' ' + reason if reason else ''})"
            self._ended = ConnectionLost(details, code)
        return self._ended

    async def _drop(self, ws: Any, ended: ConnectionClosed) -> None:
        if ws is None or ws is not self._ws:
            return
        self._ws = None
        self._ended = ended
        await _close_quietly(ws)


class _Connecting:
    """What :func:`connect` returns: await it, or use it with ``async with``."""

    def __init__(self, client: Client) -> None:
        self._client = client

    async def _go(self) -> Client:
        await self._client.connect()
        return self._client

    def __await__(self) -> Generator[Any, None, Client]:
        return self._go().__await__()

    async def __aenter__(self) -> Client:
        return await self._go()

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self._client.close()


def connect(
    url: str = "http://localhost:8080",
    *,
    token: Optional[str] = None,
    conversation_id: Optional[str] = None,
    agent: Optional[str] = None,
    title: Optional[str] = None,
    temporal: bool = False,
    events: Iterable[str] = (),
    headers: Optional[Mapping[str, str]] = None,
    open_timeout: float = 10.0,
    max_message_bytes: int = 64 << 20,
) -> _Connecting:
    """Connects to the server at ``url`` and returns once ``STATUS`` arrived.

    ``client = await connect(url, …)``, or ``async with connect(url, …) as
    client:`` (closed on exit). ``token`` is sent as ``Authorization:
    Bearer``; ``conversation_id`` attaches to an existing conversation
    (otherwise a new one is created, named ``title``, in memory only when
    ``temporal``); ``agent`` picks ``/agents/{agent}/ws`` instead of the
    default agent's ``/agentik/ws``; ``events`` asks for the extensions
    ``tools`` and ``reasoning``. Raises :class:`AgentikError` when refused.
    """
    return _Connecting(
        Client(
            url,
            token=token,
            conversation_id=conversation_id,
            agent=agent,
            title=title,
            temporal=temporal,
            events=events,
            headers=headers,
            open_timeout=open_timeout,
            max_message_bytes=max_message_bytes,
        )
    )


async def _close_quietly(ws: Any) -> None:
    """Closes ws normally; a connection that is already broken is fine."""
    try:
        await ws.close()
    except (_WSClosed, OSError, asyncio.TimeoutError):
        pass


def _http_status(e: BaseException) -> Optional[int]:
    resp = getattr(e, "response", None)  # websockets >= 13: InvalidStatus
    status = getattr(resp, "status_code", None)
    if status is None:
        status = getattr(e, "status_code", None)  # websockets 10-12: InvalidStatusCode
    return int(status) if status is not None else None


def _handshake_error(e: BaseException) -> AgentikError:
    """The AgentikError of a failed opening handshake."""
    status = _http_status(e)
    if status is None:
        if isinstance(e, asyncio.TimeoutError):
            return AgentikError("unavailable", "the server did not complete the handshake in time")
        return AgentikError("unavailable", f"cannot connect: {e}")
    body = getattr(getattr(e, "response", None), "body", None)
    if body:
        try:
            err = json.loads(body)["error"]
            return AgentikError(str(err["code"]), str(err.get("message", "")))
        except (ValueError, KeyError, TypeError):
            pass
    known: Dict[int, AgentikError] = {
        401: AgentikError("unauthorized", "missing or invalid credentials (HTTP 401)"),
        403: AgentikError("forbidden", "the server refused this origin or client (HTTP 403)"),
        404: AgentikError("not_found", "no WebSocket endpoint here (HTTP 404): check the URL and the agent id"),
        429: AgentikError("rate_limited", "too many requests (HTTP 429)"),
        500: AgentikError("internal", "the server failed (HTTP 500)"),
    }
    if status in known:
        return known[status]
    if status >= 500:
        return AgentikError("unavailable", f"the server is unavailable (HTTP {status})")
    return AgentikError(f"http_{status}", f"the server refused the upgrade (HTTP {status})")
