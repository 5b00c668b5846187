// Package ws is Agentik's WebSocket chat protocol, whole: the wire messages,
// the server handler that translates an agentik.Agent into them, and the Go
// SDK that speaks them (Dial, Conn).
//
// The protocol is the seed's: one connection is one conversation. The server
// sends STATUS when it is ready; the client sends USER_MESSAGE{text}; the
// answer streams as AGENT_EVENT{subtype:"TEXT_CHUNK",text} deltas and ends
// with AGENT_EVENT{subtype:"END",tokens_used}; failures are ERROR{code,
// details}; GRACEFUL_DISCONNECT precedes a normal close on idle timeout and on
// server shutdown. The seed's field names and meanings are kept exactly;
// everything this package adds is either an extra field (which seed clients
// ignore) or an opt-in extension a client asks for with ?events=.
//
// Guarantees of the server: a frame it cannot use (not JSON, unknown type,
// missing text, binary, oversized) is answered with ERROR and a stable code,
// stores nothing and leaves the connection usable; a USER_MESSAGE is stored
// durably before the server reads the next frame; every turn the connection
// sees start ends with exactly one END; a peer that stops answering pings is
// dropped and its resources released.
package ws
