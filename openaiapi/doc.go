// Package openaiapi is the OpenAI-compatible front door (SPEC §16): every
// agent is offered as a model to the clients that speak OpenAI's API — Chat
// Completions, Responses and Conversations, with the models list. A
// Handler serves one agent (under /agents/{id}/v1) or every agent the
// caller may use, chosen by the request's model (at /v1).
//
// Chat Completions is stateless on the wire; the door keeps the
// conversation anyway and decides what of a resent history is new (see
// index). Responses are turns of conversations: a response id names its
// conversation, its turn and where its events start in the durable log, so
// that any response can be read back and its stream resumed
// (starting_after) for as long as the conversation exists.
//
// Errors are OpenAI's shape, mapped once in package edge.
package openaiapi
