"""The messages of the WebSocket chat protocol as pydantic models.

The seed document names the directions from the server's side: *outgoing*
messages go from the server to the client (``STATUS``, ``AGENT_EVENT``,
``ERROR``, ``GRACEFUL_DISCONNECT``), *incoming* ones from the client to the
server (``USER_MESSAGE``). Each direction is a discriminated union on
``type`` (and, inside ``AGENT_EVENT``, on ``subtype``), so::

    message = OutgoingMessage.model_validate_json(json_data)

returns a :class:`Status`, :class:`TextChunk`, :class:`End`, :class:`Error`,
… according to the frame. Fields this server adds to the seed's messages
(``STATUS.conversation_id``, ``END.reason``, …) are optional and ``None``
when absent; :meth:`Message.to_json` leaves ``None`` fields out, so a seed
frame goes back out exactly as it came in.

Adding a message is two steps: define its class (with a ``Literal`` ``type``,
and ``subtype`` for an agent event) and add it to the union it belongs to
(:data:`AgentEvent`, :data:`ServerMessage` or :data:`ClientMessage`); the
parsers and the client pick it up from there.
"""

import json
from typing import Any, Dict, FrozenSet, List, Optional, Tuple, Union

from pydantic import BaseModel, Field

from . import _compat

try:  # Python 3.9+
    from typing import Annotated, Literal, get_args
except ImportError:  # pragma: no cover - Python 3.8
    from typing_extensions import Annotated, Literal, get_args  # type: ignore[assignment]

__all__ = [
    "Message",
    "Status",
    "TextChunk",
    "End",
    "ReasoningChunk",
    "ToolCall",
    "ToolResult",
    "ApprovalRequest",
    "Error",
    "GracefulDisconnect",
    "UserMessage",
    "Interrupt",
    "Approval",
    "UnknownMessage",
    "AgentEvent",
    "ServerMessage",
    "ClientMessage",
    "OutgoingMessage",
    "IncomingMessage",
    "parse_server_message",
    "BusyPolicy",
    "EndReason",
]

BusyPolicy = Literal["enqueue", "interrupt", "reject"]
"""What a message does when a turn is running (``USER_MESSAGE.if_busy``)."""

EndReason = Literal["completed", "interrupted", "error"]
"""The values of ``END.reason`` this server sends (kept a plain ``str`` on
the model, so a newer server's reason does not break an older client)."""


class Message(BaseModel):
    """Base of every protocol message."""

    def to_dict(self) -> Dict[str, Any]:
        """The message as JSON-ready data, without fields that are None."""
        return _compat.dump(self)

    def to_json(self) -> str:
        """The message as one compact JSON frame, without fields that are None."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))


# --- server → client ("outgoing" in the seed) -------------------------------


class Status(Message):
    """Sent once when the connection is ready; send nothing before it.

    ``conversation_id`` (keep it to reconnect), ``working`` (a turn is
    running) and ``events`` (the extensions in effect) are this server's
    additions.
    """

    type: Literal["STATUS"] = "STATUS"
    conversation_id: Optional[str] = None
    working: Optional[bool] = None
    events: Optional[List[str]] = None


class TextChunk(Message):
    """A delta of the answer being written."""

    type: Literal["AGENT_EVENT"] = "AGENT_EVENT"
    subtype: Literal["TEXT_CHUNK"] = "TEXT_CHUNK"
    text: str


class End(Message):
    """The turn ended (exactly once per turn).

    ``tokens_used`` is the turn's input plus output tokens (0 when the model
    reported none); ``reason`` (an addition) is ``completed``,
    ``interrupted`` or ``error``.
    """

    type: Literal["AGENT_EVENT"] = "AGENT_EVENT"
    subtype: Literal["END"] = "END"
    tokens_used: int = 0
    reason: Optional[str] = None


class ReasoningChunk(Message):
    """A delta of the model's reasoning (extension ``reasoning``)."""

    type: Literal["AGENT_EVENT"] = "AGENT_EVENT"
    subtype: Literal["REASONING_CHUNK"] = "REASONING_CHUNK"
    text: str


