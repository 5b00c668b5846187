// Package agentik is the vocabulary of the Agentik agent runtime: agents,
// conversations, content, journal messages, events and errors, plus the
// interfaces the core needs from the outside world (Store, Bus, LLM, Tool).
//
// The package holds no I/O of its own. Adapters live in packages named after
// their dependency (sqlite, openai, …), the turn engine lives in engine, and
// cmd/agentik wires them together. Every facade (REST+SSE, AG-UI, A2A,
// WebSocket) speaks to the core only through Agent and Conversation.
//
// Wire form: snake_case names, a "type" discriminator on every polymorphic
// object, RFC 3339 UTC times with milliseconds, optional fields omitted.
package agentik
