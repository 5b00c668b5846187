"""A small helper for the native REST API: create, list, get and delete
conversations, and read a conversation's journal.

It uses only the standard library (``urllib``), run in a worker thread so
that its methods can be awaited beside the WebSocket client.
"""

import asyncio
import json
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from typing import Any, Dict, List, Literal, Mapping, Optional

from pydantic import BaseModel

from . import _compat
from .client import agent_prefix
from .errors import AgentikError
from .models import BusyPolicy

__all__ = ["Rest", "Conversation", "ConversationPage", "ForkedFrom", "Sent", "Tokens"]


class Tokens(BaseModel):
    """Running token totals of a conversation."""

    input: int = 0
    output: int = 0


class ForkedFrom(BaseModel):
    """Where a fork was copied from: the conversation and the last message
    of the copied path."""

    conversation_id: str
    seq: int


class Conversation(BaseModel):
    """A conversation as the REST API shows it. ``head`` is the seq of the
    last message of its active path (None while it has no message);
    ``forked_from`` is set on a fork."""

    id: str
    title: Optional[str] = None
    temporal: bool = False
    created_at: datetime
    updated_at: datetime
    working: bool = False
    supports_image_input: bool = False
    supports_image_output: bool = False
    tokens: Optional[Tokens] = None
    head: Optional[int] = None
    forked_from: Optional[ForkedFrom] = None


class Sent(BaseModel):
    """An accepted message or regenerate (202): the user message's id and
    seq. The answer arrives as events ``reply_to`` that message."""

    message_id: str
    seq: int


class ConversationPage(BaseModel):
    """One page of conversations, newest ``updated_at`` first; pass ``next``
    as ``before`` to get the following page (None: this is the last)."""

    conversations: List[Conversation]
    next: Optional[str] = None


