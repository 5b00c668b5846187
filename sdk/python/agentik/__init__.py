"""Python SDK for Agentik's WebSocket chat protocol.

    import asyncio, agentik

    async def main():
        async with agentik.connect("http://localhost:8080") as client:
            print(await client.ask("Hello!"))

    asyncio.run(main())

The message models (pydantic, a discriminated union on ``type`` and
``subtype``) are in :mod:`agentik.models`; the client in
:mod:`agentik.client`; a small REST helper in :mod:`agentik.rest`.
"""

from .client import DEFAULT_PREFIX, Answer, Client, agent_prefix, connect, ws_url
from .errors import AgentikError, ConnectionClosed, ConnectionLost, Disconnected
from .models import (
    AgentEvent,
    Approval,
    ApprovalRequest,
    BusyPolicy,
    ClientMessage,
    End,
    EndReason,
    Error,
    GracefulDisconnect,
    IncomingMessage,
    Interrupt,
    Message,
    OutgoingMessage,
    ReasoningChunk,
    ServerMessage,
    Status,
    TextChunk,
    ToolCall,
    ToolResult,
    UnknownMessage,
    UserMessage,
    parse_server_message,
)
from .rest import Conversation, ConversationPage, ForkedFrom, Rest, Sent, Tokens

__version__ = "0.1.0"

__all__ = [
    "AgentEvent",
    "AgentikError",
    "Answer",
    "Approval",
    "ApprovalRequest",
    "BusyPolicy",
    "Client",
    "ClientMessage",
    "ConnectionClosed",
    "ConnectionLost",
    "Conversation",
    "ConversationPage",
    "DEFAULT_PREFIX",
    "Disconnected",
    "End",
    "EndReason",
    "ForkedFrom",
    "Error",
    "GracefulDisconnect",
    "IncomingMessage",
    "Interrupt",
    "Message",
    "OutgoingMessage",
    "ReasoningChunk",
    "Rest",
    "Sent",
    "ServerMessage",
    "Status",
    "TextChunk",
    "Tokens",
    "ToolCall",
    "ToolResult",
    "UnknownMessage",
    "UserMessage",
    "agent_prefix",
    "connect",
    "parse_server_message",
    "ws_url",
]
