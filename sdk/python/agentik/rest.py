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
from typing import Any, Dict, List, Mapping, Optional

from pydantic import BaseModel

from . import _compat
from .client import agent_prefix
from .errors import AgentikError

__all__ = ["Rest", "Conversation", "ConversationPage", "Tokens"]


class Tokens(BaseModel):
    """Running token totals of a conversation."""

    input: int = 0
    output: int = 0


class Conversation(BaseModel):
    """A conversation as the REST API shows it."""

    id: str
    title: Optional[str] = None
    temporal: bool = False
    created_at: datetime
    updated_at: datetime
    working: bool = False
    supports_image_input: bool = False
    supports_image_output: bool = False
    tokens: Optional[Tokens] = None


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
        self, conversation_id: str, *, after: Optional[int] = None, limit: Optional[int] = None
    ) -> List[Dict[str, Any]]:
        """One page of the conversation's journal in ascending ``seq``, as the
        API's JSON objects (``type`` is ``user_message``, ``assistant_message``,
        …)."""
        query: Dict[str, str] = {}
        if after is not None:
            query["after"] = str(after)
        if limit is not None:
            query["limit"] = str(limit)
        data = await self._call("GET", "/conversations/" + _seg(conversation_id) + "/messages", query=query)
        out: List[Dict[str, Any]] = data["messages"]
        return out

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