class Rest:
    """The REST API of one agent at ``url`` (``http://localhost:8080``).

    ``agent`` selects ``/agents/{agent}`` instead of the default agent's
    ``/agentik``. Failures raise :class:`AgentikError` with the server's
    error code (``unauthorized``, ``not_found``, …), or ``unavailable`` when
    the server cannot be reached.
    """

    def __init__(
        self,
        url: str = "http://localhost:8080",
        *,
        token: Optional[str] = None,
        agent: Optional[str] = None,
        timeout: float = 30.0,
    ) -> None:
        u = urllib.parse.urlsplit(url)
        schemes = {"http": "http", "ws": "http", "https": "https", "wss": "https"}
        if u.scheme not in schemes or not u.netloc:
            raise ValueError(f"not a server URL: {url!r} (want http://host:port)")
        self._base = urllib.parse.urlunsplit((schemes[u.scheme], u.netloc, u.path.rstrip("/") + agent_prefix(agent), "", ""))
        self._token = token
        self._timeout = timeout

    async def create_conversation(self, *, title: Optional[str] = None, temporal: bool = False) -> Conversation:
        """Creates a conversation (``temporal``: kept in memory only)."""
        body: Dict[str, Any] = {}
        if title:
            body["title"] = title
        if temporal:
            body["temporal"] = True
        data = await self._call("POST", "/conversations", body=body)
        return _compat.validate(Conversation, data)  # type: ignore[no-any-return]

    async def list_conversations(self, *, limit: Optional[int] = None, before: Optional[str] = None) -> ConversationPage:
        """One page of the caller's conversations, newest first."""
        query: Dict[str, str] = {}
        if limit is not None:
            query["limit"] = str(limit)
        if before:
            query["before"] = before
        data = await self._call("GET", "/conversations", query=query)
        return _compat.validate(ConversationPage, data)  # type: ignore[no-any-return]

    async def get_conversation(self, conversation_id: str) -> Conversation:
        """One conversation (``not_found`` if it does not exist or is not yours)."""
        data = await self._call("GET", "/conversations/" + _seg(conversation_id))
        return _compat.validate(Conversation, data)  # type: ignore[no-any-return]

    async def delete_conversation(self, conversation_id: str) -> None:
        """Deletes a conversation and its journal."""
        await self._call("DELETE", "/conversations/" + _seg(conversation_id))

    async def messages(
        self,
        conversation_id: str,
        *,
        after: Optional[int] = None,
        limit: Optional[int] = None,
        branch: Optional[Literal["head", "all"]] = None,
    ) -> List[Dict[str, Any]]:
        """One page of the conversation's journal in ascending ``seq``, as the
        API's JSON objects (``type`` is ``user_message``, ``assistant_message``,
        …): the head path, or with ``branch="all"`` every message of every
        branch. On a branching server each message has ``parent`` (the seq it
        follows; absent at the root) and, where it has any, ``siblings`` (the
        seqs of every message with the same parent, itself included)."""
        query: Dict[str, str] = {}
        if after is not None:
            query["after"] = str(after)
        if limit is not None:
            query["limit"] = str(limit)
        if branch is not None:
            query["branch"] = branch
        data = await self._call("GET", "/conversations/" + _seg(conversation_id) + "/messages", query=query)
        out: List[Dict[str, Any]] = data["messages"]
        return out

    async def send(
        self,
        conversation_id: str,
        text: str,
        *,
        parent: Optional[int] = None,
        if_busy: Optional[BusyPolicy] = None,
    ) -> Sent:
        """Sends a user message over REST. ``parent`` is the seq of the
        message it follows (default: the head); a parent before the head is
        an edit: a new branch, answered on its own (to edit message *n*, pass
        *n*'s own ``parent``; 0 is the root). Errors: ``not_found`` (no such
        parent), ``invalid`` (a parent a turn cannot follow), ``busy``
        (``if_busy="reject"`` while a turn runs)."""
        body: Dict[str, Any] = {"content": [{"type": "text", "text": text}]}
        if parent is not None:
            body["parent"] = parent
        if if_busy is not None:
            body["if_busy"] = if_busy
        data = await self._call("POST", "/conversations/" + _seg(conversation_id) + "/messages", body=body)
        return _compat.validate(Sent, data)  # type: ignore[no-any-return]

    async def regenerate(
        self, conversation_id: str, *, seq: Optional[int] = None, if_busy: Optional[BusyPolicy] = None
    ) -> Sent:
        """Answers user message ``seq`` (default: the head path's last user
        message) again, on a new branch that becomes the head; the old answer
        stays, a sibling. Errors: ``not_found`` (no such message),
        ``invalid`` (not a user message, or its turn is still open),
        ``busy``."""
        body: Dict[str, Any] = {}
        if seq is not None:
            body["seq"] = seq
        if if_busy is not None:
            body["if_busy"] = if_busy
        data = await self._call("POST", "/conversations/" + _seg(conversation_id) + "/regenerate", body=body)
        return _compat.validate(Sent, data)  # type: ignore[no-any-return]

    async def set_head(self, conversation_id: str, seq: int) -> Conversation:
        """Moves the conversation's head to message ``seq`` (usually another
        branch's last message): the path up to it is what the model and every
        front door see from now on. Errors: ``not_found`` (no such message),
        ``busy`` (a turn runs)."""
        data = await self._call("PUT", "/conversations/" + _seg(conversation_id) + "/head", body={"seq": seq})
        return _compat.validate(Conversation, data)  # type: ignore[no-any-return]

    async def fork(self, conversation_id: str, *, seq: Optional[int] = None) -> Conversation:
        """Copies the path up to message ``seq`` (default: the head) into a
        new conversation of the same owner and returns it (``forked_from``
        names the source)."""
        body: Dict[str, Any] = {}
        if seq is not None:
            body["seq"] = seq
        data = await self._call("POST", "/conversations/" + _seg(conversation_id) + "/fork", body=body)
        return _compat.validate(Conversation, data)  # type: ignore[no-any-return]

    async def approvals(self, conversation_id: str) -> List[Dict[str, Any]]:
        """The tool calls waiting for approval in the conversation, as the
        API's JSON objects (``call_id``, ``name``, ``arguments``,
        ``reply_to``, ``requested_at``, ``expires_at``?, ``schema``? — the
        tool's parameters, for an edit form)."""
        data = await self._call("GET", "/conversations/" + _seg(conversation_id) + "/approvals")
        out: List[Dict[str, Any]] = data["approvals"]
        return out

    async def approve(
        self, conversation_id: str, call_id: str, *, arguments: Optional[Mapping[str, Any]] = None, reason: Optional[str] = None
    ) -> None:
        """Approves a waiting tool call, optionally with edited ``arguments``.
        Errors: ``not_found`` (no such call waits), ``conflict`` (answered
        already), ``invalid`` (arguments the tool's schema refuses)."""
        body: Dict[str, Any] = {"approved": True}
        if arguments is not None:
            body["arguments"] = dict(arguments)
        if reason is not None:
            body["reason"] = reason
        await self._call("POST", "/conversations/" + _seg(conversation_id) + "/approvals/" + _seg(call_id), body=body)

    async def deny(self, conversation_id: str, call_id: str, reason: Optional[str] = None) -> None:
        """Denies a waiting tool call (the model is told "denied by the user:
        <reason>"). Errors as for :meth:`approve`."""
        body: Dict[str, Any] = {"approved": False}
        if reason is not None:
            body["reason"] = reason
        await self._call("POST", "/conversations/" + _seg(conversation_id) + "/approvals/" + _seg(call_id), body=body)

    async def _call(
        self, method: str, path: str, *, body: Optional[Mapping[str, Any]] = None, query: Optional[Mapping[str, str]] = None
    ) -> Any:
        return await asyncio.to_thread(self._request, method, path, body, query)

    def _request(self, method: str, path: str, body: Optional[Mapping[str, Any]], query: Optional[Mapping[str, str]]) -> Any:
        url = self._base + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raise _http_error(e) from None
        except (urllib.error.URLError, OSError) as e:
            raise AgentikError("unavailable", f"cannot reach {self._base}: {e}") from e
        return json.loads(raw) if raw else None


def _seg(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _http_error(e: urllib.error.HTTPError) -> AgentikError:
    try:
        err = json.loads(e.read())["error"]
        return AgentikError(str(err["code"]), str(err.get("message", "")))
    except (ValueError, KeyError, TypeError):
        # Not the API's error body: a proxy, or a path nothing is mounted at.
        code = {401: "unauthorized", 404: "not_found", 429: "rate_limited", 503: "unavailable"}.get(e.code, f"http_{e.code}")
        return AgentikError(code, f"HTTP {e.code} {e.reason}")