class ToolCall(Message):
    """A tool the model called (extension ``tools``); ``arguments`` is JSON."""

    type: Literal["AGENT_EVENT"] = "AGENT_EVENT"
    subtype: Literal["TOOL_CALL"] = "TOOL_CALL"
    call_id: str
    name: str
    arguments: Optional[Any] = None


class ToolResult(Message):
    """A tool's answer (extension ``tools``); ``is_error`` when it failed."""

    type: Literal["AGENT_EVENT"] = "AGENT_EVENT"
    subtype: Literal["TOOL_RESULT"] = "TOOL_RESULT"
    call_id: str
    name: str
    text: str = ""
    is_error: bool = False


class ApprovalRequest(Message):
    """A tool call that waits for a person's answer (tool approval extension,
    docs/websocket.md): sent to every connection of the conversation, and
    again for each pending call right after ``STATUS`` on attaching. Answer
    it with :class:`Approval` (``Client.approve`` / ``Client.deny``);
    ``arguments`` is the call's JSON object, ``expires_at`` (RFC 3339) is
    set when the server has an approval timeout."""

    type: Literal["AGENT_EVENT"] = "AGENT_EVENT"
    subtype: Literal["APPROVAL_REQUEST"] = "APPROVAL_REQUEST"
    call_id: str
    name: str
    arguments: Optional[Any] = None
    expires_at: Optional[str] = None


class Error(Message):
    """A failure: of a frame, of a request, or of a turn.

    On a failed turn ``reply_to`` (an addition) is the id of the user message
    it answered, and an :class:`End` with reason ``error`` follows.
    """

    type: Literal["ERROR"] = "ERROR"
    code: str
    details: str = ""
    reply_to: Optional[str] = None


class GracefulDisconnect(Message):
    """The server closes the connection right after this (normal close).

    ``reason`` (an addition) is ``idle`` or ``shutdown``.
    """

    type: Literal["GRACEFUL_DISCONNECT"] = "GRACEFUL_DISCONNECT"
    reason: Optional[str] = None


AgentEvent = Annotated[
    Union[TextChunk, End, ReasoningChunk, ToolCall, ToolResult, ApprovalRequest],
    Field(discriminator="subtype"),
]
"""Every ``AGENT_EVENT``, discriminated by ``subtype``."""

ServerMessage = Annotated[
    Union[Status, AgentEvent, Error, GracefulDisconnect],
    Field(discriminator="type"),
]
"""Every message the server sends, discriminated by ``type``."""


# --- client → server ("incoming" in the seed) -------------------------------


class UserMessage(Message):
    """The user's text. ``if_busy`` (an addition) overrides the server's busy
    policy for this message: ``enqueue``, ``interrupt`` or ``reject``."""

    type: Literal["USER_MESSAGE"] = "USER_MESSAGE"
    text: str
    if_busy: Optional[BusyPolicy] = None


class Interrupt(Message):
    """Cancel the running turn (an addition); its END follows."""

    type: Literal["INTERRUPT"] = "INTERRUPT"


class Approval(Message):
    """The answer to an :class:`ApprovalRequest` (an addition): ``approved``,
    an optional ``reason`` (the model is told "denied by the user:
    <reason>"), and, only with ``approved=True``, edited ``arguments`` (a
    JSON object the tool's schema accepts) that replace the call's. Nothing
    comes back on success; a refusal is an ``ERROR`` (``invalid``,
    ``not_found``, ``conflict``)."""

    type: Literal["APPROVAL"] = "APPROVAL"
    call_id: str
    approved: bool
    reason: Optional[str] = None
    arguments: Optional[Dict[str, Any]] = None


ClientMessage = Annotated[Union[UserMessage, Interrupt, Approval], Field(discriminator="type")]
"""Every message the client sends, discriminated by ``type``."""


class UnknownMessage(Message):
    """A server message of a type or subtype this SDK does not know (a newer
    server may add some). ``data`` is the frame as received."""

    type: str
    subtype: Optional[str] = None
    data: Dict[str, Any]

    def to_dict(self) -> Dict[str, Any]:
        return dict(self.data)


# --- parsing -----------------------------------------------------------------


def _members(tp: Any) -> List[Any]:
    """The model classes of a (possibly nested, Annotated) union."""
    args = get_args(tp)
    if not args:
        return [tp]
    if hasattr(tp, "__metadata__"):  # Annotated[X, ...]
        return _members(args[0])
    out: List[Any] = []
    for a in args:
        out.extend(_members(a))
    return out


def _field_default(cls: Any, name: str) -> Optional[str]:
    fields = getattr(cls, "model_fields", None)  # pydantic 2
    if fields is None:
        fields = cls.__fields__  # pydantic 1
    f = fields.get(name)
    return None if f is None else f.default


def _discriminators(tp: Any) -> FrozenSet[Tuple[str, Optional[str]]]:
    return frozenset((str(_field_default(c, "type")), _field_default(c, "subtype")) for c in _members(tp))


_server_python, _server_json = _compat.union_parser(ServerMessage)
_client_python, _client_json = _compat.union_parser(ClientMessage)
_SERVER_KINDS = _discriminators(ServerMessage)
_SERVER_TYPES = frozenset(t for t, _ in _SERVER_KINDS)


class OutgoingMessage:
    """Parser of server → client messages (the seed's ``OutgoingMessage``).

    ``model_validate_json`` and ``model_validate`` return the message's own
    class and raise :class:`ValueError` (``pydantic.ValidationError``) for a
    frame that is not one of :data:`ServerMessage`, including types this SDK
    does not know; :func:`parse_server_message` is the lenient variant.
    """

    def __init__(self) -> None:
        raise TypeError("OutgoingMessage is a parser: call OutgoingMessage.model_validate_json(data)")

    @staticmethod
    def model_validate_json(data: _compat.JSONInput) -> ServerMessage:
        """Parses one JSON frame into its message class."""
        return _server_json(data)  # type: ignore[no-any-return]

    @staticmethod
    def model_validate(obj: Any) -> ServerMessage:
        """Validates decoded JSON (a dict) into its message class."""
        return _server_python(obj)  # type: ignore[no-any-return]


class IncomingMessage:
    """Parser of client → server messages (the seed's incoming messages)."""

    def __init__(self) -> None:
        raise TypeError("IncomingMessage is a parser: call IncomingMessage.model_validate_json(data)")

    @staticmethod
    def model_validate_json(data: _compat.JSONInput) -> ClientMessage:
        """Parses one JSON frame into :class:`UserMessage`, :class:`Interrupt` or :class:`Approval`."""
        return _client_json(data)  # type: ignore[no-any-return]

    @staticmethod
    def model_validate(obj: Any) -> ClientMessage:
        """Validates decoded JSON (a dict) into its message class."""
        return _client_python(obj)  # type: ignore[no-any-return]


def parse_server_message(
    data: _compat.JSONInput,
) -> Union[ServerMessage, UnknownMessage]:
    """Parses a server frame, tolerating what a newer server may add.

    A known ``type``/``subtype`` is validated into its class (ValueError when
    its fields are wrong); an unknown one becomes :class:`UnknownMessage`.
    A frame that is not a JSON object with a string ``type`` is a ValueError.
    """
    obj = _compat.loads(data)
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str) or not obj["type"]:
        raise ValueError('a server message must be a JSON object with a string "type"')
    typ: str = obj["type"]
    sub = obj.get("subtype")
    subtype = sub if isinstance(sub, str) else None
    known = (typ, subtype) in _SERVER_KINDS or (typ in _SERVER_TYPES and typ != "AGENT_EVENT")
    if not known:
        return UnknownMessage(type=typ, subtype=subtype, data=obj)
    return OutgoingMessage.model_validate(obj)
